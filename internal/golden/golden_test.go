package golden

import (
	"flag"
	"fmt"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/nixtest"
	"github.com/agent-box/agent-box/internal/textdiff"
)

var update = flag.Bool("update", false, "rewrite tests/golden/<cfg>/files and links from the offline rendering")

// rendered is what the offline evaluation says the module installs for one
// golden configuration, and the assertions that configuration fails.
type rendered struct {
	Failures []string          `json:"failures"`
	Files    map[string]string `json:"files"`
	Links    map[string]string `json:"links"`
}

// render evaluates tests/golden/<cfg>/config.nix through the module's own
// option declarations, lib and units as embedded in the generated module
// (tests/lib/offline.nix), with zero-hash store paths.
func render(t *testing.T, offline, cfg string) rendered {
	t.Helper()
	expr := fmt.Sprintf(`let
  o = import %q;
  config = import %q { inherit (o) pkgs; };
  installed = o.installed config;
in
{
  failures = o.failures config;
  inherit (installed) files links;
}
`, offline, filepath.Join(module.Root(), Dir, cfg, "config.nix"))
	file := filepath.Join(t.TempDir(), "render.nix")
	if err := os.WriteFile(file, []byte(expr), 0o644); err != nil {
		t.Fatal(err)
	}
	var out rendered
	if err := nixtest.EvalJSON(t, file, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func configs(t *testing.T) []string {
	t.Helper()
	cfgs, err := Configs(module.Root())
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) < 3 {
		t.Fatalf("want at least 3 golden configurations, found %v", cfgs)
	}
	return cfgs
}

func read(t *testing.T, cfg string) Fixture {
	t.Helper()
	fx, err := Read(module.Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fx
}

// TestFixturesAreWhatTheModuleRenders renders every golden configuration
// through the module's embedded declarations and lib and compares the
// result with tests/golden/<cfg>/ byte for byte: missing, extra and changed
// files and links all fail. Regenerate with
// `go test ./internal/golden -run TestFixtures -update -v` and review the
// diff; systemd-analyze (TestUnits*), the VM tier and the flake's `golden`
// check (the real NixOS build) check the same bytes independently.
func TestFixturesAreWhatTheModuleRenders(t *testing.T) {
	offline := module.Assemble(t).Offline(t)
	for _, cfg := range configs(t) {
		t.Run(cfg, func(t *testing.T) {
			got := render(t, offline, cfg)
			if len(got.Failures) > 0 {
				t.Fatalf("the configuration fails its assertions:\n%s", strings.Join(got.Failures, "\n"))
			}
			if *update {
				if err := Write(module.Root(), cfg, Fixture{Files: got.Files, Links: got.Links}); err != nil {
					t.Fatal(err)
				}
				t.Logf("updated %s/%s (%d files, %d links): review the diff", Dir, cfg, len(got.Files), len(got.Links))
				return
			}
			fx := read(t, cfg)
			for name, want := range fx.Files {
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
				if _, ok := fx.Files[name]; !ok {
					t.Errorf("rendered file %s is not in the golden fixture", name)
				}
			}
			if d := textdiff.Explain("golden links", "rendered", []byte(LinksManifest(fx.Links)), []byte(LinksManifest(got.Links))); d != "" {
				t.Errorf("links differ:\n%s", d)
			}
			if t.Failed() {
				t.Log("hint: go test ./internal/golden -run TestFixtures -update -v, then review the diff")
			}
		})
	}
}

// TestLoginFilesCarryTheirInstancesValues checks each golden login file
// (/etc/agent-box/users/<user>.env) against its instance drop-in, two files
// the renderer writes separately: a plain login must see the same agents
// table, default agent, seed and tmux as the unit.
func TestLoginFilesCarryTheirInstancesValues(t *testing.T) {
	envLine := regexp.MustCompile(`(?m)^Environment="(AGENT_BOX_[A-Z_]+)=([^"]*)"$`)
	for _, cfg := range configs(t) {
		t.Run(cfg, func(t *testing.T) {
			fx := read(t, cfg)
			n := 0
			for name, data := range fx.Files {
				user, ok := strings.CutPrefix(name, "etc/agent-box/users/")
				if !ok {
					continue
				}
				user = strings.TrimSuffix(user, ".env")
				n++
				dropin, ok := fx.Files["etc/systemd/system/agent-box@"+user+".service.d/overrides.conf"]
				if !ok {
					t.Errorf("%s has no instance drop-in", name)
					continue
				}
				want := map[string]string{}
				for _, m := range envLine.FindAllStringSubmatch(dropin, -1) {
					want[m[1]] = m[2]
				}
				// the supervisor's own settings: no command of a login reads them
				for _, v := range []contract.Var{contract.Env.SilenceAfter, contract.Env.ResumePrompt, contract.Env.LimitFirstWait,
					contract.Env.LimitGrowth, contract.Env.LimitMaxWait, contract.Env.LimitPerMinute} {
					delete(want, v.Name)
				}
				got := map[string]string{}
				for _, line := range strings.Split(data, "\n") {
					if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
						got[k] = v
					}
				}
				if d := cmp.Diff(want, got); d != "" || len(got) != 4 {
					t.Errorf("%s differs from the drop-in's AGENT_BOX_* values (-drop-in +login):\n%s", name, d)
				}
			}
			if n == 0 {
				t.Error("no login file")
			}
		})
	}
}
