package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/sessionstate"
)

// attentionOf is session name's attention state as `session ls --json`
// shows it ("" with no state).
func (b *box) attentionOf(name string) string {
	b.t.Helper()
	var ls []sessionstate.Entry
	if err := json.Unmarshal([]byte(b.ok("session", "ls", "--json")), &ls); err != nil {
		b.t.Fatal(err)
	}
	for _, e := range ls {
		if e.Name == name && e.Attention != nil {
			st := string(e.Attention.State)
			if e.Attention.Reason != "" {
				st += " (" + e.Attention.Reason + ")"
			}
			return st
		}
	}
	return ""
}

// waitAttention waits (30 s at most) until session name shows want.
func (b *box) waitAttention(name, want string) {
	b.t.Helper()
	b.waitFor(30*time.Second, "session "+name+" shows "+want, func() bool { return b.attentionOf(name) == want })
}

// TestAttentionStatesFromHooksTmuxAndExits: a session whose program plays
// an agent runs agent-box's hook as Claude Code would (`agent-hook claude
// event ...`, Claude's inputs) under the real supervisor and tmux. Its
// reports move the state `session ls` shows; a report from a program the
// agent started, and one over the input limit, move nothing; the
// terminal's bell while no client shows the session needs you; a client
// attaching ends that; exit 0 is exited.
func TestAttentionStatesFromHooksTmuxAndExits(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	step := filepath.Join(b.dir, "step")
	script := `AB="$1"
printf '{"hook_event_name":"Notification","message":"Claude needs your permission","notification_type":"permission_prompt"}' | "$AB" agent-hook claude event Notification
read x
"$AB" agent-hook claude event UserPromptSubmit </dev/null
sh -c '"$0" agent-hook claude event Stop </dev/null; true' "$AB"
{ printf '{"notification_type":"permission_prompt","message":"'; head -c 70000 /dev/zero | tr '\0' x; printf '"}'; } | "$AB" agent-hook claude event Notification
echo 1 > "$2"
read x
"$AB" agent-hook claude event Stop </dev/null
read x
printf '\a'
read x
exit 0`
	b.startSupervisor()
	b.ok("session", "add", "a", "--agent", "sh", "--", script, "agent", testBinary(t), step)
	b.waitRunning("a")
	ctx := context.Background()
	enter := func() {
		t.Helper()
		if err := b.tm.SendText(ctx, "a", ""); err != nil {
			t.Fatal(err)
		}
	}

	b.waitAttention("a", "needs-you (permission)")
	if out := b.ok("session", "ls"); !strings.Contains(out, "needs-you (permission)") {
		t.Errorf("the session ls table does not show the state:\n%s", out)
	}
	enter()
	b.waitFor(5*time.Second, "the script's second step", func() bool { _, err := os.Stat(step); return err == nil })
	// the refused reports were sent before the step file: give a late
	// datagram the time the accepted ones take
	time.Sleep(300 * time.Millisecond)
	if got := b.attentionOf("a"); got != "working" {
		t.Fatalf("after the prompt, a nested program's Stop and an oversized Notification: %q, want working", got)
	}
	if !strings.Contains(b.supLog.String(), `session "a": working`) {
		t.Errorf("the supervisor did not log the change:\n%s", b.supLog)
	}
	enter()
	b.waitAttention("a", "finished (turn)")
	enter()
	b.waitAttention("a", "needs-you (bell)")

	// a client shows the session (control mode: no terminal needed)
	cl := exec.Command(b.tm.Bin, "-N", "-S", b.tm.Socket, "-C", "attach-session", "-t", "=a")
	cl.Env = b.env
	in, err := cl.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cl.Process.Kill(); cl.Wait() }()
	b.waitAttention("a", "working")

	enter()
	b.waitAttention("a", "exited (exit)")
	b.waitFor(10*time.Second, "the exit 0 stops the session in the registry", func() bool {
		s, ok := b.registry().Find("a")
		return ok && s.Stopped
	})
	// the supervisor logged every change once, in order
	var seq []string
	for _, l := range strings.Split(b.supLog.String(), "\n") {
		_, st, ok := strings.Cut(l, `session "a": `)
		if name, _, _ := strings.Cut(st, " ("); ok && attention.Known(attention.State(name)) {
			seq = append(seq, st)
		}
	}
	want := []string{"working", "needs-you (permission)", "working", "finished (turn)", "needs-you (bell)", "working", "exited (exit)"}
	if strings.Join(seq, "|") != strings.Join(want, "|") {
		t.Errorf("the supervisor's lines about a: %q, want %q", seq, want)
	}
}

// TestSilenceAfterOutputIsFinishedForAgentsWithoutHooks: with
// AGENT_BOX_SILENCE_AFTER=1s a shell-like session that printed and fell
// silent is finished; a session of an agent with hooks (setup claude) that
// falls silent is not (its hooks say more); the variable does not reach
// the sessions.
func TestSilenceAfterOutputIsFinishedForAgentsWithoutHooks(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	b.startServer() // the sessions unit does not have the supervisor's variable
	b.setEnv("AGENT_BOX_SILENCE_AFTER", "1s")
	// an agent with setup "claude" whose program is a plain shell
	table := filepath.Join(b.dir, "agents.json")
	data, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["hooked"] = map[string]any{"command": shBin, "args": []string{"-c"}, "setup": "claude"}
	data, _ = json.Marshal(m)
	if err := os.WriteFile(table, data, 0o644); err != nil {
		t.Fatal(err)
	}
	env := filepath.Join(b.dir, "env-of-quiet")
	b.startSupervisor()
	b.ok("session", "add", "quiet", "--agent", "sh", "--", `echo output; env > "$1"; exec sleep 100000`, "x", env)
	b.ok("session", "add", "hooked", "--agent", "hooked", "--", `echo output; exec sleep 100000`)
	b.waitAttention("quiet", "finished (silence)")
	time.Sleep(time.Second) // the hooked session fell silent as long ago
	if got := b.attentionOf("hooked"); got != string(attention.Working) {
		t.Errorf("the silent session of an agent with hooks shows %q, want working", got)
	}
	if data, err := os.ReadFile(env); err != nil || strings.Contains(string(data), "AGENT_BOX_SILENCE_AFTER") {
		t.Errorf("the session's environment (%v) holds AGENT_BOX_SILENCE_AFTER:\n%s", err, data)
	}
}

// TestTheSupervisorReportsItsUsersStatesToTheAuthService: with the auth
// service's status socket (a stand-in that keeps what it is sent), every
// change reaches it as the whole report of the user's states, only the
// contract's names; a session the agent's exit 0 stopped stays in it as
// exited; a removed one leaves it.
func TestTheSupervisorReportsItsUsersStatesToTheAuthService(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	sock := filepath.Join(b.dir, "status.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var last string
	var reports int
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == contract.Approvals.Reply.Path {
			<-r.Context().Done() // the supervisor's poll for replies: none come
			return
		}
		data, _ := io.ReadAll(r.Body)
		if _, err := attention.ParseReport(data); err != nil || r.Method != http.MethodPut {
			t.Errorf("%s %s: %q is not a report: %v", r.Method, r.URL.Path, data, err)
		}
		mu.Lock()
		last, reports = string(data), reports+1
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go srv.Serve(l)
	defer srv.Close()
	b.setEnv("AGENT_BOX_TEST_AUTH_STATUS", sock)
	reported := func(want string) {
		t.Helper()
		b.waitFor(10*time.Second, "the auth service has "+strconv.Quote(want), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return last == want
		})

	}
	b.startSupervisor()
	// the hook's text (an escape sequence in the message) never travels
	script := `printf '%s' '{"notification_type":"permission_prompt","message":"\u001b]52;c;x\u0007 rm -rf"}' | "$1" agent-hook claude event Notification; read x; exit 0`
	b.ok("session", "add", "a", "--agent", "sh", "--", script, "agent", testBinary(t))
	b.ok("session", "add", "z", "--agent", "sleep")
	reported("a needs-you permission\nz working\n")
	if err := b.tm.SendText(context.Background(), "a", ""); err != nil {
		t.Fatal(err)
	}
	reported("a exited exit\nz working\n")
	b.ok("session", "rm", "a")
	reported("z working\n")
	mu.Lock()
	t.Logf("%d reports for 5 changes", reports)
	mu.Unlock()
}

// TestAUsageLimitIsScheduledAtTheResetClaudesTranscriptHolds: a session's
// agent reports Claude's StopFailure (error rate_limit) through agent-box's
// hook, naming a transcript whose newest refusal is the account's 5-hour
// limit (the record Claude Code 2.1.328 writes); the real supervisor makes
// the session limited, its next try at that reset plus the jitter, try 1,
// and says so in its log and in session ls.
func TestAUsageLimitIsScheduledAtTheResetClaudesTranscriptHolds(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	reset := time.Now().Add(3 * time.Hour).Truncate(time.Second)
	tr := filepath.Join(b.dir, "transcript.jsonl")
	record := `{"type":"user","message":{"content":"go"}}` + "\n" +
		`{"type":"assistant","apiError":"usage_limit_reached","apiErrorParams":{"rate_limit_info":{"status":"rejected","resetsAt":` + strconv.FormatInt(reset.Unix(), 10) + `,"rateLimitType":"five_hour"}},"error":"rate_limit","isApiErrorMessage":true,"apiErrorStatus":429}` + "\n"
	if err := os.WriteFile(tr, []byte(record), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `printf '{"hook_event_name":"StopFailure","error":"rate_limit","last_assistant_message":"You have hit your 5-hour limit","transcript_path":"%s"}' "$2" | "$1" agent-hook claude event StopFailure
exec sleep 100000`
	b.startSupervisor()
	b.ok("session", "add", "a", "--agent", "shr", "--", script, "agent", testBinary(t), tr)
	b.waitRunning("a")
	b.waitAttention("a", "limited (limit)")

	var ls []sessionstate.Entry
	if err := json.Unmarshal([]byte(b.ok("session", "ls", "--json")), &ls); err != nil {
		t.Fatal(err)
	}
	var a *attention.Status
	for _, e := range ls {
		if e.Name == "a" {
			a = e.Attention
		}
	}
	jitter := contract.Duration(contract.UsageLimits.Jitter)
	if a == nil || a.Try != 1 || a.Until.Before(reset) || a.Until.After(reset.Add(jitter)) {
		t.Fatalf("attention %+v, want try 1 at the reset %s plus at most %s", a, reset, jitter)
	}
	if !strings.Contains(b.supLog.String(), "(the agent named "+reset.UTC().Format(time.RFC3339)+"; the try at "+a.Until.UTC().Format("2006-01-02T15:04:05.000Z")+")") {
		t.Errorf("the supervisor's log does not say the reset the agent named and the try's exact time:\n%s", b.supLog)
	}
	if out := b.ok("session", "ls"); !strings.Contains(out, "limited until "+a.Until.Local().Format("15:04")+" (try 1)") {
		t.Errorf("session ls does not say when the try is:\n%s", out)
	}
}
