package moduletest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/nixtest"
	"github.com/agent-box/agent-box/internal/textdiff"
)

var update = flag.Bool("update", false, "rewrite the golden files under tests/golden and the README option reference")

// ZeroHash is the store hash every golden file uses.
const ZeroHash = "00000000000000000000000000000000"

// Installed is what the module installs for one configuration.
type Installed struct {
	Failures []string          `json:"failures"`
	Files    map[string]string `json:"files"`
	Links    map[string]string `json:"links"`
}

// Render evaluates tests/golden/<cfg>/config.nix through the normalisation
// and renderers INSIDE the generated module (lib and units as embedded), with
// zero-hash store paths.
func Render(t testing.TB, m *Module, cfg string) Installed {
	t.Helper()
	dir := t.TempDir()
	m.WriteInclude(t, "modules/src/lib/default.nix", dir, "lib.nix")
	m.WriteInclude(t, "modules/src/units/", dir, "units.nix")
	golden := filepath.Join(Root(), "tests", "golden")
	expr := fmt.Sprintf(`let
  lib = import ./lib.nix;
  units = import ./units.nix;
  cfg = import %q { pkgs = import %q; };
  storePath = name: "/nix/store/%s-${name}";
  installed = lib.installed cfg units storePath;
in
{
  failures = lib.failures cfg;
  inherit (installed) files links;
}
`, filepath.Join(golden, cfg, "config.nix"), filepath.Join(golden, "stub-pkgs.nix"), ZeroHash)
	file := filepath.Join(dir, "render.nix")
	if err := os.WriteFile(file, []byte(expr), 0o644); err != nil {
		t.Fatal(err)
	}
	var out Installed
	if err := nixtest.EvalJSON(t, file, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Configs lists the golden configurations (directories of tests/golden).
func Configs(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(Root(), "tests", "golden"))
	if err != nil {
		t.Fatal(err)
	}
	var cfgs []string
	for _, e := range entries {
		if e.IsDir() {
			cfgs = append(cfgs, e.Name())
		}
	}
	if len(cfgs) < 3 {
		t.Fatalf("want at least 3 golden configurations, found %v", cfgs)
	}
	return cfgs
}

func linksManifest(links map[string]string) string {
	var lines []string
	for name, target := range links {
		lines = append(lines, name+" -> "+target)
	}
	sort.Strings(lines)
	return "# name -> target of every symlink the module installs (relative to /)\n" + strings.Join(lines, "\n") + "\n"
}

func writeGolden(t *testing.T, cfg string, got Installed) {
	t.Helper()
	base := filepath.Join(Root(), "tests", "golden", cfg)
	if err := os.RemoveAll(filepath.Join(base, "files")); err != nil {
		t.Fatal(err)
	}
	for name, data := range got.Files {
		p := filepath.Join(base, "files", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "links"), []byte(linksManifest(got.Links)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("updated tests/golden/%s (%d files, %d links): review the diff", cfg, len(got.Files), len(got.Links))
}

// TestGoldenFixtures renders every golden configuration through the module's
// embedded lib and compares with tests/golden/<cfg>/ byte for byte: missing,
// extra and changed files and links all fail. Regenerate with
// `go test ./internal/moduletest -run TestGoldenFixtures -update` and review
// the diff; systemd-analyze (TestGoldenUnits*) and the VM tier check the
// same bytes independently.
func TestGoldenFixtures(t *testing.T) {
	m := Load(t)
	for _, cfg := range Configs(t) {
		t.Run(cfg, func(t *testing.T) {
			got := Render(t, m, cfg)
			if len(got.Failures) > 0 {
				t.Fatalf("the configuration fails its assertions:\n%s", strings.Join(got.Failures, "\n"))
			}
			if *update {
				writeGolden(t, cfg, got)
				return
			}
			files, links := ReadGolden(t, cfg)
			for name, want := range files {
				g, ok := got.Files[name]
				if !ok {
					t.Errorf("golden file %s is no longer installed", name)
					continue
				}
				if d := textdiff.Explain("golden/"+name, "rendered", []byte(want), []byte(g)); d != "" {
					t.Errorf("%s differs (-golden +rendered):\n%s", name, d)
				}
			}
			for name := range got.Files {
				if _, ok := files[name]; !ok {
					t.Errorf("rendered file %s is not in the golden fixture", name)
				}
			}
			if d := textdiff.Explain("golden links", "rendered", []byte(linksManifest(links)), []byte(linksManifest(got.Links))); d != "" {
				t.Errorf("links differ:\n%s", d)
			}
			if t.Failed() {
				t.Log("hint: go test ./internal/moduletest -run TestGoldenFixtures -update, then review the diff")
			}
		})
	}
}
