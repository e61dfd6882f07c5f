// Package purelib runs the table cases of the module's option declarations
// and pure lib (tests/lib/cases.nix) against both as embedded in the
// generated module, through the offline evaluation (tests/lib/offline.nix).
package purelib

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/nixtest"
)

// TestCases runs every case of tests/lib/cases.nix, one subtest each: a
// value case compares expr with expected after deep evaluation; a throws
// case evaluates expr alone and wants an error containing its text.
func TestCases(t *testing.T) {
	offline := module.Assemble(t).Offline(t)
	cases := filepath.Join(module.Root(), "tests", "lib", "cases.nix")
	dir := t.TempDir()
	prelude := fmt.Sprintf("let cases = import %q { offline = import %q; }; in\n", cases, offline)
	file := filepath.Join(dir, "run.nix")
	expr := prelude + `map (c: {
  inherit (c) name;
  throws = c.throws or null;
} // (if c ? throws then { } else {
  ok = c.expr == c.expected;
  got = builtins.toJSON c.expr;
  want = builtins.toJSON c.expected;
})) cases
`
	if err := os.WriteFile(file, []byte(expr), 0o644); err != nil {
		t.Fatal(err)
	}
	var results []struct {
		Name      string
		Throws    *string
		OK        bool
		Got, Want string
	}
	if err := nixtest.EvalJSON(t, file, &results); err != nil {
		t.Fatal(err)
	}
	if len(results) == 0 {
		t.Fatal("no cases")
	}
	seen := map[string]bool{}
	for i, r := range results {
		if seen[r.Name] {
			t.Errorf("two cases are named %q", r.Name)
		}
		seen[r.Name] = true
		t.Run(r.Name, func(t *testing.T) {
			if r.Throws == nil {
				if !r.OK {
					t.Errorf("got  %s\nwant %s", r.Got, r.Want)
				}
				return
			}
			one := filepath.Join(t.TempDir(), "throws.nix")
			if err := os.WriteFile(one, []byte(prelude+fmt.Sprintf("(builtins.elemAt cases %d).expr\n", i)), 0o644); err != nil {
				t.Fatal(err)
			}
			stderr, err := nixtest.EvalFails(t, one)
			if err != nil {
				t.Fatalf("want an error containing %q: %v", *r.Throws, err)
			}
			if !strings.Contains(stderr, *r.Throws) {
				t.Errorf("the error lacks %q:\n%s", *r.Throws, stderr)
			}
		})
	}
}
