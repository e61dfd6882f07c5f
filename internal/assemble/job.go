package assemble

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
)

// The command line's defaults: the repository's entry and output, and the
// command the banner names.
const (
	DefaultEntry = "modules/src/agent-box.nix"
	DefaultOut   = "modules/agent-box.nix"
	RegenCommand = "go run ./cmd/assemble-module"
)

// ErrStale is Run's answer when Check found the output out of date (the
// diff went to stdout).
var ErrStale = errors.New("stale")

// ErrCheckNeedsFile is Run's answer to Check with the output on stdout.
var ErrCheckNeedsFile = errors.New("-check needs an output file (-o FILE)")

// Job is one run as the command line asks for it: Entry, Root and Out as
// given ("" for the defaults), whether to only Check, and the arguments
// that name the output in the banner (the command line without -check).
type Job struct {
	Entry, Root, Out string
	Check            bool
	Args             []string
}

// Resolve fills the defaults: without Entry the repository's entry, root
// "." and output DefaultOut; with Entry its directory as the root and
// stdout ("-") as the output. The banner's command is RegenCommand and
// Args.
func (j Job) Resolve() (Options, string) {
	opts := Options{Root: j.Root, Entry: j.Entry, Command: RegenCommand}
	out := j.Out
	if opts.Entry == "" {
		opts.Entry = DefaultEntry
		if opts.Root == "" {
			opts.Root = "."
		}
		if out == "" {
			out = DefaultOut
		}
	} else {
		if opts.Root == "" {
			opts.Root = filepath.Dir(opts.Entry)
		}
		if out == "" {
			out = "-"
		}
	}
	if len(j.Args) > 0 {
		opts.Command = RegenCommand + " " + strings.Join(j.Args, " ")
	}
	return opts, out
}

// Run assembles j: it writes the output (atomically, or to stdout for
// "-"), or with Check compares it and writes a diff to stdout. Errors:
// ErrStale, ErrCheckNeedsFile, an ErrorList of input problems, or an I/O
// error.
func Run(j Job, stdout io.Writer) error {
	opts, out := j.Resolve()
	if j.Check && out == "-" {
		return ErrCheckNeedsFile
	}
	res, err := Assemble(opts)
	if err != nil {
		return err
	}
	switch {
	case j.Check:
		explanation, err := Staleness(out, res.Output)
		if err != nil {
			return err
		}
		if explanation != "" {
			io.WriteString(stdout, explanation)
			return ErrStale
		}
		return nil
	case out == "-":
		_, err := stdout.Write(res.Output)
		return err
	default:
		return WriteFile(out, res.Output)
	}
}
