package golden

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// newerDirectives are the settings the golden units use that need a newer
// systemd than Debian 12's 252, with the version that knows them. The
// host's systemd-analyze would warn about them and ignore them, so
// unitRoot leaves them out there (and logs it); the VM tier's Debian 13
// guest (systemd 257) verifies and scores the units with them
// (tests/scenarios/apps.sh). NixOS has systemd 257 or newer.
var newerDirectives = map[string]int{"PrivatePIDs": 257}

// hostSystemd is the host's systemd version (systemd-analyze --version).
func hostSystemd(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("systemd-analyze", "--version").Output()
	if err != nil {
		t.Fatalf("systemd-analyze --version: %v", err)
	}
	var v int
	if _, err := fmt.Sscanf(string(out), "systemd %d", &v); err != nil {
		t.Fatalf("systemd-analyze --version: %q: %v", out, err)
	}
	return v
}

// withoutNewer drops the lines of data that set a directive the host's
// systemd (version v) does not know, and says which.
func withoutNewer(t *testing.T, name, data string, v int) string {
	lines := strings.SplitAfter(data, "\n")
	kept := lines[:0]
	for _, l := range lines {
		key, _, ok := strings.Cut(l, "=")
		if need, newer := newerDirectives[key]; ok && newer && v < need {
			t.Logf("%s: left out for the host's systemd %d (needs %d; checked in the VM tier's guest): %s", name, v, need, strings.TrimSpace(l))
			continue
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, "")
}

// unitRoot builds a root directory for systemd-analyze from a golden
// configuration: the host's unit set, the golden files and links unchanged,
// and executable stand-ins at the zero-hash program paths the drop-ins name.
// instances are the units the golden has a drop-in for (agent instances,
// the web surface's services and sockets).
func unitRoot(t *testing.T, cfg string) (root string, instances []string) {
	t.Helper()
	requireTool(t, "systemd-analyze")
	root = t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "usr/lib/systemd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", "/usr/lib/systemd/system", filepath.Join(root, "usr/lib/systemd/")).CombinedOutput(); err != nil {
		t.Fatalf("copying the host unit set (systemd-analyze verify needs it): %v\n%s", err, out)
	}
	fx := read(t, cfg)
	version := hostSystemd(t)
	programs := map[string]bool{}
	execStart := regexp.MustCompile(`(?m)^ExecStart=(/nix/store/\S+)`)
	for name, data := range fx.Files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(withoutNewer(t, name, data, version)), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, m := range execStart.FindAllStringSubmatch(data, -1) {
			programs[m[1]] = true
		}
		if m := regexp.MustCompile(`^etc/systemd/system/(agent-box[^/]*\.(service|socket))\.d/`).FindStringSubmatch(name); m != nil {
			instances = append(instances, m[1])
		}
	}
	for name, target := range fx.Links {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	for prog := range programs {
		p := filepath.Join(root, prog)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(instances)
	if len(instances) == 0 {
		t.Fatalf("golden %s has no instance drop-ins", cfg)
	}
	return root, instances
}

func requireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is required: %v\nhint: run 'make deps'", name, err)
	}
	return p
}

// TestUnitsPassSystemdAnalyzeVerify runs `systemd-analyze verify` on every golden
// instance: the template, its drop-in and the enablement must load with no
// message at all (verify exits 0 even on unknown keys, so any output fails).
func TestUnitsPassSystemdAnalyzeVerify(t *testing.T) {
	for _, cfg := range configs(t) {
		t.Run(cfg, func(t *testing.T) {
			root, instances := unitRoot(t, cfg)
			for _, unit := range instances {
				cmd := exec.Command("systemd-analyze", "verify", "--root="+root, unit)
				out, err := cmd.CombinedOutput()
				if err != nil || len(bytes.TrimSpace(out)) > 0 {
					t.Errorf("systemd-analyze verify %s: %v\n%s", unit, err, out)
				}
			}
		})
	}
}

// ceiling is the highest exposure (systemd-analyze's printed level) a unit
// may have: the sessions units, where the agents run, keep the measured 2.4
// of the unit they came from (they cannot use MemoryDenyWriteExecute,
// RestrictNamespaces or a private network: agents need JIT, sandboxes and
// the network); every other unit, the supervisor included, stays at or
// under 2.0.
func ceiling(unit string) (threshold string, level float64) {
	if strings.HasPrefix(unit, "agent-box-sessions@") {
		return "24", 2.4
	}
	return "20", 2.0
}

// TestUnitsExposureIsUnderTheirCeilings scores every golden service with
// `systemd-analyze security --offline=true --threshold=N` (0-100 scale).
func TestUnitsExposureIsUnderTheirCeilings(t *testing.T) {
	version, err := exec.Command("systemd-analyze", "--version").Output()
	if err != nil {
		t.Fatalf("systemd-analyze --version: %v", err)
	}
	v, _, _ := strings.Cut(string(version), "\n")
	score := regexp.MustCompile(`Overall exposure level for \S+: (\d+\.\d+)`)
	for _, cfg := range configs(t) {
		t.Run(cfg, func(t *testing.T) {
			root, instances := unitRoot(t, cfg)
			for _, unit := range instances {
				if !strings.HasSuffix(unit, ".service") {
					continue // security analyses services only
				}
				threshold, level := ceiling(unit)
				out, err := exec.Command("systemd-analyze", "security", "--offline=true", "--root="+root, "--threshold="+threshold, unit).CombinedOutput()
				m := score.FindSubmatch(out)
				if m == nil {
					t.Errorf("no score for %s: %v\n%s", unit, err, out)
					continue
				}
				t.Logf("%s %s: exposure %s (%s)", cfg, unit, m[1], v)
				if err != nil {
					t.Errorf("%s exposure %s is above %.1f: %v\n%s", unit, m[1], level, err, out)
				}
			}
		})
	}
}
