package vmtest

import (
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/golden"
	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/scenarios"
)

func webFixture(t *testing.T) (golden.Fixture, scenarios.Demo) {
	t.Helper()
	fx, err := golden.Read(module.Root(), "web")
	if err != nil {
		t.Fatal(err)
	}
	demo, err := scenarios.ReadDemo(module.Root())
	if err != nil {
		t.Fatal(err)
	}
	return fx, demo
}

// guestRoot is an empty guest root but for the image's /etc/group and
// nft (Debian's, in /usr/sbin).
func guestRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := writeFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(root, "usr/sbin/nft"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// The guest of a web golden gets the host side NixOS would add: the
// Caddyfile importing exactly the golden's two store files, caddy enabled
// with its admin directory, and each login's hash at the path its
// LoadCredential= names, root-only; the status and notify groups.
func TestInstallWebLaysTheHostSide(t *testing.T) {
	fx, demo := webFixture(t)
	root := guestRoot(t)
	if err := installWeb(root, fx, demo); err != nil {
		t.Fatal(err)
	}
	cf, err := os.ReadFile(filepath.Join(root, "etc/caddy/Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\timport /nix/store/00000000000000000000000000000000-agent-box-caddy-global.caddy\n",
		"\nimport /nix/store/00000000000000000000000000000000-agent-box-caddy-sites.caddy\n",
	} {
		if !strings.Contains(string(cf), want) {
			t.Errorf("Caddyfile lacks %q:\n%s", want, cf)
		}
	}
	dropin, err := os.ReadFile(filepath.Join(root, "etc/systemd/system/caddy.service.d/agent-box.conf"))
	if err != nil || !strings.Contains(string(dropin), "\nRuntimeDirectoryMode=0700\n") {
		t.Errorf("caddy drop-in: %v\n%s", err, dropin)
	}
	if target, err := os.Readlink(filepath.Join(root, "etc/systemd/system/multi-user.target.wants/caddy.service")); err != nil || target != "/lib/systemd/system/caddy.service" {
		t.Errorf("caddy.service enabled as %q, %v", target, err)
	}
	for _, h := range demo.Hooks {
		p := filepath.Join(root, "etc/agent-box-demo", h.File)
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o400 {
			t.Errorf("hook secret %s: %v, mode %v; want 0400", h.File, err, st)
			continue
		}
		if data, _ := os.ReadFile(p); string(data) != h.Secret+"\n" {
			t.Errorf("%s holds %q, want the demo secret", p, data)
		}
	}
	nft := nixpkgsExecRe.FindStringSubmatch(fx.Files["etc/systemd/system/"+contract.Units.Clients+".d/overrides.conf"])
	if nft == nil {
		t.Errorf("the clients unit's drop-in runs no program of a store path")
	} else if got, err := os.Readlink(filepath.Join(root, nft[1], "bin", nft[2])); err != nil || got != "/usr/sbin/nft" {
		t.Errorf("%s/bin/%s: %q, %v; want a link to the guest's /usr/sbin/nft", nft[1], nft[2], got, err)
	}
	group, _ := os.ReadFile(filepath.Join(root, "etc/group"))
	for _, g := range []string{*contract.Sockets.NotifyFeed.Group, *contract.Sockets.AuthStatus.Group} {
		if !strings.Contains(string(group), "\n"+g+":x:") {
			t.Errorf("no group %s in /etc/group:\n%s", g, group)
		}
	}
	if len(demo.Notify) == 0 {
		t.Fatal("tests/scenarios/demo-notify has no URL")
	}
	for _, n := range demo.Notify {
		p := filepath.Join(root, "etc/agent-box-demo", n.Login+".notify")
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o400 {
			t.Errorf("notify URL of %s: %v, mode %v; want 0400", n.Login, err, st)
			continue
		}
		if data, _ := os.ReadFile(p); string(data) != n.URL+"\n" {
			t.Errorf("%s holds %q, want the demo URL", p, data)
		}
	}
	for _, l := range demo.Logins {
		p := filepath.Join(root, "etc/agent-box-demo", l.Name+".hash")
		st, err := os.Stat(p)
		if err != nil {
			t.Errorf("login %s: %v", l.Name, err)
			continue
		}
		if st.Mode().Perm() != 0o400 {
			t.Errorf("%s: mode %o, want 0400", p, st.Mode().Perm())
		}
		if data, _ := os.ReadFile(p); string(data) != l.Hash+"\n" {
			t.Errorf("%s holds %q, want the demo hash", p, data)
		}
	}
}

// A golden login without a demo password is an error naming it: the boot
// could not log in, and a phase must not pass by skipping it.
func TestInstallWebRefusesALoginWithoutADemoPassword(t *testing.T) {
	fx, demo := webFixture(t)
	var only []scenarios.Login
	for _, l := range demo.Logins {
		if l.Name != "ops" {
			only = append(only, l)
		}
	}
	err := installWeb(guestRoot(t), fx, scenarios.Demo{Logins: only, Hooks: demo.Hooks, Notify: demo.Notify})
	if err == nil || !strings.Contains(err.Error(), "logins ops ") {
		t.Fatalf("got %v, want an error naming login ops", err)
	}
}

// Likewise a login with notifications whose URL the demo data lacks.
func TestInstallWebRefusesANotifyLoginWithoutADemoURL(t *testing.T) {
	fx, demo := webFixture(t)
	demo.Notify = nil
	err := installWeb(guestRoot(t), fx, demo)
	if err == nil || !strings.Contains(err.Error(), "login ops has a notify URL") {
		t.Fatalf("got %v, want an error naming login ops", err)
	}
}

// Likewise a webhook whose secret the demo data lacks.
func TestInstallWebRefusesAHookWithoutADemoSecret(t *testing.T) {
	fx, demo := webFixture(t)
	err := installWeb(guestRoot(t), fx, scenarios.Demo{Logins: demo.Logins, Hooks: demo.Hooks[1:]})
	if err == nil || !strings.Contains(err.Error(), "/etc/agent-box-demo/"+demo.Hooks[0].File) {
		t.Fatalf("got %v, want an error naming %s", err, demo.Hooks[0].File)
	}
}

// Goldens without the web surface get nothing of it.
func TestInstallWebLeavesOtherGoldensAlone(t *testing.T) {
	fx, err := golden.Read(module.Root(), "two-users")
	if err != nil {
		t.Fatal(err)
	}
	root := guestRoot(t)
	if err := installWeb(root, fx, scenarios.Demo{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/caddy")); !os.IsNotExist(err) {
		t.Errorf("etc/caddy exists for two-users (%v)", err)
	}
}

// With the module's jail in the golden, fail2ban runs with what nixpkgs'
// services.fail2ban puts in jail.local, and Debian's own defaults (an sshd
// jail, its banaction) are gone, so the guest loads what a NixOS host
// loads.
func TestInstallWebEnablesFail2banAsNixOSDoes(t *testing.T) {
	fx, demo := webFixture(t)
	root := guestRoot(t)
	debian := filepath.Join(root, "etc/fail2ban/jail.d/defaults-debian.conf")
	os.MkdirAll(filepath.Dir(debian), 0o755)
	os.WriteFile(debian, []byte("[sshd]\nenabled = true\n"), 0o644)
	if err := installWeb(root, fx, demo); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(root, "etc/systemd/system/multi-user.target.wants/fail2ban.service")); err != nil || target != "/lib/systemd/system/fail2ban.service" {
		t.Errorf("fail2ban.service enabled as %q, %v", target, err)
	}
	local, err := os.ReadFile(filepath.Join(root, "etc/fail2ban/jail.local"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n[DEFAULT]\n", "\nbackend = systemd\n", "\nignoreip = 127.0.0.1/8 ::1\n", "\nbanaction = nftables-multiport\n"} {
		if !strings.Contains(string(local), want) {
			t.Errorf("jail.local lacks %q:\n%s", want, local)
		}
	}
	if _, err := os.Stat(debian); !os.IsNotExist(err) {
		t.Errorf("Debian's defaults-debian.conf is still there (%v)", err)
	}
}

// A program a drop-in runs that the guest image lacks is an error naming
// it, not a unit that fails at boot.
func TestInstallWebRefusesAProgramTheGuestLacks(t *testing.T) {
	fx, demo := webFixture(t)
	root := guestRoot(t)
	if err := os.Remove(filepath.Join(root, "usr/sbin/nft")); err != nil {
		t.Fatal(err)
	}
	err := installWeb(root, fx, demo)
	if err == nil || !strings.Contains(err.Error(), "the guest image has no nft") {
		t.Fatalf("got %v, want an error naming nft", err)
	}
}
