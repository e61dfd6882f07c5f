package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/control"
	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/agent-box/agent-box/internal/runtime/registry"
)

// codexLine is one line of a Codex rollout (its event_msg shape).
func codexLine(payload string) string { return `{"type":"event_msg","payload":` + payload + "}\n" }

// TestACodexTurnsEndIsReadFromItsRollout: Codex tells no hook of a failed
// turn, so while its session works the supervisor reads the rollout the
// conversation names every turnEvery: a turn refused at the usage limit
// makes it limited with the reset its 100 % window names, and is told
// once; after the resume, the resumed turn's end without error is left to
// the Stop hook; a turn failing otherwise needs a person; a session that
// no longer works is not read.
func TestACodexTurnsEndIsReadFromItsRollout(t *testing.T) {
	s, clock, log := limitSup(t)
	s.cfg.Agents["cx"] = agents.Agent{Command: "/bin/codex", ResumeArgs: []string{"resume", "{id}"}, PromptArgs: []string{"--", "{prompt}"}, Setup: "codex"}
	e := registry.Session{Name: "x", Agent: "cx", Cwd: "/"}
	if err := registry.Update(context.Background(), s.cfg.Env.Registry(), func(r *registry.Registry) error { return r.Add(e) }); err != nil {
		t.Fatal(err)
	}
	rollout := filepath.Join(s.cfg.Env.Home, "rollout.jsonl")
	conversation.Update(context.Background(), s.cfg.Env.ConversationsDir(), "x", func(r *conversation.Record) error {
		r.ID, r.Transcript = "019a", rollout
		return nil
	})
	appendTo := func(lines ...string) {
		f, err := os.OpenFile(rollout, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(strings.Join(lines, ""))
		f.Close()
	}
	// next fires the newest timer, which must be the turn's read.
	next := func() {
		t.Helper()
		i := len(clock.fns) - 1
		if i < 0 || clock.delays[i] != turnEvery {
			t.Fatalf("no read of the turn armed (timers %v)", clock.delays)
		}
		s.fire(clock, i)
	}
	s.started(s.get(e), "x", os.Getpid(), false)
	appendTo(codexLine(`{"type":"task_started","turn_id":"t1"}`))
	s.say(t, control.Attend("x", attention.Working, ""))
	next()
	if st := status(t, s, "x"); st.State != attention.Working {
		t.Fatalf("a turn still open: %+v", st)
	}
	reset := clock.now.Add(3 * time.Hour).Truncate(time.Second)
	appendTo(codexLine(`{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":100.0,"window_minutes":300,"resets_at":`+strconv.FormatInt(reset.Unix(), 10)+`}}}`),
		codexLine(`{"type":"task_complete","turn_id":"t1","last_agent_message":null,"error":{"message":"You’ve hit your usage limit.","codex_error_info":"usage_limit_exceeded"}}`))
	next()
	st := status(t, s, "x")
	if st.State != attention.Limited || st.Try != 1 || !st.Until.Equal(reset) {
		t.Fatalf("a turn refused at the usage limit: %+v, want limited, try 1 at the reset the rollout names", st)
	}
	if !strings.Contains(log.String(), `session "x": its agent's log says the turn ended: at the account's usage limit`) {
		t.Errorf("log:\n%s", log)
	}
	n := len(clock.fns)
	s.say(t, control.Attend("x", attention.Working, "")) // a person's prompt
	if st := status(t, s, "x"); st.State != attention.Working {
		t.Fatalf("a person's prompt: %+v", st)
	}
	next() // the rollout still ends with t1: told already
	if st := status(t, s, "x"); st.State != attention.Working || len(clock.fns) != n+2 {
		t.Fatalf("the same turn told again: %+v (timers %d, want %d)", st, len(clock.fns), n+2)
	}
	appendTo(codexLine(`{"type":"task_started","turn_id":"t2"}`),
		codexLine(`{"type":"task_complete","turn_id":"t2","error":{"message":"We’re currently experiencing high demand","codex_error_info":"internal_server_error"}}`))
	next()
	if st := status(t, s, "x"); st.State != attention.NeedsYou || st.Reason != attention.ReasonError {
		t.Fatalf("a turn failing otherwise: %+v, want needs-you (error)", st)
	}
	n = len(clock.fns)
	s.turnDue("x") // a read that was due: the session no longer works
	if len(clock.fns) != n {
		t.Errorf("a session that does not work was read again (timers %d, want %d)", len(clock.fns), n)
	}
}

// TestACodexTurnsEndIsToldOnceAcrossSupervisorsAndLongTurns: the turn
// told is kept in the observation file, so the next supervisor does not
// tell it again; a turn whose start is more than codexTail back still
// counts by its end; once the newest turn has ended and the grace after
// the event is over, the reads stop until the next event.
func TestACodexTurnsEndIsToldOnceAcrossSupervisorsAndLongTurns(t *testing.T) {
	s, clock, _ := limitSup(t)
	s.cfg.Agents["cx"] = agents.Agent{Command: "/bin/codex", ResumeArgs: []string{"resume", "{id}"}, PromptArgs: []string{"--", "{prompt}"}, Setup: "codex"}
	e := registry.Session{Name: "x", Agent: "cx", Cwd: "/"}
	registry.Update(context.Background(), s.cfg.Env.Registry(), func(r *registry.Registry) error { return r.Add(e) })
	rollout := filepath.Join(s.cfg.Env.Home, "rollout.jsonl")
	conversation.Update(context.Background(), s.cfg.Env.ConversationsDir(), "x", func(r *conversation.Record) error {
		r.ID, r.Transcript = "019a", rollout
		return nil
	})
	filler := codexLine(`{"type":"agent_reasoning","text":"` + strings.Repeat("x", 4000) + `"}`)
	data := codexLine(`{"type":"task_started","turn_id":"t1"}`) + strings.Repeat(filler, 300) + // 1.2 MB of the turn
		codexLine(`{"type":"task_complete","turn_id":"t1","error":{"message":"x","codex_error_info":"internal_server_error"}}`)
	os.WriteFile(rollout, []byte(data), 0o600)
	s.started(s.get(e), "x", os.Getpid(), false)
	s.say(t, control.Attend("x", attention.Working, ""))
	s.fire(clock, len(clock.fns)-1)
	if st := status(t, s, "x"); st.State != attention.NeedsYou || st.Reason != attention.ReasonError {
		t.Fatalf("a long turn's failed end: %+v, want needs-you (error)", st)
	}

	// the next supervisor, on the same home, finds x working again (a
	// person's prompt) with the rollout still ending with t1
	s2, clock2 := testSup(t)
	s2.cfg.Env, s2.cfg.Agents = s.cfg.Env, s.cfg.Agents
	ss := s2.get(e)
	s2.started(ss, "x", os.Getpid(), false)
	s2.say(t, control.Attend("x", attention.Working, ""))
	if len(clock2.fns) == 0 || clock2.delays[len(clock2.fns)-1] != turnEvery {
		t.Fatalf("no read armed: %v", clock2.delays)
	}
	s2.fire(clock2, len(clock2.fns)-1)
	if st := status(t, s2, "x"); st.State != attention.Working {
		t.Fatalf("the next supervisor told t1 again: %+v", st)
	}
	// the grace over, the newest turn ended: no more reads
	clock2.now = clock2.now.Add(turnGrace)
	n := len(clock2.fns)
	s2.fire(clock2, n-1)
	if len(clock2.fns) != n {
		t.Errorf("reads go on after the grace with no open turn (timers %d, want %d)", len(clock2.fns), n)
	}
}
