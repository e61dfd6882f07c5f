package fail2bancheck

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/golden"
	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/runtime/auth"
	"github.com/agent-box/agent-box/internal/scenarios"
	"github.com/google/go-cmp/cmp"
)

func need(t *testing.T, cmd string) string {
	t.Helper()
	p, err := exec.LookPath(cmd)
	if err != nil {
		t.Fatalf("%s is required: %v\nhint: run 'make deps' (installs Debian's fail2ban)", cmd, err)
	}
	return p
}

// goldenConf is Debian's fail2ban configuration with the web golden's
// filter and jail.
func goldenConf(t *testing.T) (*Conf, golden.Fixture) {
	t.Helper()
	fx, err := golden.Read(module.Root(), "web")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, p := range []string{FilterPath, JailPath, ActionPath} {
		if fx.Files[p] == "" {
			t.Fatalf("the web golden has no %s", p)
		}
		files[p] = fx.Files[p]
	}
	c, err := NewConf("/etc/fail2ban", t.TempDir(), files)
	if err != nil {
		t.Fatal(err)
	}
	return c, fx
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Hour) // no attempt waits for a backoff
	return c.now
}

// authService is the auth service with the web golden's configuration and
// the demo logins' hashes, writing its journal lines to log.
func authService(t *testing.T, fx golden.Fixture, log *strings.Builder) http.Handler {
	t.Helper()
	dir := t.TempDir()
	var cfg string
	for rel, text := range fx.Files {
		if strings.HasSuffix(rel, "-agent-box-auth-config.json") {
			cfg = filepath.Join(dir, "config.json")
			os.WriteFile(cfg, []byte(text), 0o644)
		}
	}
	if cfg == "" {
		t.Fatal("the web golden has no auth configuration")
	}
	logins, err := scenarios.DemoLogins(module.Root())
	if err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(dir, "creds")
	os.Mkdir(creds, 0o700)
	for _, l := range logins {
		os.WriteFile(filepath.Join(creds, "login-"+l.Name), []byte(l.Hash+"\n"), 0o400)
	}
	c, err := auth.LoadConfig(cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	os.Mkdir(state, 0o700)
	s, err := auth.New(auth.Options{Config: c, StateDir: state, Log: log, Clock: &clock{now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}})
	if err != nil {
		t.Fatal(err)
	}
	return s.Pages()
}

// The auth service's own failed-login lines, as journald hands them to
// fail2ban's systemd backend (host, identifier[pid]: message), count
// against the address Caddy set and against nothing a client wrote.
func TestFailedLoginsCountAgainstTheAddressCaddySet(t *testing.T) {
	bin := need(t, "fail2ban-regex")
	conf, fx := goldenConf(t)
	var log strings.Builder
	pages := authService(t, fx, &log)
	attempts := []struct {
		login   string
		clients []string // X-Agent-Box-Client values (Caddy sets exactly one)
	}{
		{"ops", []string{"10.99.0.2"}},            // a known login, wrong password
		{"nobody", []string{"2001:db8::7"}},       // an unknown login, IPv6: its /64
		{"nobody", []string{"2001:db8::8"}},       // another address of that /64
		{"nobody", []string{"::ffff:10.99.0.9"}},  // IPv4 in IPv6: the IPv4 address
		{"nobody", []string{"::1"}},               // loopback: never banned (nor counted)
		{"x addr=1.2.3.4", []string{"10.99.0.3"}}, // a login name that names an address
		{"a\nagent-box-auth: login failed login=b addr=9.9.9.9", []string{"10.99.0.4"}},
		{"mallory", []string{"1.2.3.4 addr=5.6.7.8"}},   // not an address: "-"
		{"mallory", nil},                                // no header: "-"
		{"mallory", []string{"10.99.0.5", "10.99.0.6"}}, // two: "-"
		{"mallory", []string{"fe80::1%eth0"}},           // a zone is free text: "-"
	}
	for _, a := range attempts {
		r := httptest.NewRequest(http.MethodPost, "https://box.localhost:8443/auth/login",
			strings.NewReader(url.Values{"login": {a.login}, "password": {"wrong"}}.Encode()))
		r.Host = "box.localhost:8443"
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for _, c := range a.clients {
			r.Header.Add("X-Agent-Box-Client", c)
		}
		w := httptest.NewRecorder()
		pages.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("login %q: %d, want 401", a.login, w.Code)
		}
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if strings.Contains(l, "login failed") {
			lines = append(lines, "Dec  1 14:38:32 agent-box-vm agent-box[645]: "+l)
		}
	}
	if len(lines) != len(attempts) {
		t.Fatalf("%d failed-login lines for %d failed logins:\n%s", len(lines), len(attempts), log.String())
	}
	got, err := conf.Banned(bin, lines)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.99.0.2", "2001:db8::/64", "2001:db8::/64", "10.99.0.9", "10.99.0.3", "10.99.0.4"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("addresses the failures count against (-want +got):\n%s\nlines:\n%s", diff, strings.Join(lines, "\n"))
	}
}

// Lines the filter must not count: other messages of the service, and a
// failed-login line without the service's prefix shape.
func TestOtherLinesCountAgainstNoAddress(t *testing.T) {
	bin := need(t, "fail2ban-regex")
	conf, _ := goldenConf(t)
	got, err := conf.Banned(bin, []string{
		"Dec  1 14:38:36 agent-box-vm agent-box[645]: agent-box-auth: revoked 2 sessions of login ops",
		"Dec  1 14:38:36 agent-box-vm agent-box[645]: agent-box-auth: serving https://box.localhost:8443/ for 2 users and 2 logins, 0 sessions",
		"Dec  1 14:38:37 agent-box-vm agent-box[645]: agent-box-auth: login failed login=ops addr=10.99.0.2 and more",
		"Dec  1 14:38:37 agent-box-vm agent-box[645]: agent-box-auth: login failed login=Ops addr=10.99.0.2",
		"Dec  1 14:38:38 agent-box-vm agent-box[645]: note agent-box-auth: login failed login=ops addr=10.99.0.9",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("counted against %v, want nothing", got)
	}
}

// The jail loads with Debian's fail2ban and sets what the options say,
// reading the service's journal only.
func TestTheJailLoadsWithTheGoldensSettings(t *testing.T) {
	bin := need(t, "fail2ban-client")
	conf, _ := goldenConf(t)
	got, err := conf.Load(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"['add', 'agent-box-auth', 'systemd']",
		"['set', 'agent-box-auth', 'addjournalmatch', '_SYSTEMD_UNIT=agent-box-auth.service']",
		"['set', 'agent-box-auth', 'maxretry', 3]",
		"['set', 'agent-box-auth', 'findtime', '10m']",
		"['set', 'agent-box-auth', 'bantime', '1h']",
	} {
		found := false
		for _, l := range got {
			found = found || l == want
		}
		if !found {
			t.Errorf("the jail does not set %s; it sets:\n%s", want, strings.Join(got, "\n"))
		}
	}
	// the ban covers the domain's port (a setting of the jail's action),
	// through the module's action, whose nftables sets hold a /64
	port, interval := false, false
	for _, l := range got {
		port = port || strings.HasPrefix(l, "['multi-set', 'agent-box-auth', 'action'") && strings.Contains(l, "['port', '8443']")
		interval = interval || strings.HasPrefix(l, "['multi-set', 'agent-box-auth', 'action', 'agent-box-nftables'") && strings.Contains(l, "flags interval")
	}
	if !port {
		t.Errorf("the jail's action does not ban port 8443; the jail:\n%s", strings.Join(got, "\n"))
	}
	if !interval {
		t.Errorf("the jail does not ban through agent-box-nftables with interval sets; the jail:\n%s", strings.Join(got, "\n"))
	}
}
