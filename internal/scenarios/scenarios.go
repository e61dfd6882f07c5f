// Package scenarios reads the interface both VM tiers share: tests/scenarios/phases and requirements.
//
// It reads the interface both VM tiers share:
// tests/scenarios/phases ("PHASE GOLDEN-CONFIG [crash]" per line: a scenario
// script, the golden configuration it boots, and whether the machine is
// powered off hard after it) and tests/scenarios/requirements
// ("DEBIAN-PACKAGE NIXPKGS-ATTRIBUTE" per line: what the scripts need in the
// guest). The offline VM tier (internal/vmtest) and the flake's consistency
// tests (internal/flakecheck) both read them here; nix/scenarios.nix is the
// flake's reader, checked against this one.
package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Dir is the scenario directory, relative to the repository root.
const Dir = "tests/scenarios"

// Phase is one line of the phases file.
type Phase struct {
	Name   string `json:"name"`
	Config string `json:"config"`
	Crash  bool   `json:"crash"`
}

// Requirement is one line of the requirements file.
type Requirement struct {
	Debian, Nixpkgs string
}

// records returns the fields of each non-empty, non-comment line of
// tests/scenarios/<name>, with the line's number.
func records(root, name string) (file string, recs [][]string, lines []int, err error) {
	file = filepath.Join(root, Dir, name)
	data, err := os.ReadFile(file)
	if err != nil {
		return file, nil, nil, fmt.Errorf("scenarios: %w", err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		recs = append(recs, f)
		lines = append(lines, i+1)
	}
	return file, recs, lines, nil
}

// Phases reads tests/scenarios/phases, in file order.
func Phases(root string) ([]Phase, error) {
	file, recs, lines, err := records(root, "phases")
	if err != nil {
		return nil, err
	}
	var phases []Phase
	for i, f := range recs {
		bad := fmt.Errorf("%s:%d: want 'PHASE GOLDEN-CONFIG [crash]', got %q", file, lines[i], strings.Join(f, " "))
		if len(f) < 2 {
			return nil, bad
		}
		ph := Phase{Name: f[0], Config: f[1]}
		for _, flag := range f[2:] {
			switch {
			case flag == "crash" && !ph.Crash:
				ph.Crash = true
			default:
				return nil, bad
			}
		}
		phases = append(phases, ph)
	}
	if len(phases) == 0 {
		return nil, fmt.Errorf("%s lists no phase", file)
	}
	return phases, nil
}

// Tests groups phases into VM tests: the phases whose names share the part
// before the first "." boot one machine (durability.pre, durability.post).
func Tests(phases []Phase) map[string][]Phase {
	tests := map[string][]Phase{}
	for _, p := range phases {
		name, _, _ := strings.Cut(p.Name, ".")
		tests[name] = append(tests[name], p)
	}
	return tests
}

// Requirements reads tests/scenarios/requirements, in file order.
func Requirements(root string) ([]Requirement, error) {
	file, recs, lines, err := records(root, "requirements")
	if err != nil {
		return nil, err
	}
	var reqs []Requirement
	for i, f := range recs {
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want 'DEBIAN-PACKAGE NIXPKGS-ATTRIBUTE', got %q", file, lines[i], strings.Join(f, " "))
		}
		reqs = append(reqs, Requirement{Debian: f[0], Nixpkgs: f[1]})
	}
	return reqs, nil
}

// Login is one line of tests/scenarios/demo-logins.
type Login struct {
	Name, Password, Hash string
}

// DemoLogins reads tests/scenarios/demo-logins: the web golden's logins
// with their (public, test-only) passwords and hashes.
func DemoLogins(root string) ([]Login, error) {
	file, recs, lines, err := records(root, "demo-logins")
	if err != nil {
		return nil, err
	}
	var out []Login
	for i, f := range recs {
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: want 'LOGIN PASSWORD HASH', got %d fields", file, lines[i], len(f))
		}
		out = append(out, Login{Name: f[0], Password: f[1], Hash: f[2]})
	}
	return out, nil
}

// HookSecret is one line of tests/scenarios/demo-hooks.
type HookSecret struct {
	File, Secret string // File is a name under /etc/agent-box-demo/
}

// DemoHooks reads tests/scenarios/demo-hooks: the web golden's webhook
// secrets (public, test-only).
func DemoHooks(root string) ([]HookSecret, error) {
	file, recs, lines, err := records(root, "demo-hooks")
	if err != nil {
		return nil, err
	}
	var out []HookSecret
	for i, f := range recs {
		if len(f) != 2 || strings.Contains(f[0], "/") || len(f[1]) < 16 {
			return nil, fmt.Errorf("%s:%d: want 'FILE SECRET' (a file name, a secret of at least 16 bytes)", file, lines[i])
		}
		out = append(out, HookSecret{File: f[0], Secret: f[1]})
	}
	return out, nil
}

// NotifyURL is one line of tests/scenarios/demo-notify.
type NotifyURL struct {
	Login, URL string
}

// DemoNotify reads tests/scenarios/demo-notify: the web golden's notify
// URLs (public, test-only).
func DemoNotify(root string) ([]NotifyURL, error) {
	file, recs, lines, err := records(root, "demo-notify")
	if err != nil {
		return nil, err
	}
	var out []NotifyURL
	for i, f := range recs {
		if len(f) != 2 || !strings.HasPrefix(f[1], "http") {
			return nil, fmt.Errorf("%s:%d: want 'LOGIN URL'", file, lines[i])
		}
		out = append(out, NotifyURL{Login: f[0], URL: f[1]})
	}
	return out, nil
}

// Demo is the public test credentials of the web golden: its logins, its
// webhook secrets and its notify URLs.
type Demo struct {
	Logins []Login
	Hooks  []HookSecret
	Notify []NotifyURL
}

// ReadDemo reads tests/scenarios/demo-logins, demo-hooks and demo-notify.
func ReadDemo(root string) (Demo, error) {
	l, err := DemoLogins(root)
	if err != nil {
		return Demo{}, err
	}
	h, err := DemoHooks(root)
	if err != nil {
		return Demo{}, err
	}
	n, err := DemoNotify(root)
	return Demo{Logins: l, Hooks: h, Notify: n}, err
}
