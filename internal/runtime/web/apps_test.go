package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/agent-box/agent-box/internal/runtime/appctl"
)

// fakeApps is a systemd where alice has the app records (running) and
// site (failed); it records the actions and refuses what polkit would.
type fakeApps struct {
	mu   sync.Mutex
	acts []string
}

func (f *fakeApps) run(_ context.Context, name string, args ...string) ([]byte, error) {
	last := args[len(args)-1]
	switch {
	case name == "systemctl" && args[0] == "list-units":
		return []byte("agent-box-app@records--alice.service loaded active running x\nagent-box-app@site--alice.service loaded failed failed x\n"), nil
	case name == "systemctl" && args[0] == "show" && last == "agent-box-app@records--alice.service":
		return []byte("LoadState=loaded\nActiveState=active\nSubState=running\nStatusText=running python3 (pid 7, restarts 1), last exit: exited with status 3 after 2s at 10:00:00\nActiveEnterTimestamp=@1764800000\nNRestarts=0\n"), nil
	case name == "systemctl" && args[0] == "show" && last == "agent-box-app@site--alice.service":
		return []byte("LoadState=loaded\nActiveState=failed\nSubState=failed\nStatusText=\nNRestarts=3\n"), nil
	case name == "systemctl" && args[0] == "show":
		return []byte("LoadState=not-found\n"), nil
	case name == "journalctl":
		return []byte("10:00:00 records: \"GET /records/a HTTP/1.1\" 200 -\n10:00:01 records: <script>\x1b[31m\n"), nil
	case name == "systemctl" && args[0] == "--no-ask-password":
		f.mu.Lock()
		f.acts = append(f.acts, args[1]+" "+last)
		f.mu.Unlock()
		if args[1] == "stop" {
			return nil, errors.New("Failed to stop " + last + ": Access denied")
		}
		return nil, nil
	}
	return nil, errors.New("unexpected " + name + " " + strings.Join(args, " "))
}

func appsFixture(t *testing.T) (*fixture, *fakeApps) {
	fa := &fakeApps{}
	f := newFixture(t, func(c *Config) { c.Apps = &appctl.Ctl{User: "alice", Run: fa.run} })
	return f, fa
}

func TestSettingsPageShowsTheUsersApps(t *testing.T) {
	f, _ := appsFixture(t)
	code, _, body := f.do(http.MethodGet, "/settings", header())
	if code != http.StatusOK {
		t.Fatalf("%d", code)
	}
	for _, want := range []string{
		`<h3>records</h3>`,
		`<td>active (running)</td><td>up `,
		`running python3 (pid 7, restarts 1), last exit: exited with status 3 after 2s at 10:00:00`,
		`<button name="action" value="restart">Restart</button> <button name="action" value="stop">Stop</button>`,
		`records: &#34;GET /records/a HTTP/1.1&#34; 200 -`,
		`records: &lt;script&gt;\x1b[31m`, // the log is text, its escapes shown
		`<h3>site</h3>`,
		`<td>failed (failed)</td><td></td>`,
		`launcher restarts: 3`,
		`<button name="action" value="start">Start</button></form></td></tr></tbody></table>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s\n%s", want, body)
		}
	}
}

func TestSettingsAppActions(t *testing.T) {
	f, fa := appsFixture(t)
	for _, tc := range []struct {
		name string
		form url.Values
		code int
		text string
	}{
		{"restart", url.Values{"action": {"restart"}, "name": {"records"}}, http.StatusSeeOther, ""},
		{"start of a failed app", url.Values{"action": {"start"}, "name": {"site"}}, http.StatusSeeOther, ""},
		{"another user's app", url.Values{"action": {"restart"}, "name": {"records--bob"}}, http.StatusBadRequest, "manages the apps of alice"},
		{"an app alice lacks", url.Values{"action": {"restart"}, "name": {"nothere"}}, http.StatusNotFound, "alice has no app"},
		{"a verb polkit does not allow", url.Values{"action": {"kill"}, "name": {"records"}}, http.StatusBadRequest, "unknown action"},
		{"a refusal", url.Values{"action": {"stop"}, "name": {"records"}}, http.StatusServiceUnavailable, "Access denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := f.post("/settings/apps", tc.form)
			if code != tc.code || !strings.Contains(body, tc.text) {
				t.Errorf("%d %q, want %d with %q", code, body, tc.code, tc.text)
			}
		})
	}
	want := []string{"restart agent-box-app@records--alice.service", "reset-failed agent-box-app@site--alice.service", "start agent-box-app@site--alice.service", "stop agent-box-app@records--alice.service"}
	if strings.Join(fa.acts, "\n") != strings.Join(want, "\n") {
		t.Errorf("actions %q, want %q", fa.acts, want)
	}
	if code, _, _ := f.post("/settings/apps", url.Values{"action": {"restart"}, "name": {"records"}}, "Sec-Fetch-Site", "", "Sec-Fetch-Site", "cross-site"); code != http.StatusForbidden {
		t.Errorf("a cross-site restart: %d, want 403", code)
	}
}

// A user without apps (no systemctl in its environment, or none listed)
// gets no section.
func TestSettingsWithoutAppsHasNoSection(t *testing.T) {
	for _, run := range []func(context.Context, string, ...string) ([]byte, error){
		func(context.Context, string, ...string) ([]byte, error) {
			return nil, &exec.Error{Name: "systemctl", Err: exec.ErrNotFound}
		},
		func(context.Context, string, ...string) ([]byte, error) { return nil, nil },
	} {
		f := newFixture(t, func(c *Config) { c.Apps = &appctl.Ctl{User: "alice", Run: run} })
		if _, _, body := f.do(http.MethodGet, "/settings", header()); strings.Contains(body, "<h2>Apps</h2>") {
			t.Errorf("an Apps section without apps")
		}
	}
}
