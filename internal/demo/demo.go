// Package demo is `make demo` and `make demo-check`: the web golden booted in QEMU, served on this machine's loopback.
//
// It is `make demo` and `make demo-check` (cmd/agent-box-demo):
// the web golden configuration booted in QEMU (the VM tier's Debian 13
// guest) with its web surface at vmtest.DemoURL on this machine's
// loopback, announced for a person, or checked: log in, type into a
// terminal over a WebSocket and in a real browser, deliver a webhook.
package demo

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/doclists"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/scenarios"
	"github.com/agent-box/agent-box/internal/vmtest"
)

// Run boots the demo from the source tree root and, once it answers,
// announces it on w and serves until ctx ends, or with check runs the
// checks and stops.
func Run(ctx context.Context, root string, check bool, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := func(g *vmtest.Guest) error { return announce(w, g) }
	if check {
		ready = func(g *vmtest.Guest) error {
			defer cancel()
			return runChecks(ctx, root, w, g)
		}
	}
	return vmtest.Demo(ctx, root, w, ready)
}

func announce(w io.Writer, g *vmtest.Guest) error {
	fmt.Fprintf(w, `
agent-box is running: %s
  log in as %s
  each agent user has its own origin: %s/, %s/
  and so has each app: %s/ (behind the login),
  %s/ (public); neither program is written yet, so each
  app's unit says what it waits for
  (*.localhost resolves to this machine in Chromium and Firefox; the
  certificate is Caddy's internal CA, so the browser warns once per origin)
  from another machine: ssh -L %d:127.0.0.1:%d this-host
  alice's webhook "ci" starts her stopped session inbox and types into it a
  command that reads the delivery (secret from tests/scenarios/demo-hooks):
    printf '%%s\n' %s >/tmp/ci.hook
    python3 tests/scenarios/hookclient.py send %s /tmp/ci.hook '{"hello":"agent"}'
Ctrl-C stops it (the guest's disk is a fresh copy each run).
`, vmtest.DemoURL, logins(g.Demo.Logins), origin("alice"), origin("bob"), appOrigin("alice", "records"), appOrigin("alice", "site"), vmtest.DemoPort, vmtest.DemoPort,
		hookSecret(g.Demo.Hooks, "alice-ci.hook"), hookURL("alice", "ci"))
	if g.Accel == "tcg" {
		fmt.Fprintln(w, "The guest is emulated (no KVM here): a login hashes 600,000 PBKDF2 rounds, which")
		fmt.Fprintln(w, "takes seconds instead of the ~0.2 s it takes on real hardware.")
	}
	return nil
}

func hookSecret(hs []scenarios.HookSecret, file string) string {
	for _, h := range hs {
		if h.File == file {
			return h.Secret
		}
	}
	return "(missing from tests/scenarios/demo-hooks)"
}

func logins(ls []scenarios.Login) string {
	var s []string
	for _, l := range ls {
		s = append(s, l.Name+" / "+l.Password)
	}
	return strings.Join(s, ", or ")
}

// runChecks is what must work for the demo to be worth running: the
// WebSocket client of the scenarios logs in and gets alice's shell, then a
// real browser does the same through the pages.
func runChecks(ctx context.Context, root string, w io.Writer, g *vmtest.Guest) error {
	var ops *scenarios.Login
	for i := range g.Demo.Logins {
		if g.Demo.Logins[i].Name == "ops" {
			ops = &g.Demo.Logins[i]
		}
	}
	if ops == nil {
		return fmt.Errorf("tests/scenarios/demo-logins has no login ops")
	}
	tmp, err := os.MkdirTemp("", "demo-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	client := filepath.Join(root, "tests/scenarios/webclient.py")
	jar := filepath.Join(tmp, "jar.json")
	run := func(want string, name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = append(os.Environ(), contract.Env.WebDomain.Name+"="+vmtest.DemoDomain)
		out, err := cmd.CombinedOutput()
		fmt.Fprintf(w, "demo-check: %s\n", strings.Join(args[1:min(3, len(args))], " "))
		if err != nil || !strings.Contains(string(out), want) {
			return fmt.Errorf("%s %s: %v (wanted %q in its output)\n%s", name, strings.Join(args, " "), err, want, out)
		}
		return nil
	}
	if err := run("url "+origin("alice")+"/", "python3", client, "login", jar, ops.Name, ops.Password, "alice"); err != nil {
		return err
	}
	// The answer is computed by alice's shell and new each run (tmux
	// redraws earlier output on attach).
	n := 1000 + rand.IntN(1000000)
	if err := run("found", "python3", client, "term", jar, "wss://alice."+vmtest.DemoDomain+contract.Routes.Terminal.Path+"/ws?arg=main",
		origin("alice"), fmt.Sprintf("echo DEMO-$((%d*2))-$(id -un)", n), fmt.Sprintf("DEMO-%d-alice", 2*n)); err != nil {
		return err
	}
	// The webhook the announcement shows, as printed: the demo's secret
	// from the host side.
	secret := filepath.Join(tmp, "ci.hook")
	if err := os.WriteFile(secret, []byte(hookSecret(g.Demo.Hooks, "alice-ci.hook")+"\n"), 0o600); err != nil {
		return err
	}
	if err := run("status 202", "python3", filepath.Join(root, "tests/scenarios/hookclient.py"), "send",
		hookURL("alice", "ci"), secret, fmt.Sprintf(`{"hello":"demo-check %d"}`, n)); err != nil {
		return err
	}
	logs := filepath.Join(vmtest.CacheDir(), "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	shots, err := doclists.ReadShots(filepath.Join(root, "tests/browser/screenshots"))
	if err != nil {
		return err
	}
	shot := filepath.Join(logs, "browser-terminal.png")
	started := time.Now()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", filepath.Join(root, "tests/browser/terminal.py"), ops.Name, ops.Password, shot)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the browser test failed (%v); screenshot %s", err, shot)
	}
	return savedEach(logs, shots, started)
}

// savedEach checks that the browser test saved every screenshot of its
// list in dir since started (the docs' list of them is that list).
func savedEach(dir string, shots []doclists.Shot, started time.Time) error {
	var missing []string
	for _, s := range shots {
		fi, err := os.Stat(filepath.Join(dir, s.File))
		if err != nil || fi.ModTime().Before(started.Add(-time.Second)) || fi.Size() == 0 {
			missing = append(missing, s.File)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the browser test passed without saving %s in %s (tests/browser/screenshots lists them)", strings.Join(missing, ", "), dir)
	}
	return nil
}

// origin is an agent user's origin in the demo.
func origin(user string) string { return "https://" + user + "." + vmtest.DemoDomain }

// appOrigin is the demo's origin of user's app.
func appOrigin(user, app string) string {
	return "https://" + contract.AppLabel(user, app) + "." + vmtest.DemoAppsDomain
}

// hookURL is the demo's URL of user's webhook name (the contract's route).
func hookURL(user, name string) string {
	return "https://" + vmtest.DemoDomain + strings.TrimSuffix(contract.For(contract.Routes.Hooks.Path, user), "*") + name
}
