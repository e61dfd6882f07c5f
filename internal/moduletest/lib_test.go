package moduletest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agent-box/agent-box/internal/nixtest"
)

// TestLibCases runs tests/lib/cases.nix against the lib embedded in the
// generated module, one subtest per case.
func TestLibCases(t *testing.T) {
	m := Load(t)
	dir := t.TempDir()
	m.WriteInclude(t, "modules/src/lib/default.nix", dir, "lib.nix")
	expr := fmt.Sprintf(`map (c: {
  inherit (c) name;
  ok = c.expr == c.expected;
  got = builtins.toJSON c.expr;
  want = builtins.toJSON c.expected;
}) (import %q { lib = import ./lib.nix; })
`, filepath.Join(Root(), "tests", "lib", "cases.nix"))
	file := filepath.Join(dir, "run.nix")
	if err := os.WriteFile(file, []byte(expr), 0o644); err != nil {
		t.Fatal(err)
	}
	var results []struct {
		Name      string
		OK        bool
		Got, Want string
	}
	if err := nixtest.EvalJSON(t, file, &results); err != nil {
		t.Fatal(err)
	}
	if len(results) == 0 {
		t.Fatal("no cases")
	}
	for _, r := range results {
		t.Run(r.Name, func(t *testing.T) {
			if !r.OK {
				t.Errorf("got  %s\nwant %s", r.Got, r.Want)
			}
		})
	}
}
