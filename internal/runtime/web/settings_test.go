package web

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/actions"
	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/agent-box/agent-box/internal/runtime/envfile"
	"github.com/agent-box/agent-box/internal/runtime/observe"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/state"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const secretValue = "hunter2-VALUE-41c9"

// settingsFixture is a daemon whose user has an agents table (shell,
// claude) and a secret.
func settingsFixture(t *testing.T) *fixture {
	t.Helper()
	table := filepath.Join(t.TempDir(), "agents.json")
	if err := os.WriteFile(table, []byte(`{"shell":{"args":[],"command":"/bin/sh"},"claude":{"args":[],"command":"/bin/true"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(c *Config) { c.Env.AgentsFile, c.Env.DefaultAgent = table, "shell" })
	if err := envfile.Set(context.Background(), f.env.EnvFile(), "API_TOKEN", secretValue); err != nil {
		t.Fatal(err)
	}
	return f
}

// post sends a form as a same-origin browser does, plus kv header pairs.
func (f *fixture) post(path string, form url.Values, kv ...string) (int, http.Header, string) {
	f.t.Helper()
	h := header(append([]string{"Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "same-origin", "Origin", testOrigin}, kv...)...)
	return f.send(http.MethodPost, path, strings.NewReader(form.Encode()), h)
}

func (f *fixture) registry() *registry.Registry {
	f.t.Helper()
	r, err := registry.Load(f.env.Registry())
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func TestSettingsPageShowsSessionsAndSecretKeysOnly(t *testing.T) {
	f := settingsFixture(t)
	code, h, body := f.do(http.MethodGet, "/settings", header())
	if code != http.StatusOK || h.Get("Content-Security-Policy") != scriptCSP {
		t.Fatalf("%d %v", code, h)
	}
	for _, want := range []string{
		`<a href="/term/?arg=main">main</a></td><td>claude</td>`,
		`&lt;script&gt;alert(&#34;agent&#34;)&lt;/script&gt;`, // an agent name is text
		`<td>stopped</td>`,
		`<button name="action" value="start">Start</button>`,
		`<option selected>shell</option>`,
		`<option>claude</option>`,
		`<code>API_TOKEN</code>`,
		`<a href="https://box.test/auth/password">Change your password</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	// the page's one script is its own (an agent's name is text, above)
	if strings.Contains(body, secretValue) || strings.Count(body, "<script>") != 1 || !strings.Contains(body, "<script>"+pageScript+"</script>") {
		t.Errorf("the page shows a secret's value or markup:\n%s", body)
	}
}

// An action from the page changes the registry exactly as the CLI's code
// path does for the same input.
func TestSettingsAddIsTheCLIsAdd(t *testing.T) {
	f := settingsFixture(t)
	work := filepath.Join(f.env.Home, "work")
	os.Mkdir(work, 0o755)
	code, h, _ := f.post("/settings/sessions", url.Values{
		"action": {"add"}, "name": {"web-1"}, "agent": {"claude"}, "cwd": {work}, "args": {"--model\r\nopus 4\r\n\r\nlast\r\n"},
	})
	if code != http.StatusSeeOther || h.Get("Location") != "/settings?done=added&name=web-1" {
		t.Fatalf("%d %q", code, h.Get("Location"))
	}
	if err := actions.Add(context.Background(), f.env, agents.Table{"claude": {}}, "", actions.Spec{
		Name: "cli-1", Agent: "claude", Cwd: work, Args: []string{"--model", "opus 4", "", "last"},
	}); err != nil {
		t.Fatal(err)
	}
	web, _ := f.registry().Find("web-1")
	cli, _ := f.registry().Find("cli-1")
	if web == nil || cli == nil {
		t.Fatalf("web-1 %v, cli-1 %v", web, cli)
	}
	if diff := cmp.Diff(*cli, *web, cmpopts.IgnoreFields(registry.Session{}, "Name", "Created", "Updated")); diff != "" {
		t.Errorf("the page's session differs from the CLI's (-cli +web):\n%s", diff)
	}
	_, _, body := f.do(http.MethodGet, h.Get("Location"), header())
	if !strings.Contains(body, "Added session web-1; the supervisor starts it within a second.") || !strings.Contains(body, `&#34;opus 4&#34;`) {
		t.Errorf("the page after the add:\n%s", body)
	}
}

func TestSettingsSessionActions(t *testing.T) {
	f := settingsFixture(t)
	steps := []struct {
		action, name string
		check        func(r *registry.Registry) bool
	}{
		{"stop", "main", func(r *registry.Registry) bool { s, _ := r.Find("main"); return s.Stopped }},
		{"start", "main", func(r *registry.Registry) bool { s, _ := r.Find("main"); return !s.Stopped }},
		{"start", "park", func(r *registry.Registry) bool { s, _ := r.Find("park"); return !s.Stopped }},
		{"remove", "other", func(r *registry.Registry) bool { _, ok := r.Find("other"); return !ok }},
	}
	for _, st := range steps {
		code, h, _ := f.post("/settings/sessions", url.Values{"action": {st.action}, "name": {st.name}, "confirm": {"yes"}})
		if code != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/settings?done=") {
			t.Fatalf("%s %s: %d %q", st.action, st.name, code, h.Get("Location"))
		}
		if !st.check(f.registry()) {
			t.Errorf("%s %s did not change the registry", st.action, st.name)
		}
	}
}

func TestSettingsRefusals(t *testing.T) {
	f := settingsFixture(t)
	before := f.registry()
	for _, tc := range []struct {
		name string
		form url.Values
		kv   []string
		code int
		text string
	}{
		{"cross-site", url.Values{"action": {"remove"}, "name": {"main"}}, []string{"Sec-Fetch-Site", "", "Sec-Fetch-Site", "cross-site"}, 403, ""},
		{"another origin, no Sec-Fetch-Site", url.Values{"action": {"remove"}, "name": {"main"}}, []string{"Sec-Fetch-Site", "", "Origin", "", "Origin", "https://bob.box.test"}, 403, ""},
		{"an invalid name", url.Values{"action": {"add"}, "name": {"a b"}, "agent": {"shell"}}, nil, 400, `invalid session name &#34;a b&#34;`},
		{"a duplicate", url.Values{"action": {"add"}, "name": {"main"}, "agent": {"shell"}}, nil, 409, "main"},
		{"an unknown agent", url.Values{"action": {"add"}, "name": {"x"}, "agent": {"vim"}}, nil, 400, `unknown agent &#34;vim&#34; (known: claude, shell)`},
		{"not a directory", url.Values{"action": {"add"}, "name": {"x"}, "agent": {"shell"}, "cwd": {"/nonexistent"}}, nil, 400, `working directory &#34;/nonexistent&#34; is not a directory`},
		{"an unknown session", url.Values{"action": {"stop"}, "name": {"nosuch"}}, nil, 404, "nosuch"},
		{"restart without the supervisor", url.Values{"action": {"restart"}, "name": {"main"}, "confirm": {"yes"}}, nil, 503, "not running"},
		{"restart without a name", url.Values{"action": {"restart"}}, nil, 400, "restart needs a session name"},
		{"an unknown action", url.Values{"action": {"explode"}, "name": {"main"}}, nil, 400, "unknown action"},
		{"too large", url.Values{"action": {"add"}, "name": {"x"}, "args": {strings.Repeat("a", formLimit)}}, nil, 413, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := f.post("/settings/sessions", tc.form, tc.kv...)
			if code != tc.code || !strings.Contains(body, tc.text) {
				t.Errorf("%d, want %d with %q:\n%.600s", code, tc.code, tc.text, body)
			}
		})
	}
	if diff := cmp.Diff(before, f.registry()); diff != "" {
		t.Errorf("a refused action changed the registry:\n%s", diff)
	}
	// GET never changes anything
	if code, _, _ := f.do(http.MethodGet, "/settings/sessions?action=remove&name=main", header()); code == http.StatusSeeOther || code == http.StatusOK {
		t.Errorf("GET with an action: %d", code)
	}
	if _, ok := f.registry().Find("main"); !ok {
		t.Error("a GET removed main")
	}
}

func TestSettingsSecretsAreWriteOnly(t *testing.T) {
	f := settingsFixture(t)
	const v = "s3cret with spaces=and=equals"
	code, h, body := f.post("/settings/secrets", url.Values{"action": {"set"}, "key": {"GH_TOKEN"}, "value": {v}})
	if code != http.StatusSeeOther || strings.Contains(h.Get("Location"), "s3cret") || strings.Contains(body, "s3cret") {
		t.Fatalf("%d %q %q", code, h.Get("Location"), body)
	}
	vars, err := envfile.Load(f.env.EnvFile())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, x := range vars {
		got[x.Key] = x.Value
	}
	if got["GH_TOKEN"] != v || got["API_TOKEN"] != secretValue {
		t.Errorf("env file: %v", got)
	}
	_, _, page := f.do(http.MethodGet, h.Get("Location"), header())
	if !strings.Contains(page, "<code>GH_TOKEN</code>") || strings.Contains(page, "s3cret") || strings.Contains(page, secretValue) {
		t.Errorf("the page after set:\n%s", page)
	}
	// a bad value is refused without being shown
	code, _, body = f.post("/settings/secrets", url.Values{"action": {"set"}, "key": {"X"}, "value": {"line1\nline2-" + secretValue}})
	if code != http.StatusBadRequest || strings.Contains(body, "line1") || strings.Contains(body, secretValue) || !strings.Contains(body, "values cannot contain a newline") {
		t.Errorf("a value with a newline: %d\n%s", code, body)
	}
	code, _, body = f.post("/settings/secrets", url.Values{"action": {"set"}, "key": {"1BAD"}, "value": {"x"}})
	if code != http.StatusBadRequest || !strings.Contains(body, "want [A-Za-z_][A-Za-z0-9_]*") {
		t.Errorf("a bad key: %d\n%s", code, body)
	}
	code, _, _ = f.post("/settings/secrets", url.Values{"action": {"remove"}, "key": {"GH_TOKEN"}})
	if code != http.StatusSeeOther {
		t.Errorf("remove: %d", code)
	}
	if code, _, _ = f.post("/settings/secrets", url.Values{"action": {"remove"}, "key": {"GH_TOKEN"}}); code != http.StatusNotFound {
		t.Errorf("remove again: %d, want 404", code)
	}
	if strings.Contains(f.log.String(), "s3cret") || strings.Contains(f.log.String(), secretValue) {
		t.Errorf("a value reached the log:\n%s", f.log.String())
	}
}

func TestSettingsWithACorruptRegistry(t *testing.T) {
	f := settingsFixture(t)
	if err := os.WriteFile(f.env.Registry(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, body := f.do(http.MethodGet, "/settings", header())
	if code != http.StatusOK || !strings.Contains(body, "The session list cannot be read") {
		t.Errorf("GET: %d\n%s", code, body)
	}
	code, _, body = f.post("/settings/sessions", url.Values{"action": {"stop"}, "name": {"main"}})
	if code != http.StatusInternalServerError || !strings.Contains(body, "corrupt") {
		t.Errorf("POST: %d\n%.600s", code, body)
	}
	if data, _ := os.ReadFile(f.env.Registry()); string(data) != "{not json" {
		t.Errorf("the corrupt registry was touched: %q", data)
	}
}

// A done message is shown only for a name the registry or env file could
// hold: nothing else from the URL reaches the page.
func TestSettingsDoneMessageShowsOnlyValidNames(t *testing.T) {
	f := settingsFixture(t)
	_, _, body := f.do(http.MethodGet, "/settings?done=added&name=%3Cb%3Eowned", header())
	if strings.Contains(body, "owned") || strings.Contains(body, "Added session") {
		t.Errorf("an invalid name was echoed:\n%s", body)
	}
	_, _, body = f.do(http.MethodGet, "/settings?done=nonsense&name=main", header())
	if strings.Contains(body, `class="done"`) {
		t.Error("an unknown done code showed a message")
	}
}

func TestUptimeReadsAtAGlance(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"},
		{0, "0s"},
		{59 * time.Second, "59s"},
		{61 * time.Second, "1m 1s"},
		{3*time.Hour + 12*time.Minute + 9*time.Second, "3h 12m"},
		{4*24*time.Hour + 3*time.Hour + 59*time.Minute, "4d 3h"},
	} {
		if got := uptime(tc.d); got != tc.want {
			t.Errorf("uptime(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// A session started with an older configuration than a restart would
// start says so on the page, as in `session ls` (nothing restarts it).
func TestSettingsPageSaysWhichSessionsRunAnOlderConfiguration(t *testing.T) {
	f := settingsFixture(t)
	st := state.State{Format: state.Format, PID: os.Getpid(), Spawn: map[string]string{"claude": "new", "shell": "new"}}
	if err := os.MkdirAll(f.env.RuntimeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := state.Write(f.env.StateFile(), st); err != nil {
		t.Fatal(err)
	}
	if err := observe.Save(f.env.ObservationsDir(), observe.Session{Name: "main", Spawn: "old"}); err != nil {
		t.Fatal(err)
	}
	_, _, body := f.do(http.MethodGet, "/settings", header())
	if n := strings.Count(body, "(restart to apply)"); n != 1 || !strings.Contains(body, `main</a></td><td>claude</td>`) {
		t.Errorf("the page marks %d sessions (want main alone):\n%s", n, body)
	}
}

func TestSettingsAddTakesAKickoffPromptAndTheListOffersANewConversation(t *testing.T) {
	f := settingsFixture(t)
	work := t.TempDir()
	code, h, _ := f.post("/settings/sessions", url.Values{
		"action": {"add"}, "name": {"web-p"}, "agent": {"claude"}, "cwd": {work}, "prompt": {"first line\r\nsecond line"},
	})
	if code != http.StatusSeeOther {
		t.Fatalf("add: %d %q", code, h.Get("Location"))
	}
	rec, err := conversation.Load(f.env.ConversationsDir(), "web-p")
	if err != nil || rec.Prompt != "first line\nsecond line" {
		t.Fatalf("the prompt in the conversation file: %q, %v", rec.Prompt, err)
	}
	_, _, body := f.do(http.MethodGet, "/settings", header())
	for _, want := range []string{`<textarea name="prompt" rows="4" cols="50" maxlength="65536">`, `value="restart-fresh" data-confirm="Restart session web-p with a new conversation? Its agent is ended and started again without resuming its conversation.">New conversation</button>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	// a new conversation needs the supervisor, like a restart
	code, _, body = f.post("/settings/sessions", url.Values{"action": {"restart-fresh"}, "name": {"web-p"}, "confirm": {"yes"}})
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "not running") {
		t.Errorf("restart-fresh without the supervisor: %d\n%.400s", code, body)
	}
	rec, _ = conversation.Load(f.env.ConversationsDir(), "web-p")
	if rec.WantFresh {
		t.Error("a refused restart-fresh asked the next spawn for a new conversation")
	}
}

func TestRemoveAndRestartAskFirst(t *testing.T) {
	f := settingsFixture(t)
	for _, tc := range []struct {
		action, back, verb string
	}{
		{"remove", "/", "Remove session other?"},
		{"restart", "/settings", "Restart session other?"},
		{"restart-fresh", "", "Restart session other with a new conversation?"},
	} {
		code, h, body := f.post("/settings/sessions", url.Values{"action": {tc.action}, "name": {"other"}, "back": {tc.back}})
		if code != http.StatusOK || !strings.Contains(body, "<h1>"+tc.verb+"</h1>") || h.Get("Content-Security-Policy") != pageCSP {
			t.Errorf("%s without confirm: %d, CSP %q:\n%s", tc.action, code, h.Get("Content-Security-Policy"), body)
		}
		back := tc.back
		if back == "" {
			back = "/settings"
		}
		for _, want := range []string{
			`<input type="hidden" name="action" value="` + tc.action + `">`,
			`<input type="hidden" name="confirm" value="yes">`,
			`<a href="` + back + `">Cancel</a>`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: the confirmation lacks %q", tc.action, want)
			}
		}
		if _, ok := f.registry().Find("other"); !ok {
			t.Fatalf("%s without confirm changed the registry", tc.action)
		}
	}
	// confirmed from the list: back to the list
	code, h, _ := f.post("/settings/sessions", url.Values{"action": {"remove"}, "name": {"other"}, "back": {"/"}, "confirm": {"yes"}})
	if code != http.StatusSeeOther || h.Get("Location") != "/" {
		t.Errorf("confirmed remove: %d %q, want 303 to /", code, h.Get("Location"))
	}
	if _, ok := f.registry().Find("other"); ok {
		t.Error("a confirmed remove left the session")
	}
	// a stop asks nothing
	if code, _, _ := f.post("/settings/sessions", url.Values{"action": {"stop"}, "name": {"main"}}); code != http.StatusSeeOther {
		t.Errorf("stop: %d, want 303 at once", code)
	}
}
