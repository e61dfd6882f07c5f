package approval

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// claudeInput is Claude Code 2.1.328's permission hook input for a Bash
// call, as measured (the ids shortened).
const claudeInput = `{"session_id":"5b0e","transcript_path":"/home/ada/.claude/projects/-home-ada/5b0e.jsonl","cwd":"/home/ada","prompt_id":"p1","permission_mode":"default","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"echo hi > /home/ada/x.txt","description":"Write hi"},"permission_suggestions":[{"type":"addDirectories","directories":["/home/ada"],"destination":"session"}]}`

// TestClaudesInputBecomesARequestOfCleanText: the command first, then the
// other keys; the session's rules offered; escapes and bidi overrides
// gone; long input cut at its bound.
func TestClaudesInputBecomesARequestOfCleanText(t *testing.T) {
	id := strings.Repeat("ab", 16)
	r, err := FromHook("claude", id, "main", []byte(claudeInput))
	if err != nil {
		t.Fatal(err)
	}
	want := Request{ID: id, Session: "main", Agent: "claude", Tool: "Bash", Input: "echo hi > /home/ada/x.txt\ndescription: Write hi",
		Rules: `{"type":"addDirectories","directories":["/home/ada"],"destination":"session"}`}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := r.Check(); err != nil {
		t.Errorf("check: %v", err)
	}
	hostile := `{"tool_name":"Bash\u001b[2J\u202e","tool_input":{"command":"ls \u001b]8;;https://evil.test\u0007click\u001b]8;;\u0007 \u2066x\u2069 \u200bok\r\n` + strings.Repeat("y", 9000) + `"}}`
	r, err = FromHook("claude", id, "main", []byte(hostile))
	if err != nil {
		t.Fatal(err)
	}
	if r.Tool != "Bash__2J_" || r.Rules != "" || !r.Cut || r.Offers(Allow) || !r.Offers(Deny) {
		t.Errorf("tool %q, rules %q, cut %v: want the tool's odd characters replaced, no rules, cut, only a denial", r.Tool, r.Rules, r.Cut)
	}
	if strings.ContainsAny(r.Input, "\x1b\a\r\u202e\u2066\u2069\u200b") || !strings.HasPrefix(r.Input, "ls ]8;;https://evil.testclick]8;; x ok\n") {
		t.Errorf("input not clean: %q", r.Input[:60])
	}
	if len(r.Input) > contract.Approvals.MaxInputBytes || !strings.HasSuffix(r.Input, "…") {
		t.Errorf("input of %d bytes, want at most %d ending in an ellipsis", len(r.Input), contract.Approvals.MaxInputBytes)
	}
	if err := r.Check(); err != nil {
		t.Errorf("check: %v", err)
	}
	for name, in := range map[string]string{"not JSON": "{", "no tool": `{"tool_input":{}}`} {
		if _, err := FromHook("claude", id, "main", []byte(in)); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
}

// codexInput is Codex 0.171.0's permission hook input for an escalated
// shell call, as measured (the ids shortened): no suggestions, the model's
// justification as the description.
const codexInput = `{"session_id":"019a","turn_id":"t1","transcript_path":"/home/ada/.codex/sessions/r.jsonl","cwd":"/home/ada","hook_event_name":"PermissionRequest","model":"gpt-5.1","permission_mode":"default","tool_name":"Bash","tool_input":{"command":"touch /home/ada/x","description":"needs to write outside the sandbox"}}`

// TestCodexsInputAndOutputAreClaudesShapeWithoutSessionRules: the same
// request text; no "allow for this session" (Codex suggests none, and
// fails a hook that sets rules: an allow-session answer is a plain allow).
func TestCodexsInputAndOutputAreClaudesShapeWithoutSessionRules(t *testing.T) {
	id := strings.Repeat("cd", 16)
	r, err := FromHook("codex", id, "cx", []byte(codexInput))
	if err != nil {
		t.Fatal(err)
	}
	want := Request{ID: id, Session: "cx", Agent: "codex", Tool: "Bash", Input: "touch /home/ada/x\ndescription: needs to write outside the sandbox"}
	if diff := cmp.Diff(want, r); diff != "" || r.Check() != nil {
		t.Errorf("(-want +got):\n%s%v", diff, r.Check())
	}
	for d, want := range map[string]string{
		Allow:        `{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}`,
		AllowSession: `{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}`,
		Deny:         `{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"A person denied this from agent-box (ops)."},"hookEventName":"PermissionRequest"}}`,
	} {
		if got := strings.TrimSpace(string(Output("codex", Answer{Decision: d, By: "ops"}, []byte(codexInput)))); got != want {
			t.Errorf("%s:\ngot  %s\nwant %s", d, got, want)
		}
	}
}

// TestARequestThatIsNotCleanOrNotBoundedIsRefused: what the service
// checks again, whatever the hook sent.
func TestARequestThatIsNotCleanOrNotBoundedIsRefused(t *testing.T) {
	ok := Request{ID: strings.Repeat("0", 32), Session: "main", Agent: "claude", Tool: "Bash", Input: "ls"}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*Request){
		"a short id":               func(r *Request) { r.ID = "abc" },
		"an upper-case id":         func(r *Request) { r.ID = strings.Repeat("A", 32) },
		"a session with a slash":   func(r *Request) { r.Session = "a/b" },
		"an agent that never asks": func(r *Request) { r.Agent = "shell" },
		"no tool":                  func(r *Request) { r.Tool = "" },
		"a tool of two lines":      func(r *Request) { r.Tool = "Bash\nAllowed" },
		"an escape in the input":   func(r *Request) { r.Input = "\x1b[31mred" },
		"a bidi override":          func(r *Request) { r.Input = "ls \u202e" },
		"an input over its bound":  func(r *Request) { r.Input = strings.Repeat("x", contract.Approvals.MaxInputBytes+1) },
	} {
		r := ok
		edit(&r)
		if err := r.Check(); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
}

// TestTheHookPrintsClaudesDecisionShapes: allow, allow with the session's
// suggested rules, deny with the reason, and nothing without a decision.
func TestTheHookPrintsClaudesDecisionShapes(t *testing.T) {
	for _, c := range []struct {
		a    Answer
		want string
	}{
		{Answer{Decision: Allow, By: "ops"}, `{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}`},
		{Answer{Decision: AllowSession, By: "ops"}, `{"hookSpecificOutput":{"decision":{"behavior":"allow","updatedPermissions":[{"type":"addDirectories","directories":["/home/ada"],"destination":"session"}]},"hookEventName":"PermissionRequest"}}`},
		{Answer{Decision: Deny, By: "ops (notification)"}, `{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"A person denied this from agent-box (ops (notification))."},"hookEventName":"PermissionRequest"}}`},
		{Answer{Decision: None}, ``},
	} {
		got := strings.TrimSuffix(string(Output("claude", c.a, []byte(claudeInput))), "\n")
		if got != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.a.Decision, got, c.want)
		}
	}
}

// TestTheHookWaitsAcrossARestartOfTheService: the first connection is cut
// (the service stops), the hook asks again with the same request and gets
// the answer; a missing socket (the supervisor restarts) is tried again;
// the supervisor's 404 is no service, at once; a refusal is final.
func TestTheHookWaitsAcrossARestartOfTheService(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "status.sock")
	r := Request{ID: strings.Repeat("1", 32), Session: "main", Agent: "claude", Tool: "Bash", Input: "ls"}
	var calls atomic.Int32
	serve := func(h http.HandlerFunc) func() {
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: h}
		go srv.Serve(l)
		return func() { srv.Close() }
	}
	stop := serve(func(w http.ResponseWriter, req *http.Request) {
		calls.Add(1)
		panic(http.ErrAbortHandler) // the service stops mid-wait
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan Answer, 1)
	go func() {
		a, err := Wait(ctx, sock, r, 20*time.Millisecond)
		if err != nil {
			t.Errorf("wait: %v", err)
		}
		got <- a
	}()
	for calls.Load() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	stop = serve(func(w http.ResponseWriter, req *http.Request) {
		var again Request
		if err := json.NewDecoder(req.Body).Decode(&again); err != nil || again != r || req.URL.Path != contract.Approvals.Path {
			t.Errorf("asked again with %+v at %s (%v)", again, req.URL.Path, err)
		}
		json.NewEncoder(w).Encode(Answer{Decision: Allow, By: "ops"})
	})
	defer stop()
	if a := <-got; a != (Answer{Decision: Allow, By: "ops"}) {
		t.Errorf("answer %+v", a)
	}

	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	if _, err := Wait(short, filepath.Join(dir, "none.sock"), r, 10*time.Millisecond); err == nil || errors.Is(err, ErrNoService) {
		t.Errorf("no socket (the supervisor restarts): %v, want tries until the hook's time runs out", err)
	}
	stop()
	stop = serve(func(w http.ResponseWriter, req *http.Request) { http.Error(w, "no auth service", http.StatusNotFound) })
	if _, err := Wait(ctx, sock, r, time.Hour); !errors.Is(err, ErrNoService) {
		t.Errorf("the supervisor says there is no auth service: %v", err)
	}
	stop()
	stop = serve(func(w http.ResponseWriter, req *http.Request) {
		http.Error(w, "the request has ended", http.StatusGone)
	})
	start := time.Now()
	if _, err := Wait(ctx, sock, r, time.Hour); err == nil || !strings.Contains(err.Error(), "410") {
		t.Errorf("a refusal: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("a refusal was tried again")
	}
}
