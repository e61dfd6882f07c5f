package vmtest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/agent-box/agent-box/internal/caddycheck"
	"github.com/agent-box/agent-box/internal/fail2bancheck"
	"github.com/agent-box/agent-box/internal/golden"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/scenarios"
)

// What a NixOS host adds for the web surface besides the golden files, and
// how the guest gets the same: services.caddy's Caddyfile importing the
// module's two store files, the glue's caddy.service settings, and the
// operator's hash and webhook secret files (here the public demo logins
// and hook secrets).
const (
	caddyGlobalSuffix = "-agent-box-caddy-global.caddy"
	caddySitesSuffix  = "-agent-box-caddy-sites.caddy"
	// The glue's systemd.services.caddy.serviceConfig, and nixpkgs'
	// ExecStart (Debian's adds --environ, which logs the environment).
	caddyDropin = `# What the agent-box module and nixpkgs' services.caddy set (the VM tier).
[Service]
RuntimeDirectory=caddy
RuntimeDirectoryMode=0700
ExecStart=
ExecStart=/usr/bin/caddy run --config /etc/caddy/Caddyfile --adapter caddyfile
`
)

// nixosJailDefaults is the [DEFAULT] section nixpkgs' services.fail2ban
// writes into /etc/fail2ban/jail.local (with nftables as the firewall and
// its default ignoreIP, maxretry and bantime); the module's jail in
// jail.d/agent-box-auth.local is read after it.
const nixosJailDefaults = `# What nixpkgs' services.fail2ban sets for every jail (the VM tier).
[DEFAULT]
backend = systemd
banaction = nftables-multiport
banaction_allports = nftables-allports
bantime = 10m
ignoreip = 127.0.0.1/8 ::1
maxretry = 3
`

var (
	credRe       = regexp.MustCompile(`(?m)^LoadCredential=login-([^:]+):(\S+)$`)
	hookCredRe   = regexp.MustCompile(`(?m)^LoadCredential=hook-([^:]+):(\S+)$`)
	notifyCredRe = regexp.MustCompile(`(?m)^LoadCredential=` + contract.Creds.NotifyPrefix + `([^:]+):(\S+)$`)
)

// The web surface's groups' ids in the guest (NixOS allocates them; system
// groups' ids, free in the Debian image): the status socket's and the
// notify feed socket's.
const (
	statusGID = 978
	notifyGID = 979
)

// addGroup adds a group to the guest's /etc/group, as the glue's
// users.groups does; its id must be free.
func addGroup(root, name string, gid int) error {
	group := filepath.Join(root, "etc/group")
	data, err := os.ReadFile(group)
	if err != nil {
		return err
	}
	if strings.Contains(string(data), fmt.Sprintf(":%d:", gid)) {
		return fmt.Errorf("gid %d is taken in the guest image", gid)
	}
	return writeFile(group, append(data, fmt.Sprintf("%s:x:%d:\n", name, gid)...), 0o644)
}

// installWeb lays the web surface's host side into the guest when the
// golden configuration has one; it does nothing otherwise. Every login the
// golden's auth service loads must be a demo login, or the boot could not
// log in: that is an error, not a skip. So is a webhook whose secret file
// tests/scenarios/demo-hooks does not hold.
func installWeb(root string, fx golden.Fixture, demo scenarios.Demo) error {
	var global, sites string
	for rel := range fx.Files {
		switch {
		case strings.HasSuffix(rel, caddyGlobalSuffix):
			global = "/" + rel
		case strings.HasSuffix(rel, caddySitesSuffix):
			sites = "/" + rel
		}
	}
	if global == "" && sites == "" {
		return nil
	}
	if global == "" || sites == "" {
		return fmt.Errorf("web golden has only one of the Caddy files (global %q, sites %q)", global, sites)
	}
	if err := writeFile(filepath.Join(root, "etc/caddy/Caddyfile"), []byte(caddycheck.NixOSCaddyfile(global, sites)), 0o644); err != nil {
		return fmt.Errorf("writing the Caddyfile: %w", err)
	}
	if err := writeFile(filepath.Join(root, "etc/systemd/system/caddy.service.d/agent-box.conf"), []byte(caddyDropin), 0o644); err != nil {
		return fmt.Errorf("writing caddy.service's drop-in: %w", err)
	}
	if err := enable(root, "multi-user.target", "/lib/systemd/system/caddy.service"); err != nil {
		return err
	}
	if err := addGroup(root, *contract.Sockets.AuthStatus.Group, statusGID); err != nil {
		return fmt.Errorf("adding the status socket's group: %w", err)
	}
	if err := installNixpkgsPrograms(root, fx); err != nil {
		return err
	}
	if err := installFail2ban(root, fx); err != nil {
		return err
	}
	if err := installHookSecrets(root, fx, demo.Hooks); err != nil {
		return err
	}
	if err := installNotify(root, fx, demo.Notify); err != nil {
		return err
	}
	hashes := map[string]string{}
	for _, l := range demo.Logins {
		hashes[l.Name] = l.Hash
	}
	auth := fx.Files["etc/systemd/system/agent-box-auth.service.d/overrides.conf"]
	creds := credRe.FindAllStringSubmatch(auth, -1)
	if len(creds) == 0 {
		return fmt.Errorf("the web golden's auth drop-in loads no login credential")
	}
	var missing []string
	for _, m := range creds {
		h, ok := hashes[m[1]]
		if !ok {
			missing = append(missing, m[1])
			continue
		}
		// root-only, as docs/operating.md tells the operator
		if err := writeFile(filepath.Join(root, m[2]), []byte(h+"\n"), 0o400); err != nil {
			return fmt.Errorf("writing the hash of login %s: %w", m[1], err)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("logins %s of the web golden are not in tests/scenarios/demo-logins", strings.Join(missing, ", "))
	}
	return nil
}

// nixpkgsExecRe matches a program of a nixpkgs package that a unit or
// drop-in runs by its store path (nft, in the clients unit's drop-in).
var nixpkgsExecRe = regexp.MustCompile(`(?m)^Exec(?:Start|Reload|Stop)=(/nix/store/[0-9a-z]{32}-[^/\s]+)/bin/([^/\s]+)`)

// installNixpkgsPrograms gives each such program its store path in the
// guest, linked to the guest's own (Debian's package of it, in /usr/sbin
// or /usr/bin). The module's own store paths (agent-box-*) are Install's.
func installNixpkgsPrograms(root string, fx golden.Fixture) error {
	for rel, data := range fx.Files {
		if !strings.HasPrefix(rel, "etc/systemd/system/") {
			continue
		}
		for _, m := range nixpkgsExecRe.FindAllStringSubmatch(data, -1) {
			dir, prog := m[1], m[2]
			link := filepath.Join(root, dir, "bin", prog)
			if strings.HasPrefix(filepath.Base(dir)[33:], "agent-box") {
				continue // the module's own store paths (Install)
			}
			if _, err := os.Lstat(link); err == nil {
				continue
			}
			target := ""
			for _, d := range []string{"usr/sbin", "usr/bin"} {
				if _, err := os.Stat(filepath.Join(root, d, prog)); err == nil {
					target = "/" + d + "/" + prog
					break
				}
			}
			if target == "" {
				return fmt.Errorf("%s runs %s/bin/%s: the guest image has no %s in /usr/sbin or /usr/bin", rel, dir, prog, prog)
			}
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(target, link); err != nil {
				return err
			}
		}
	}
	return nil
}

// installFail2ban enables fail2ban with nixpkgs' defaults when the golden
// installs the module's jail (the jail and filter are golden files, already
// in place). Debian's jail.d/defaults-debian.conf goes: a NixOS host has no
// such file, and its sshd jail is nixpkgs' only with openssh on.
func installFail2ban(root string, fx golden.Fixture) error {
	if _, ok := fx.Files[fail2bancheck.JailPath]; !ok {
		return nil
	}
	if err := writeFile(filepath.Join(root, "etc/fail2ban/jail.local"), []byte(nixosJailDefaults), 0o644); err != nil {
		return fmt.Errorf("writing fail2ban's jail.local: %w", err)
	}
	if err := os.Remove(filepath.Join(root, "etc/fail2ban/jail.d/defaults-debian.conf")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return enable(root, "multi-user.target", "/lib/systemd/system/fail2ban.service")
}

// installNotify does what the glue does for notifications when the golden
// has them: the notify group, and, root-only, each login's
// URL file from tests/scenarios/demo-notify.
func installNotify(root string, fx golden.Fixture, urls []scenarios.NotifyURL) error {
	dropin, ok := fx.Files["etc/systemd/system/"+contract.Units.Notify+".d/overrides.conf"]
	if !ok {
		return nil
	}
	if err := addGroup(root, *contract.Sockets.NotifyFeed.Group, notifyGID); err != nil {
		return fmt.Errorf("adding the notify feed socket's group: %w", err)
	}
	byLogin := map[string]string{}
	for _, u := range urls {
		byLogin[u.Login] = u.URL
	}
	creds := notifyCredRe.FindAllStringSubmatch(dropin, -1)
	if len(creds) == 0 {
		return fmt.Errorf("the web golden's notify drop-in loads no URL")
	}
	for _, m := range creds {
		u, ok := byLogin[m[1]]
		if !ok {
			return fmt.Errorf("login %s has a notify URL in the web golden, but none in tests/scenarios/demo-notify", m[1])
		}
		if err := writeFile(filepath.Join(root, m[2]), []byte(u+"\n"), 0o400); err != nil {
			return fmt.Errorf("writing the notify URL of login %s: %w", m[1], err)
		}
	}
	return nil
}

// installHookSecrets writes, root-only, the secret of every webhook
// credential a web daemon's drop-in loads.
func installHookSecrets(root string, fx golden.Fixture, hooks []scenarios.HookSecret) error {
	secrets := map[string]string{}
	for _, h := range hooks {
		secrets["/etc/agent-box-demo/"+h.File] = h.Secret
	}
	var missing []string
	for rel, data := range fx.Files {
		if !strings.HasPrefix(rel, "etc/systemd/system/agent-box-web@") {
			continue
		}
		for _, m := range hookCredRe.FindAllStringSubmatch(data, -1) {
			s, ok := secrets[m[2]]
			if !ok {
				missing = append(missing, m[2])
				continue
			}
			if err := writeFile(filepath.Join(root, m[2]), []byte(s+"\n"), 0o400); err != nil {
				return fmt.Errorf("writing the secret of hook %s: %w", m[1], err)
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("webhook secret files %s of the web golden are not in tests/scenarios/demo-hooks", strings.Join(missing, ", "))
	}
	return nil
}
