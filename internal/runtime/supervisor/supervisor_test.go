package supervisor

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/journal"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/tmux"
	"github.com/google/go-cmp/cmp"
)

// fakeClock records the delays it is asked to wait and fires on demand.
type fakeClock struct {
	now    time.Time
	delays []time.Duration
	fns    []func()
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.delays = append(c.delays, d)
	c.fns = append(c.fns, f)
	return func() bool { return true }
}

// testSup is a supervisor for tests of its event handling: a fake clock,
// a temporary home, and launches that fail at once (tmux is /bin/false:
// only the attempt matters); agent "a" is known.
func testSup(t *testing.T) (*sup, *fakeClock) {
	t.Helper()
	home := t.TempDir()
	env, err := paths.FromEnv(func(k string) string {
		return map[string]string{"HOME": home, "AGENT_BOX_RUNTIME_DIR": home + "/run"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := &sup{
		cfg:      Config{Env: env, Spawn: "/bin/agent-box-exec", Agents: agents.Table{"a": {Command: "/bin/true"}}, Log: io.Discard},
		log:      journal.New(io.Discard, "agent-box"),
		clock:    clock,
		policy:   defaultPolicy(),
		tm:       &tmux.Server{Bin: "/bin/false", Socket: home + "/none"},
		sessions: map[string]*session{},
		timerCh:  make(chan timerMsg, 16),
		done:     make(chan struct{}),
		warned:   map[string]bool{},
	}
	t.Cleanup(func() { close(s.done) })
	return s, clock
}

// TestDeathsScheduleRestartsThroughTheClock drives the supervisor's death
// handling with a fake clock: which deaths restart at once (a launch
// attempt) and which wait, for how long, without waiting for real.
func TestDeathsScheduleRestartsThroughTheClock(t *testing.T) {
	s, clock := testSup(t)
	e := registry.Session{Name: "x", Agent: "a", Cwd: "/"}
	pane := tmux.Pane{Session: "x", ID: "%0"}
	ctx := context.Background()

	// die runs the session for uptime, then kills it with status 1
	die := func(uptime time.Duration) {
		ss := s.get(e)
		ss.started, ss.waiting = clock.now, false
		clock.now = clock.now.Add(uptime)
		s.died(ctx, e, pane, 1, "")
	}
	die(100 * time.Millisecond) // first quick death: immediate, no timer
	die(100 * time.Millisecond) // 1 s
	die(100 * time.Millisecond) // 2 s
	die(30 * time.Second)       // late death: immediate, count kept
	die(100 * time.Millisecond) // 4 s
	die(61 * time.Second)       // healthy for 60 s: reset, immediate
	die(100 * time.Millisecond) // quick again, counted afresh: immediate
	die(100 * time.Millisecond) // 1 s
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, time.Second}
	if diff := cmp.Diff(want, clock.delays); diff != "" {
		t.Errorf("scheduled delays (-want +got):\n%s", diff)
	}
	if ss := s.get(e); !ss.waiting || ss.obs.NextStart == nil || ss.obs.LastExit == nil || ss.obs.LastExit.Status != 1 {
		t.Errorf("after a delayed death: waiting=%v obs=%+v", ss.waiting, ss.obs)
	}
	// firing the last timer hands the current generation to the event loop
	clock.fns[len(clock.fns)-1]()
	select {
	case m := <-s.timerCh:
		if m.name != "x" || m.gen != s.get(e).gen {
			t.Errorf("timer message %+v, want x at generation %d", m, s.get(e).gen)
		}
	default:
		t.Errorf("firing the timer sent nothing")
	}
	// a stale timer (older generation) is ignored
	s.timerFired(ctx, timerMsg{name: "x"})
	if !s.get(e).waiting {
		t.Errorf("a stale timer cancelled the pending restart")
	}
}
