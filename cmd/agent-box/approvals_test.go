package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/scriptedmodel"
	"github.com/agent-box/agent-box/internal/vmtest"
)

// TestClaudeAsksThePersonThroughTheAuthService runs the real, pinned
// Claude Code in manual permission mode as a session's agent under the
// real supervisor, with the module's managed settings (the golden bytes,
// given with --settings, the runtime being this test binary), against
// the scripted model, and the real auth service (`auth serve` on sockets
// as systemd passes them). Each "run:" prompt makes the model call Bash;
// Claude's permission hook asks the auth service and waits. The box page
// of a logged-in login shows the request; Allow for this session (Claude
// suggests rules) runs the command; Deny does not, and Claude tells the
// model the person's reason; a request left alone ends at the wait and
// Claude's own dialog is in the pane.
// The hook asks through the supervisor's approval socket, which relays to
// the auth service's status socket; both restart while a request waits,
// and nothing is lost. The test runs as the user "root", which it makes
// an agent user of the auth service (the status socket knows its peers by
// uid).
func TestClaudeAsksThePersonThroughTheAuthService(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: the auth service knows the hook's user by its uid, and root is the agent user here; CI and `make test` run as root")
	}
	ctx := context.Background()
	claude, err := vmtest.CLIs[0].Ensure(ctx, io.Discard)
	if err != nil {
		t.Fatalf("the pinned Claude Code: %v", err)
	}
	t.Cleanup(func() { killAll(claude) })

	// the auth service, with a wait of 8 s
	a := newRootAuth(t, `, "approvalWait": "8s"`)
	page := a.page
	model := newRecordingModel(t)

	b := newBox(t, "")
	dir := t.TempDir()
	settings, err := os.ReadFile(filepath.Join(goldenFiles, "etc/claude-code/managed-settings.d/50-agent-box.json"))
	if err != nil {
		t.Fatal(err)
	}
	settingsFile := filepath.Join(dir, "settings.json")
	os.WriteFile(settingsFile, []byte(strings.ReplaceAll(string(settings), goldenRT, testBinary(t))), 0o644)
	wrapper := filepath.Join(dir, "claude")
	os.WriteFile(wrapper, []byte(`#!/bin/sh
export AGENT_BOX_TEST_PROGRAM=1
export ANTHROPIC_BASE_URL=`+model.URL+` ANTHROPIC_AUTH_TOKEN=sk-test CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1
exec `+shellQuote(claude)+` --settings `+shellQuote(settingsFile)+` "$@"
`), 0o755)
	var golden map[string]agents.Agent
	data, _ := os.ReadFile(filepath.Join(goldenFiles, goldenAgents))
	if err := json.Unmarshal(data, &golden); err != nil || golden["claude"].Setup != "claude" {
		t.Fatalf("the golden agents table has no claude profile: %v %s", err, data)
	}
	ag := golden["claude"]
	ag.Command, ag.Args = wrapper, []string{"--permission-mode", "manual"}
	b.addAgent("claude", ag)
	// the supervisor relays the hook's request to the status socket
	b.setEnv("AGENT_BOX_TEST_AUTH_STATUS", a.statusSocket())
	b.startSupervisor()
	s := &ocSession{b: b, name: "c"}

	// 1. Allow from the box page.
	allowed := filepath.Join(b.home, "allowed.txt")
	asked := time.Now()
	b.ok("session", "add", "c", "--agent", "claude", "--prompt", "run: echo allowed > "+allowed)
	idRe := requestIDRe
	var id string
	b.waitFor(2*time.Minute, "the request on the box page", func() bool {
		m := idRe.FindStringSubmatch(page())
		if m != nil {
			id = m[1]
		}
		return m != nil
	})
	t.Logf("measure: the first request on the box page %s after the session was added (Claude's start included)", time.Since(asked).Round(time.Millisecond))
	if p := page(); !strings.Contains(p, "<pre>echo allowed &gt; "+allowed) || !strings.Contains(p, "<code>Bash</code>") {
		t.Errorf("the page does not show the command as the agent's text:\n%s", p)
	}
	if _, err := os.Stat(allowed); err == nil {
		t.Fatal("the command ran before a decision")
	}
	decide := a.decide
	start := time.Now()
	// Claude suggests rules for the session (its permission_suggestions):
	// "allow for this session" gives them back with the allow
	if p := page(); !strings.Contains(p, `value="allow-session"`) {
		t.Fatalf("no \"allow for this session\" for Claude's request:\n%s", p)
	}
	if ans := decide(id, "allow-session"); ans.code != 303 {
		t.Fatalf("allow: %d %s", ans.code, ans.body)
	}
	b.waitFor(30*time.Second, "the allowed command's file", func() bool {
		data, _ := os.ReadFile(allowed)
		return string(data) == "allowed\n"
	})
	t.Logf("measure: allow for this session -> the command's file %s", time.Since(start).Round(time.Millisecond))
	if ans := decide(id, "deny"); ans.code != 409 {
		t.Errorf("a second decision: %d", ans.code)
	}

	// 2. Deny: not run, and the model is told why.
	denied := filepath.Join(b.home, "denied.txt")
	b.waitFor(time.Minute, "Claude's prompt after the first turn", func() bool { return s.screenHas(`tool done`) })
	s.tmux("send-keys", "-t", "=c:", "-l", "run: echo denied > "+denied)
	time.Sleep(300 * time.Millisecond)
	s.tmux("send-keys", "-t", "=c:", "Enter")
	b.waitFor(time.Minute, "the second request on the box page", func() bool {
		m := idRe.FindStringSubmatch(page())
		if m != nil && m[1] != id {
			id = m[1]
			return true
		}
		return false
	})
	// The supervisor and then the auth service restart while it waits:
	// the hook asks again (the same id), and the page still has it.
	b.stopSupervisor()
	b.startSupervisor()
	a.stop()
	a.start()
	b.waitFor(30*time.Second, "the request on the page after the restarts", func() bool {
		m := idRe.FindStringSubmatch(page())
		return m != nil && m[1] == id
	})
	if ans := decide(id, "deny"); ans.code != 303 {
		t.Fatalf("deny: %d %s", ans.code, ans.body)
	}
	b.waitFor(30*time.Second, "the model told of the denial", func() bool { return model.holds("A person denied this from agent-box (ops)") })
	if _, err := os.Stat(denied); err == nil {
		t.Error("the denied command ran")
	}

	// 3. Left alone: at the wait's end Claude's own dialog takes over.
	late := filepath.Join(b.home, "late.txt")
	s.tmux("send-keys", "-t", "=c:", "-l", "run: echo late > "+late)
	time.Sleep(300 * time.Millisecond)
	s.tmux("send-keys", "-t", "=c:", "Enter")
	b.waitFor(time.Minute, "the third request on the box page", func() bool {
		m := idRe.FindStringSubmatch(page())
		return m != nil && m[1] != id
	})
	b.waitFor(30*time.Second, "the request gone from the page at the wait's end", func() bool { return !idRe.MatchString(page()) })
	// the page leaves it out from its deadline on; the hook's answer comes a moment later
	b.waitFor(10*time.Second, "the auth service's answer none", func() bool { return strings.Contains(a.log.String(), "no decision within 8s") })
	if !s.screenHas(`Do you want to proceed\?`) {
		out, _ := s.tmux("capture-pane", "-p", "-t", "=c:")
		t.Errorf("Claude's own dialog is not in the pane:\n%s", out)
	}
	if _, err := os.Stat(late); err == nil {
		t.Error("the command left alone ran")
	}
	a.stop()
	// the restarted service's log
	if log := a.log.String(); !strings.Contains(log, "login ops: deny on root's request "+id) {
		t.Errorf("the auth service's log:\n%s", log)
	}
}

// TestAReplyFromTheInboxIsTypedIntoTheSession: a session whose agent said
// it waits for a person (its hook: needs-you) gets a reply field on the
// box page of the real auth service; a reply sent there reaches the
// real supervisor, which types it into the session, where the agent
// reads it as a line. A reply to a session that does not wait for one,
// and one with a control character, are refused.
func TestAReplyFromTheInboxIsTypedIntoTheSession(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: the auth service knows the supervisor's user by its uid, and root is the agent user here; CI and `make test` run as root")
	}
	a := newRootAuth(t, "")
	b := newBox(t, "")
	b.setEnv("AGENT_BOX_TEST_AUTH_STATUS", a.statusSocket())
	b.startSupervisor()
	got := filepath.Join(b.dir, "got.txt")
	script := `printf '%s' '{"notification_type":"idle_prompt"}' | "$1" agent-hook claude event Notification; read -r x; printf '%s\n' "$x" > "$2"; read -r y`
	b.ok("session", "add", "q", "--agent", "sh", "--", script, "agent", testBinary(t), got)
	b.ok("session", "add", "z", "--agent", "sleep")
	reply := func(session, text string) answer {
		return a.do("pages", "POST", "box.test", "/auth/reply", url.Values{"user": {"root"}, "session": {session}, "text": {text}}, a.cookie)
	}
	b.waitFor(20*time.Second, "the reply field of session q on the box page", func() bool {
		return strings.Contains(a.page(), `name="session" value="q"`)
	})
	if p := a.page(); strings.Contains(p, `name="session" value="z"`) {
		t.Errorf("session z works, yet the page offers it a reply:\n%s", p)
	}
	if ans := reply("z", "hello"); ans.code != 409 {
		t.Errorf("a reply to a working session: %d", ans.code)
	}
	if ans := reply("q", "hello\x1b[2J"); ans.code != 400 {
		t.Errorf("a reply with an escape: %d", ans.code)
	}
	start := time.Now()
	if ans := reply("q", "hello from the inbox; rm -rf is just text here"); ans.code != 303 {
		t.Fatalf("the reply: %d %s", ans.code, ans.body)
	}
	b.waitFor(20*time.Second, "the reply read by the session's agent", func() bool {
		data, _ := os.ReadFile(got)
		return string(data) == "hello from the inbox; rm -rf is just text here\n"
	})
	t.Logf("measure: the reply posted -> read in the session %s", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(b.supLog.String(), `session "q": typing a person's reply from the inbox (46 bytes)`) {
		t.Errorf("the supervisor's log:\n%s", b.supLog)
	}

	// The supervisor relays the permission requests of its registry's
	// sessions only, and requests of the contract's shape only.
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", filepath.Join(b.runtime, "approval.sock"))
	}}}
	for body, want := range map[string]int{
		`{"id":"` + strings.Repeat("e", 32) + `","session":"nosuch","agent":"claude","tool":"Bash","input":"ls"}`:   http.StatusForbidden,
		`{"id":"` + strings.Repeat("e", 32) + `","session":"q","agent":"claude","tool":"Bash","input":"\u001b[2J"}`: http.StatusBadRequest,
	} {
		resp, err := c.Post("http://supervisor"+contract.Approvals.Path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", body, resp.StatusCode, want)
		}
	}
}

// TestCodexAsksThePersonThroughTheAuthService: the real, pinned Codex
// with --ask-for-approval on-request and its workspace-write sandbox, the
// module's hooks (the golden /etc/codex/config.toml, as the user layer
// with --dangerously-bypass-hook-trust: the system layer is /etc), against
// the scripted model, whose "escalate:" line asks to run a command
// outside the sandbox. Codex's permission hook asks the real auth service
// through the supervisor: Allow runs the command; Deny does not, and the
// model is told why.
func TestCodexAsksThePersonThroughTheAuthService(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: the auth service knows the supervisor's user by its uid, and root is the agent user here; CI and `make test` run as root")
	}
	ctx := context.Background()
	codex, err := vmtest.CLIs[1].Ensure(ctx, io.Discard)
	if err != nil {
		t.Fatalf("the pinned Codex: %v", err)
	}
	t.Cleanup(func() { killAll(codex) })
	a := newRootAuth(t, "")
	page := a.page
	model := newRecordingModel(t)

	b := newBox(t, "")
	dir := t.TempDir()
	home := filepath.Join(dir, "codex-home")
	os.MkdirAll(home, 0o700)
	golden, err := os.ReadFile(filepath.Join(goldenFiles, "etc/codex/config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.ReplaceAll(string(golden), goldenRT, testBinary(t))
	if !strings.Contains(cfg, "agent-hook codex event PermissionRequest") {
		t.Fatalf("the golden Codex config has no permission hook:\n%s", golden)
	}
	os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600)
	wrapper := filepath.Join(dir, "codex")
	os.WriteFile(wrapper, []byte(`#!/bin/sh
export AGENT_BOX_TEST_PROGRAM=1 CODEX_HOME=`+shellQuote(home)+`
exec `+shellQuote(codex)+` "$@"
`), 0o755)
	var table map[string]agents.Agent
	data, _ := os.ReadFile(filepath.Join(goldenFiles, goldenAgents))
	if err := json.Unmarshal(data, &table); err != nil || table["codex"].Setup != "codex" {
		t.Fatalf("the golden agents table has no codex profile: %v %s", err, data)
	}
	ag := table["codex"]
	ag.Command = wrapper
	ag.Args = []string{"--dangerously-bypass-hook-trust", "--ask-for-approval", "on-request", "--sandbox", "workspace-write",
		"-c", "model_provider=scripted", "-c", `model_providers.scripted={name="scripted model",base_url="` + model.URL + `/v1",wire_api="responses"}`, "-m", "gpt-5.1"}
	b.addAgent("codex", ag)
	b.setEnv("AGENT_BOX_TEST_AUTH_STATUS", a.statusSocket())
	b.startSupervisor()
	s := &ocSession{b: b, name: "cx"}

	request := func(not string) string {
		var id string
		b.waitFor(2*time.Minute, "a request of Codex on the box page", func() bool {
			m := requestIDRe.FindStringSubmatch(page())
			if m != nil && m[1] != not {
				id = m[1]
			}
			return id != ""
		})
		return id
	}
	decide := func(id, d string) int { return a.decide(id, d).code }
	allowed := filepath.Join(b.home, "codex-allowed.txt")
	b.ok("session", "add", "cx", "--agent", "codex", "--prompt", "escalate: touch "+allowed)
	id := request("")
	if p := page(); !strings.Contains(p, "Codex in session <code>cx</code>") || !strings.Contains(p, "<pre>touch "+allowed) || strings.Contains(p, `value="allow-session"`) {
		t.Errorf("the page does not show Codex's request, or offers a session rule Codex cannot take:\n%s", p)
	}
	if got := decide(id, "allow"); got != 303 {
		t.Fatalf("allow: %d", got)
	}
	b.waitFor(time.Minute, "the allowed command's file", func() bool { _, err := os.Stat(allowed); return err == nil })

	denied := filepath.Join(b.home, "codex-denied.txt")
	b.waitAttention("cx", "finished (turn)")
	s.tmux("send-keys", "-t", "=cx:", "-l", "escalate: touch "+denied)
	time.Sleep(300 * time.Millisecond)
	s.tmux("send-keys", "-t", "=cx:", "Enter")
	id = request(id)
	if got := decide(id, "deny"); got != 303 {
		t.Fatalf("deny: %d", got)
	}
	b.waitFor(time.Minute, "the model told of the denial", func() bool { return model.holds("A person denied this from agent-box (ops).") })
	if _, err := os.Stat(denied); err == nil {
		t.Error("the denied command ran")
	}
	for _, want := range []string{`session "cx": needs-you (permission)`, `("Bash"): allow by "ops"`, `("Bash"): deny by "ops"`} {
		if !strings.Contains(b.supLog.String(), want) {
			t.Errorf("the supervisor's log lacks %q:\n%s", want, b.supLog)
		}
	}
}

// rootAuth is a running auth service whose one agent user is root (the
// test's own uid, so the status socket takes the test's supervisor) and
// whose login ops, logged in, may open it; more is added to its
// configuration. page is the box page ops sees.
type rootAuth struct {
	*authBox
	cookie string
}

func newRootAuth(t *testing.T, more string) rootAuth {
	t.Helper()
	config := `{"domain": "box.test", "users": ["root"], "logins": {"ops": {"users": ["root"]}}` + more + `}`
	a := newAuthBox(t, config, nil)
	a = newAuthBox(t, config, map[string]string{"ops": a.hashPassword("s3cret pass")})
	a.start()
	login := a.do("pages", "POST", "box.test", "/auth/login", url.Values{"login": {"ops"}, "password": {"s3cret pass"}}, "")
	if login.cookie == "" {
		t.Fatalf("login: %d %s", login.code, login.body)
	}
	return rootAuth{a, login.cookie}
}

func (a rootAuth) page() string { return a.do("pages", "GET", "box.test", "/", nil, a.cookie).body }

// decide posts ops's decision on root's request id.
func (a rootAuth) decide(id, d string) answer {
	return a.do("pages", "POST", "box.test", "/auth/decide", url.Values{"user": {"root"}, "request": {id}, "decision": {d}}, a.cookie)
}

// statusSocket is the status listener's path, for the test's supervisor.
func (a rootAuth) statusSocket() string { return a.socks[*contract.Sockets.AuthStatus.FDName] }

// recordingModel is the scripted model on a test server, its request log
// in memory.
type recordingModel struct {
	*httptest.Server
	mu  sync.Mutex
	log strings.Builder
}

func newRecordingModel(t *testing.T) *recordingModel {
	m := &recordingModel{}
	m.Server = httptest.NewServer(&scriptedmodel.Server{Log: writerFunc(func(p []byte) (int, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.log.Write(p)
	})})
	t.Cleanup(m.Close)
	return m
}

// holds reports whether a request's body held text.
func (m *recordingModel) holds(text string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, line := range strings.Split(m.log.String(), "\n") {
		var r scriptedmodel.Record
		if json.Unmarshal([]byte(line), &r) == nil && strings.Contains(string(r.Body), text) {
			return true
		}
	}
	return false
}

// requestIDRe finds a waiting request's id on the box page.
var requestIDRe = regexp.MustCompile(`name="request" value="([0-9a-f]{32})"`)

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
