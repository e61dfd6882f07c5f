package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/attention"
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
	if s, ok := b.registry().Find("a"); !ok || !s.Stopped {
		t.Errorf("after exit 0 the session is not stopped: %+v", s)
	}
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
