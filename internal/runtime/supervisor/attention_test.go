package supervisor

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/control"
	"github.com/agent-box/agent-box/internal/runtime/observe"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/tmux"
)

// TestAttentionFollowsWhatTheSupervisorSees drives one session through
// starts, an agent's reports, quick deaths, a start that stays up and an
// exit 0, with a fake clock, and reads the state back from the
// observation file each time (what `session ls` shows).
func TestAttentionFollowsWhatTheSupervisorSees(t *testing.T) {
	s, clock := testSup(t)
	env := s.cfg.Env
	e := registry.Session{Name: "x", Agent: "a", Cwd: "/"}
	pane := tmux.Pane{Session: "x", ID: "%0"}
	ctx := context.Background()
	pid := os.Getpid() // a live process to watch; it never exits here

	want := func(step string, st attention.State, reason string) {
		t.Helper()
		obs, err := observe.Load(env.ObservationsDir(), "x")
		if err != nil {
			t.Fatal(err)
		}
		var got attention.Status
		if obs.Attention != nil {
			got = *obs.Attention
		}
		if got.State != st || got.Reason != reason {
			t.Fatalf("%s: attention %+v in the observation file, want %s (%s)", step, got, st, reason)
		}
	}
	report := func(st attention.State, reason string) {
		r, ok := control.Parse(control.Attend("x", st, reason).Format())
		if !ok {
			t.Fatalf("the report %s %s does not parse", st, reason)
		}
		s.handleMessage(ctx, datagram{data: r.Format(), size: len(r.Format())})
	}

	report(attention.NeedsYou, "permission")
	want("a report before the session is supervised changes nothing", "", "")
	ss := s.get(e)
	s.started(ss, "x", pid, false)
	want("started", attention.Working, "")
	report(attention.NeedsYou, "permission")
	want("the agent asks", attention.NeedsYou, "permission")
	report(attention.Working, "")
	want("the agent works again", attention.Working, "")
	report(attention.Finished, "turn")
	want("the turn ended", attention.Finished, "turn")

	die := func(uptime time.Duration, status int) {
		ss.started, ss.waiting = clock.now, false
		clock.now = clock.now.Add(uptime)
		s.died(ctx, e, pane, status, "")
	}
	die(100*time.Millisecond, 1) // first quick death: restarted at once
	want("a first quick death restarts (the launch failed here)", attention.Finished, "turn")
	die(100*time.Millisecond, 1)
	want("a second quick death waits: crash-looping", attention.CrashLooping, "exit")
	report(attention.Working, "")
	want("no program runs while the restart waits", attention.CrashLooping, "exit")

	n := len(clock.fns)
	s.started(ss, "x", pid, true)
	want("a restart keeps crash-looping", attention.CrashLooping, "exit")
	if len(clock.fns) != n+1 || clock.delays[n] != s.policy.QuickWindow {
		t.Fatalf("no healthy check after the quick window was scheduled: %v", clock.delays[n:])
	}
	clock.fns[n]()
	s.timerFired(ctx, <-s.timerCh)
	want("the start stayed up for the quick window", attention.Working, "")

	die(time.Minute, 0)
	want("exit 0", attention.Exited, "exit")
}
