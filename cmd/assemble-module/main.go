// Command assemble-module builds the single-file NixOS module from its split
// sources.
//
// Usage:
//
//	assemble-module [-check] [-o OUT] [-root DIR] [ENTRY]
//
// Without ENTRY it assembles modules/src/agent-box.nix with the current
// directory (the repository root) as the source root into
// modules/agent-box.nix. With ENTRY the root defaults to ENTRY's directory
// and the output to stdout ("-o -").
//
// -check assembles in memory and compares with OUT instead of writing it.
//
// Exit status: 0 success (or OUT is current); 1 -check found OUT stale (a
// diff is printed on stdout); 2 usage or input error (nothing is written).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/agent-box/agent-box/internal/assemble"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("assemble-module", flag.ContinueOnError)
	fset.SetOutput(stderr)
	check := fset.Bool("check", false, "compare the assembled output with OUT instead of writing it; exit 1 if stale")
	out := fset.String("o", "", `output file ("-" for stdout; default `+assemble.DefaultOut+` without ENTRY, stdout with ENTRY)`)
	root := fset.String("root", "", "source root; includes may not leave it (default: . without ENTRY, ENTRY's directory with it)")
	fset.Usage = func() {
		fmt.Fprintln(stderr, "usage: assemble-module [-check] [-o OUT] [-root DIR] [ENTRY]")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fset.NArg() > 1 {
		fmt.Fprintln(stderr, "assemble-module: at most one ENTRY")
		fset.Usage()
		return 2
	}
	// The banner names the exact command that regenerates this output.
	var banner []string
	for _, a := range args {
		if a != "-check" && a != "--check" {
			banner = append(banner, a)
		}
	}
	job := assemble.Job{Entry: fset.Arg(0), Root: *root, Out: *out, Check: *check, Args: banner}
	var list assemble.ErrorList
	switch err := assemble.Run(job, stdout); {
	case err == nil:
		return 0
	case errors.Is(err, assemble.ErrStale):
		opts, out := job.Resolve()
		fmt.Fprintf(stderr, "assemble-module: %s is stale\nhint: run '%s' and commit the result\n", out, opts.Command)
		return 1
	case errors.As(err, &list):
		fmt.Fprintln(stderr, list.Error())
		fmt.Fprintf(stderr, "assemble-module: %d problem(s); nothing written\n", len(list))
		return 2
	default:
		fmt.Fprintf(stderr, "assemble-module: %v\n", err)
		return 2
	}
}
