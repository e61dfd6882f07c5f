// Command agent-box-demo boots the web golden configuration in QEMU (the VM
// tier's Debian 13 guest) with its web surface at https://box.localhost:8443/
// on this machine's loopback, for someone without NixOS. `make demo` runs it
// until Ctrl-C; `make demo-check` (-check) logs in, types into a terminal
// over a WebSocket and in a real browser, and exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/scenarios"
	"github.com/agent-box/agent-box/internal/vmtest"
)

func main() {
	check := flag.Bool("check", false, "log in, use a terminal (WebSocket client and headless chromium), then stop")
	root := flag.String("root", ".", "the agent-box source tree")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := announce
	if *check {
		ready = func(g *vmtest.Guest) error {
			defer cancel()
			return runChecks(ctx, *root, g)
		}
	}
	if err := vmtest.Demo(ctx, *root, os.Stdout, ready); err != nil {
		fmt.Fprintf(os.Stderr, "agent-box-demo: %v\n", err)
		os.Exit(1)
	}
	if *check {
		fmt.Println("demo-check: ok")
	}
}

func announce(g *vmtest.Guest) error {
	fmt.Printf(`
agent-box is running: %s
  log in as %s
  each agent user has its own origin: https://alice.box.localhost:8443/, https://bob.box.localhost:8443/
  (*.localhost resolves to this machine in Chromium and Firefox; the
  certificate is Caddy's internal CA, so the browser warns once per origin)
  from another machine: ssh -L 8443:127.0.0.1:8443 this-host
  alice's webhook "ci" starts her stopped session inbox and types into it a
  command that reads the delivery (secret from tests/scenarios/demo-hooks):
    printf '%%s\n' %s >/tmp/ci.hook
    python3 tests/scenarios/hookclient.py send %s /tmp/ci.hook '{"hello":"agent"}'
Ctrl-C stops it (the guest's disk is a fresh copy each run).
`, vmtest.DemoURL, logins(g.Demo.Logins), hookSecret(g.Demo.Hooks, "alice-ci.hook"), hookURL("alice", "ci"))
	if g.Accel == "tcg" {
		fmt.Println("The guest is emulated (no KVM here): a login hashes 600,000 PBKDF2 rounds, which")
		fmt.Println("takes seconds instead of the ~0.2 s it takes on real hardware.")
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
func runChecks(ctx context.Context, root string, g *vmtest.Guest) error {
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
		cmd.Env = append(os.Environ(), contract.Env.WebDomain.Name+"=box.localhost:8443")
		out, err := cmd.CombinedOutput()
		fmt.Printf("demo-check: %s\n", strings.Join(args[1:min(3, len(args))], " "))
		if err != nil || !strings.Contains(string(out), want) {
			return fmt.Errorf("%s %s: %v (wanted %q in its output)\n%s", name, strings.Join(args, " "), err, want, out)
		}
		return nil
	}
	if err := run("url https://alice.box.localhost:8443/", "python3", client, "login", jar, ops.Name, ops.Password, "alice"); err != nil {
		return err
	}
	// The answer is computed by alice's shell and new each run (tmux
	// redraws earlier output on attach).
	n := 1000 + rand.IntN(1000000)
	if err := run("found", "python3", client, "term", jar, "wss://alice.box.localhost:8443/term/ws?arg=main",
		"https://alice.box.localhost:8443", fmt.Sprintf("echo DEMO-$((%d*2))-$(id -un)", n), fmt.Sprintf("DEMO-%d-alice", 2*n)); err != nil {
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
	shot := filepath.Join(logs, "browser-terminal.png")
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", filepath.Join(root, "tests/browser/terminal.py"), ops.Name, ops.Password, shot)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the browser test failed (%v); screenshot %s", err, shot)
	}
	return nil
}

// hookURL is the demo's URL of user's webhook name (the contract's route).
func hookURL(user, name string) string {
	return strings.TrimSuffix(vmtest.DemoURL, "/") + strings.TrimSuffix(contract.For(contract.Routes.Hooks.Path, user), "*") + name
}
