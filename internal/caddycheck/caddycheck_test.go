package caddycheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/golden"
	"github.com/agent-box/agent-box/internal/module"
)

// The web golden's two Caddy files, as the NixOS module imports them.
func goldenCaddy(t *testing.T) (global, sites string) {
	t.Helper()
	fx, err := golden.Read(module.Root(), "web")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range fx.Files {
		switch {
		case strings.HasSuffix(name, "-agent-box-caddy-global.caddy"):
			global = data
		case strings.HasSuffix(name, "-agent-box-caddy-sites.caddy"):
			sites = data
		}
	}
	if global == "" || sites == "" {
		t.Fatal("the web golden has no Caddy files")
	}
	return global, sites
}

func caddyBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("caddy")
	if err != nil {
		t.Fatalf("caddy is required: %v\nhint: run 'make deps' (installs Debian's caddy)", err)
	}
	return p
}

// adapt writes the Caddyfile NixOS generates (NixOSCaddyfile), validates it
// and returns the adapted JSON.
func adapt(t *testing.T, global, sites string) []byte {
	t.Helper()
	dir := t.TempDir()
	g, s := filepath.Join(dir, "global.caddy"), filepath.Join(dir, "sites.caddy")
	os.WriteFile(g, []byte(global), 0o644)
	os.WriteFile(s, []byte(sites), 0o644)
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte(NixOSCaddyfile(g, s)), 0o644)
	env := append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	v := exec.Command(caddyBin(t), "validate", "--config", file, "--adapter", "caddyfile")
	v.Env = env
	if out, err := v.CombinedOutput(); err != nil {
		t.Fatalf("caddy validate: %v\n%s", err, out)
	}
	a := exec.Command(caddyBin(t), "adapt", "--config", file, "--adapter", "caddyfile")
	a.Env = env
	out, err := a.Output()
	if err != nil {
		t.Fatalf("caddy adapt: %v", err)
	}
	return out
}

var want = Want{Domain: "box.localhost:8443", Users: []string{"alice", "bob"}, Hooks: []string{"alice"},
	AppsDomain: "apps.localhost:8443", Apps: []App{{User: "alice", Name: "records"}, {User: "alice", Name: "site", Public: true}}}

// TestGoldenCaddyConfigHoldsTheContract runs Debian's caddy on the web
// golden's Caddy files: valid, and every route as docs/web-contract.md
// says (the exact dials, forward_auth before every per-user backend, the
// credentials removed, /auth/* only to the auth pages, no TCP admin, h1 h2).
func TestGoldenCaddyConfigHoldsTheContract(t *testing.T) {
	global, sites := goldenCaddy(t)
	if probs := Check(adapt(t, global, sites), want); len(probs) > 0 {
		t.Errorf("the golden Caddy config breaks the contract:\n%s", strings.Join(probs, "\n"))
	}
}

// Each mutation is a mistake the check exists to catch; each must be
// reported.
func TestCheckCatchesEachMistake(t *testing.T) {
	global, sites := goldenCaddy(t)
	for _, tc := range []struct {
		name              string
		global, old, new_ string
		want              string
	}{
		{"admin on TCP", "admin unix//run/caddy/admin.sock", "admin unix//run/caddy/admin.sock", "admin localhost:2019", "admin listens on"},
		{"HTTP/3 allowed", "", "\tprotocols h1 h2", "\tprotocols h1 h2 h3", "protocols"},
		{"no forward_auth for alice", "", "\t\t\tforward_auth unix//run/agent-box-auth/verify.sock {\n\t\t\t\turi /verify?user=alice\n\t\t\t\theader_up Cookie \"(?:^|;) *(?:(__Host-agentbox=[^;]*)|[^;]*)\" \";$1\"\n\t\t\t\theader_up X-Agent-Box-Client {remote_host}\n\t\t\t\tcopy_headers X-Agent-Box-User X-Agent-Box-Session\n\t\t\t}\n", "", "reached without forward_auth"},
		{"forward_auth for the wrong user", "", "uri /verify?user=alice", "uri /verify?user=bob", "without forward_auth to /verify?user=alice"},
		{"cookie passed to the web daemon", "", "\t\t\treverse_proxy unix//run/agent-box-web/alice.sock {\n\t\t\t\theader_up -Cookie\n", "\t\t\treverse_proxy unix//run/agent-box-web/alice.sock {\n", "does not remove Cookie"},
		{"a placeholder in a dial", "", "unix//run/agent-box-web/bob.sock", "unix//run/agent-box-web/{host}.sock", "placeholder"},
		{"identity headers from the client kept", "", "\t\t\trequest_header -X-Agent-Box-User\n", "", "not removed before forward_auth"},
		{"auth pages on every path", "", "\thandle /auth/* {", "\thandle /* {", "want only /auth/*"},
		{"client address from the client", "", "\t\t\theader_up X-Agent-Box-Client {remote_host}\n\t\t}\n\t}\n}\n\nalice", "\t\t}\n\t}\n}\n\nalice", "X-Agent-Box-Client"},
		{"foreign cookies passed to the auth pages", "", "\t\t\theader_up Cookie \"(?:^|;) *(?:(__Host-agentbox=[^;]*)|[^;]*)\" \";$1\"\n\t\t\theader_up X-Agent-Box-Client", "\t\t\theader_up X-Agent-Box-Client", "the proxy to the auth pages passes the cookies"},
		{"foreign cookies passed to forward_auth", "", "\t\t\t\theader_up Cookie \"(?:^|;) *(?:(__Host-agentbox=[^;]*)|[^;]*)\" \";$1\"\n", "", "forward_auth passes the cookies"},
		{"a look-alike of the binding cookie passed", "", "(__Host-agentbox-bind=[^;]*)", "(__Host-agentbox-bind[^;]*)", "passes the cookies"},
		{"a look-alike of the session cookie passed", "", "(__Host-agentbox=[^;]*)|[^;]*)\" \";$1\"\n\t\t\theader_up X-Agent-Box-Client", "(__Host-agentbox[^;]*)|[^;]*)\" \";$1\"\n\t\t\theader_up X-Agent-Box-Client", "passes the cookies"},
		{"no client address for the hooks' limits", "", "\t\t\theader_up -Authorization\n\t\t\theader_up X-Agent-Box-Client {remote_host}\n", "\t\t\theader_up -Authorization\n", "its per-client limits"},
		{"hooks on every path of the box origin", "", "\thandle /alice/hook/* {", "\thandle /alice/* {", "want only /alice/hook/*"},
		{"a hook body without a cap", "", "\t\trequest_body {\n\t\t\tmax_size 1114112\n\t\t}\n", "", "not capped"},
		{"a cookie passed to the hook listener", "", "\t\treverse_proxy unix//run/agent-box-hook/alice.sock {\n\t\t\theader_up -Cookie\n", "\t\treverse_proxy unix//run/agent-box-hook/alice.sock {\n", "does not remove Cookie"},
		{"a hook listener on a user origin", "", "\t\t\treverse_proxy unix//run/agent-box-web/bob.sock {", "\t\t\treverse_proxy unix//run/agent-box-hook/alice.sock {", "must not reach"},
		{"the hook listener of another user", "", "unix//run/agent-box-hook/alice.sock", "unix//run/agent-box-hook/bob.sock", "unexpected dial \"unix//run/agent-box-hook/bob.sock\""},
		{"no forward_auth for an app", "", "\t\t\tforward_auth unix//run/agent-box-auth/verify.sock {\n\t\t\t\turi /verify?user=alice&app=records\n", "\t\t\tforward_auth unix//run/agent-box-auth/verify.sock {\n\t\t\t\turi /verify?user=alice\n", "reached without forward_auth to /verify?user=alice&app=records"},
		{"the box's session cookie passed to an app", "", "records--alice.sock {\n\t\t\t\theader_up Cookie \"(?:^|;) *(?:__Host-agentbox|", "records--alice.sock {\n\t\t\t\theader_up Cookie \"(?:^|;) *(?:__Host-agentboxNOT|", "the proxy to unix//run/agent-box-app/records--alice.sock passes the cookies"},
		{"a public app's binding cookie passed", "", "site--alice.sock {\n\t\theader_up Cookie \"(?:^|;) *(?:__Host-agentbox|__Host-agentbox-bind)", "site--alice.sock {\n\t\theader_up Cookie \"(?:^|;) *(?:__Host-agentbox)", "passes the cookies"},
		{"an app's own cookies removed", "", "site--alice.sock {\n\t\theader_up Cookie \"(?:^|;) *(?:__Host-agentbox|", "site--alice.sock {\n\t\theader_up Cookie \"(?:^|;) *(?:foreign|__Host-agentbox|", "passes the cookies"},
		{"Authorization removed before an app", "", "site--alice.sock {\n", "site--alice.sock {\n\t\theader_up -Authorization\n", "removes Authorization"},
		{"an app's socket on another app's origin", "", "reverse_proxy unix//run/agent-box-app/site--alice.sock", "reverse_proxy unix//run/agent-box-app/records--alice.sock", "must not reach"},
		{"a retired binding cookie passed to a user origin's auth pages", "", "\t\t\theader_up Cookie \"(?:^|;) *(?:(__Host-agentbox=[^;]*)|(__Host-agentbox-bind=[^;]*)|[^;]*)\" \";$1$2\"", "\t\t\theader_up Cookie \"(?:^|;) *(?:(__Host-agentbox=[^;]*)|(__Host-agentbox-bind=[^;]*)|(__Secure-agentbox-handover-alice=[^;]*)|[^;]*)\" \";$1$2$3\"", "the proxy to the auth pages passes the cookies"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, s := global, sites
			if tc.global != "" {
				if !strings.Contains(g, tc.old) {
					t.Fatalf("global lacks %q", tc.old)
				}
				g = strings.Replace(g, tc.old, tc.new_, 1)
			} else {
				if !strings.Contains(s+g, tc.old) {
					t.Fatalf("the config lacks %q", tc.old)
				}
				if strings.Contains(s, tc.old) {
					s = strings.Replace(s, tc.old, tc.new_, 1)
				} else {
					g = strings.Replace(g, tc.old, tc.new_, 1)
				}
			}
			probs := Check(adapt(t, g, s), want)
			if !strings.Contains(strings.Join(probs, "\n"), tc.want) {
				t.Errorf("not caught; problems: %q, want one containing %q", probs, tc.want)
			}
		})
	}
}
