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
	"strings"

	"github.com/agent-box/agent-box/internal/assemble"
)

const (
	defaultEntry = "modules/src/agent-box.nix"
	defaultOut   = "modules/agent-box.nix"
	regenCommand = "go run ./cmd/assemble-module"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// errStale marks a -check that found the output out of date.
var errStale = errors.New("stale")

func run(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("assemble-module", flag.ContinueOnError)
	fset.SetOutput(stderr)
	check := fset.Bool("check", false, "compare the assembled output with OUT instead of writing it; exit 1 if stale")
	out := fset.String("o", "", `output file ("-" for stdout; default `+defaultOut+` without ENTRY, stdout with ENTRY)`)
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
	opts := assemble.Options{Root: *root, Entry: fset.Arg(0), Command: regenCommand}
	if opts.Entry == "" {
		opts.Entry = defaultEntry
		if opts.Root == "" {
			opts.Root = "."
		}
		if *out == "" {
			*out = defaultOut
		}
	} else {
		if opts.Root == "" {
			opts.Root = dirOf(opts.Entry)
		}
		if *out == "" {
			*out = "-"
		}
	}
	// The banner names the exact command that regenerates this output.
	if len(args) > 0 {
		var rest []string
		for _, a := range args {
			if a != "-check" && a != "--check" {
				rest = append(rest, a)
			}
		}
		if len(rest) > 0 {
			opts.Command = regenCommand + " " + strings.Join(rest, " ")
		}
	}
	if *check && *out == "-" {
		fmt.Fprintln(stderr, "assemble-module: -check needs an output file (-o FILE)")
		return 2
	}
	if err := assembleTo(opts, *out, *check, stdout); err != nil {
		if errors.Is(err, errStale) {
			fmt.Fprintf(stderr, "assemble-module: %s is stale\nhint: run '%s' and commit the result\n", *out, opts.Command)
			return 1
		}
		var list assemble.ErrorList
		if errors.As(err, &list) {
			fmt.Fprintln(stderr, list.Error())
			fmt.Fprintf(stderr, "assemble-module: %d problem(s); nothing written\n", len(list))
			return 2
		}
		fmt.Fprintf(stderr, "assemble-module: %v\n", err)
		return 2
	}
	return 0
}

func assembleTo(opts assemble.Options, out string, check bool, stdout io.Writer) error {
	res, err := assemble.Assemble(opts)
	if err != nil {
		return err
	}
	switch {
	case check:
		explanation, err := assemble.Staleness(out, res.Output)
		if err != nil {
			return err
		}
		if explanation != "" {
			io.WriteString(stdout, explanation)
			return errStale
		}
		return nil
	case out == "-":
		_, err := stdout.Write(res.Output)
		return err
	default:
		return assemble.WriteFile(out, res.Output)
	}
}

func dirOf(p string) string {
	if i := strings.LastIndexAny(p, `/`); i >= 0 {
		if i == 0 {
			return "/"
		}
		return p[:i]
	}
	return "."
}
