package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/journal"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/tmux"
	"github.com/agent-box/agent-box/internal/runtime/usagelimit"
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
		againCh:  make(chan struct{}, 1),
		done:     make(chan struct{}),
		warned:   map[string]bool{},
		limitCh:  make(chan limitMsg, 16),
		turnCh:   make(chan string, 16),
		slots:    usagelimit.NewSlots(contract.UsageLimits.PerMinute),
		draw:     func(time.Duration) time.Duration { return 0 },
	}
	s.cfg.Limits = DefaultLimits()
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
	// the first: the retry of the first immediate launch, which fails
	// (tmux is /bin/false); it stays pending, so no other launch adds one
	want := []time.Duration{againFirst, time.Second, 2 * time.Second, 4 * time.Second, time.Second}
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

// fakeTmux makes s's tmux a script that appends each command line it is
// given (after -N -S SOCKET) to a log and answers new-session and
// respawn-pane with the test's pid, or fails every command when failing.
// It returns a function that reads the log.
func fakeTmux(t *testing.T, s *sup, failing bool) func() []string {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	code := 0
	if failing {
		code = 1
	}
	script := fmt.Sprintf("#!/bin/sh\nshift 3\nprintf '%%s\\n' \"$*\" >>%s\ncase \"$1\" in new-session|respawn-pane) echo %d;; esac\nexit %d\n", log, os.Getpid(), code)
	bin := filepath.Join(dir, "tmux")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s.tm.Bin = bin
	return func() []string {
		b, err := os.ReadFile(log)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return strings.Fields(strings.ReplaceAll(string(b), " ", "_"))
	}
}

// A pane whose last start failed (tmux could not fork; it shows no pid)
// is never respawned: tmux 3.5a crashes respawning such a pane again, and
// every agent of the user dies with it. The session is ended and created
// anew; a pane whose process exited is respawned in place as before.
func TestAPaneThatCouldNotStartIsCreatedAnewNotRespawned(t *testing.T) {
	s, _ := testSup(t)
	commands := fakeTmux(t, s, false)
	e := registry.Session{Name: "x", Agent: "a", Cwd: "/"}
	ctx := context.Background()

	s.launch(ctx, e, &tmux.Pane{Session: "x", ID: "%3", Dead: true, PID: -1}, true)
	want := []string{"kill-session_-t_=x", "new-session_-d_-P_-F_#{pane_pid}_-s_x_--_/bin/agent-box-exec_exec-session_x"}
	if diff := cmp.Diff(want, commands()); diff != "" {
		t.Errorf("tmux commands for a pane that could not start (-want +got):\n%s", diff)
	}

	s.launch(ctx, e, &tmux.Pane{Session: "x", ID: "%3", Dead: true, PID: 4242}, true)
	want = append(want, "respawn-pane_-k_-t_%3_--_/bin/agent-box-exec_exec-session_x_;_display-message_-p_-t_%3_#{pane_pid}")
	if diff := cmp.Diff(want, commands()); diff != "" {
		t.Errorf("tmux commands for a pane whose process exited (-want +got):\n%s", diff)
	}
}

// A session tmux cannot start (the user's tasks at their cap) is tried
// again by a reconcile within seconds, not at the next registry event or
// the 5-minute resync: one timer for every failure, its wait doubling
// while starts keep failing, back to the first wait after one worked.
func TestAStartThatFailsIsTriedAgainWithinSeconds(t *testing.T) {
	s, clock := testSup(t)
	e := registry.Session{Name: "x", Agent: "a", Cwd: "/"}
	ctx := context.Background()

	s.launch(ctx, e, nil, false)
	s.launch(ctx, registry.Session{Name: "y", Agent: "a", Cwd: "/"}, nil, false) // same timer
	if diff := cmp.Diff([]time.Duration{time.Second}, clock.delays); diff != "" {
		t.Fatalf("retry timers after two failed starts (-want +got):\n%s", diff)
	}
	clock.fns[0]()
	select {
	case <-s.againCh:
		s.againPending = false // as the event loop does before its reconcile
	default:
		t.Fatal("the retry timer sent nothing")
	}
	s.launch(ctx, e, nil, false)
	if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second}, clock.delays); diff != "" {
		t.Errorf("retry timers after a start failed again (-want +got):\n%s", diff)
	}
	s.againPending = false
	fakeTmux(t, s, false)
	s.launch(ctx, e, nil, false)
	fakeTmux(t, s, true)
	s.launch(ctx, e, nil, false)
	if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second, time.Second}, clock.delays); diff != "" {
		t.Errorf("retry timers after a start worked and the next failed (-want +got):\n%s", diff)
	}
}
