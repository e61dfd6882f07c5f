package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/hostilefile"
	"github.com/agent-box/agent-box/internal/runtime/badconfig"
)

// The tests' world: domain box.test, users alice and bob, login ops opens
// both, login al only alice. Sessions live 2 h, idle out after 1 h, so
// that expiry and idleness can be told apart.
const testConfig = `{
  "domain": "box.test",
  "users": ["alice", "bob"],
  "logins": {"ops": {"users": ["alice", "bob"]}, "al": {"users": ["alice"]}},
  "sessionLifetime": "2h0m0s",
  "idleTimeout": "1h0m0s"
}`

var testPasswords = map[string]string{"ops": "ops-password", "al": "al-password"}

func mustConfig(t testing.TB, js string) *Config {
	t.Helper()
	c, err := ParseConfig([]byte(js))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return c
}

func TestConfigDefaultsAndValues(t *testing.T) {
	c := mustConfig(t, `{"domain": "box.localhost:8443", "users": ["alice"], "logins": {"ops": {"users": ["alice"]}}}`)
	if c.SessionLifetime != 7*24*time.Hour || c.IdleTimeout != 24*time.Hour {
		t.Errorf("defaults: lifetime %s, idle %s", c.SessionLifetime, c.IdleTimeout)
	}
	if !c.mayOpen("ops", "alice") || c.mayOpen("ops", "bob") || c.mayOpen("nobody", "alice") {
		t.Error("mayOpen")
	}
	if got := c.originURL(origin{User: "alice"}); got != "https://alice.box.localhost:8443" {
		t.Errorf("userOrigin: %q", got)
	}
	c = mustConfig(t, testConfig)
	if c.SessionLifetime != 2*time.Hour || c.IdleTimeout != time.Hour {
		t.Errorf("given: lifetime %s, idle %s", c.SessionLifetime, c.IdleTimeout)
	}
}

// TestConfigErrors: each broken configuration is refused with a
// *badconfig.Error (exit 12) that names the problem.
func TestConfigErrors(t *testing.T) {
	const users = `"users": ["alice", "bob"]`
	for _, tc := range []struct{ name, js, want string }{
		{"unknown field", `{"domain": "box.test", ` + users + `, "sessionlifetime": "1h"}`, `unknown field "sessionlifetime"`},
		{"a field in another case", `{"domain": "box.test", ` + users + `, "IdleTimeout": "1h"}`, `unknown field "IdleTimeout"`},
		{"unknown field in a login", `{"domain": "box.test", ` + users + `, "logins": {"ops": {"users": [], "password": "x"}}}`, `unknown field "password"`},
		{"notify that is no bool", `{"domain": "box.test", ` + users + `, "logins": {"ops": {"users": ["alice"], "notify": "https://ntfy.example/t"}}}`, `cannot unmarshal string`},
		{"unknown user in a login", `{"domain": "box.test", ` + users + `, "logins": {"ops": {"users": ["alice", "carol"]}}}`, `logins.ops.users: unknown user "carol"`},
		{"user twice in a login", `{"domain": "box.test", ` + users + `, "logins": {"ops": {"users": ["alice", "alice"]}}}`, `listed twice`},
		{"user twice", `{"domain": "box.test", "users": ["alice", "alice"]}`, `"alice" is listed twice`},
		{"user not a host label", `{"domain": "box.test", "users": ["_svc"]}`, `"_svc" is not a user name`},
		{"user with a dot", `{"domain": "box.test", "users": ["a.b"]}`, `"a.b" is not a user name`},
		{"login name", `{"domain": "box.test", ` + users + `, "logins": {"Ops": {"users": []}}}`, `"Ops" is not a login name`},
		{"login name with a space", `{"domain": "box.test", ` + users + `, "logins": {"o ps": {"users": []}}}`, `is not a login name`},
		{"bad duration", `{"domain": "box.test", ` + users + `, "sessionLifetime": "7 days"}`, `sessionLifetime: "7 days" is not a Go duration`},
		{"negative duration", `{"domain": "box.test", ` + users + `, "idleTimeout": "-1h"}`, `idleTimeout: "-1h" is not a Go duration`},
		{"zero duration", `{"domain": "box.test", ` + users + `, "idleTimeout": "0s"}`, `shorter than 1m`},
		{"duration as a number", `{"domain": "box.test", ` + users + `, "idleTimeout": 3600}`, `cannot unmarshal number`},
		{"no domain", `{` + users + `}`, `domain is empty`},
		{"domain with a scheme", `{"domain": "https://box.test", ` + users + `}`, `port must be`},
		{"domain with a path", `{"domain": "box.test/x", ` + users + `}`, `"test/x" is not a lowercase host name label`},
		{"domain in capitals", `{"domain": "Box.test", ` + users + `}`, `"Box" is not a lowercase`},
		{"domain with a trailing dot", `{"domain": "box.test.", ` + users + `}`, `"" is not a lowercase`},
		{"domain of one label", `{"domain": "localhost", ` + users + `}`, `at least two labels`},
		{"domain an IP address", `{"domain": "10.0.0.1", ` + users + `}`, `an IP address`},
		{"domain with port 443", `{"domain": "box.test:443", ` + users + `}`, `443 is left out`},
		{"domain with port 0", `{"domain": "box.test:0", ` + users + `}`, `port must be 1-65535`},
		{"domain with a leading-zero port", `{"domain": "box.test:08443", ` + users + `}`, `without leading zeros`},
		{"domain with a big port", `{"domain": "box.test:65536", ` + users + `}`, `port must be`},
		{"domain with user info", `{"domain": "a@box.test", ` + users + `}`, `"a@box" is not`},
		{"domain with a space", `{"domain": "box.test ", ` + users + `}`, `is not a lowercase`},
		{"apps of an unknown user", `{"domain": "box.test", ` + users + `, "apps": {"carol": ["site"]}}`, `apps: unknown user "carol"`},
		{"an app name with a dash", `{"domain": "box.test", ` + users + `, "apps": {"alice": ["my-site"]}}`, `"my-site" is not an app name`},
		{"an app twice", `{"domain": "box.test", ` + users + `, "apps": {"alice": ["site", "site"]}}`, `"site" is listed twice`},
		{"an app origin that is a user's", `{"domain": "box.test", "users": ["alice", "site--alice"], "apps": {"alice": ["site"]}}`, `site--alice.box.test, is user "site--alice"'s`},
		{"apps domain with a scheme", `{"domain": "box.test", "appsDomain": "https://apps.test", ` + users + `}`, `appsDomain: `},
		{"two objects", `{"domain": "box.test", ` + users + `} {}`, `data after the object`},
		{"not JSON", `domain = box.test`, `invalid JSON`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "auth.json")
			if err := os.WriteFile(p, []byte(tc.js), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadConfig(p, t.TempDir())
			var ce *badconfig.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T), want a *badconfig.Error", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %q, want it to name %q and the file", err, tc.want)
			}
		})
	}
}

// TestCredentials: each login's hash comes from $CREDENTIALS_DIRECTORY;
// a missing, unreadable or weak one refuses the configuration.
func TestCredentials(t *testing.T) {
	const js = `{"domain": "box.test", "users": ["alice"], "logins": {"ops": {"users": ["alice"]}}}`
	good := fastHash("pw").String()
	weak := strings.Replace(good, "i=600000", "i=599999", 1)
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, dir string) // dir: the credentials directory
		noDir bool
		want  string // "" : accepted
	}{
		{name: "present, with a newline", plant: func(t *testing.T, d string) { write(t, filepath.Join(d, "login-ops"), good+"\n") }},
		{name: "missing", plant: func(t *testing.T, d string) {}, want: "login-ops"},
		{name: "no credentials directory", noDir: true, want: "CREDENTIALS_DIRECTORY is unset"},
		{name: "under the iteration floor", plant: func(t *testing.T, d string) { write(t, filepath.Join(d, "login-ops"), weak) }, want: "599999 iterations, fewer than 600000"},
		{name: "not a hash", plant: func(t *testing.T, d string) { write(t, filepath.Join(d, "login-ops"), "hunter2\n") }, want: "not a hash"},
		{name: "empty", plant: func(t *testing.T, d string) { write(t, filepath.Join(d, "login-ops"), "") }, want: "not a hash"},
		{name: "a FIFO", plant: func(t *testing.T, d string) {
			hostilefile.Plant(t, filepath.Join(d, "login-ops"), "FIFO", credentialLimit, good)
		}, want: "not a regular file"},
		{name: "oversized", plant: func(t *testing.T, d string) {
			hostilefile.Plant(t, filepath.Join(d, "login-ops"), "oversized file", credentialLimit, good)
		}, want: "file too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "auth.json")
			write(t, p, js)
			dir := ""
			if !tc.noDir {
				dir = t.TempDir()
				tc.plant(t, dir)
			}
			done := make(chan error, 1)
			go func() { _, err := LoadConfig(p, dir); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("LoadConfig hangs")
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ce *badconfig.Error
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want a *badconfig.Error naming %q", err, tc.want)
			}
		})
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestTheConfigFileIsReadThroughUserfile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "auth.json")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(p, "")
	var ce *badconfig.Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("a FIFO as the configuration: %v", err)
	}
	if _, err := LoadConfig("", ""); !errors.As(err, &ce) || !strings.Contains(err.Error(), "AGENT_BOX_AUTH_CONFIG is unset") {
		t.Errorf("no configuration: %v", err)
	}
}
