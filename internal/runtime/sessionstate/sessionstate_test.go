package sessionstate

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/observe"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/peer"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/sessionsrv"
	"github.com/agent-box/agent-box/internal/runtime/state"
	"github.com/agent-box/agent-box/internal/runtime/tmux"
)

// world is a HOME with a registry of four sessions and, when asked, a
// state.json naming this (live) process and a tmux server on the runtime
// socket where "run" is alive, "dead" has exited (remain-on-exit) and
// "gone" does not exist.
func world(t *testing.T, supervisor bool) (paths.Env, string) {
	t.Helper()
	bin, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("tmux is required on PATH: %v\nhint: run 'make deps'", err)
	}
	home := t.TempDir()
	rt, err := os.MkdirTemp("", "ss") // unix socket paths are short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	e, err := paths.FromEnv(func(k string) string {
		return map[string]string{"HOME": home, "AGENT_BOX_RUNTIME_DIR": rt}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now().UTC()
	err = registry.Update(ctx, e.Registry(), func(r *registry.Registry) error {
		for _, n := range []string{"run", "dead", "gone", "park"} {
			if err := r.Add(registry.Session{Name: n, Agent: "sh", Cwd: home, Stopped: n == "park", Created: now, Updated: now}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := observe.Save(e.ObservationsDir(), observe.Session{Name: "run", Restarts: 3, LastStart: lastStart}); err != nil {
		t.Fatal(err)
	}
	if !supervisor {
		return e, bin
	}
	st := state.State{Format: state.Format, PID: os.Getpid(), Spawn: map[string]string{"sh": "now"}}
	if err := state.Write(e.StateFile(), st); err != nil {
		t.Fatal(err)
	}
	// the server as the sessions unit runs it (this test's cgroup stands
	// for that unit)
	argv, err := sessionsrv.Prepare(e, bin)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	srv := &tmux.Server{Bin: bin, Socket: e.TmuxSocket(), Env: cmd.Env}
	for deadline := time.Now().Add(10 * time.Second); !srv.Alive(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("tmux -D did not answer within 10 s")
		}
	}
	if _, err := srv.NewSession(ctx, "run", []string{"sleep", "1000"}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.NewSession(ctx, "dead", []string{"sh", "-c", "exit 3"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps, _ := srv.ListPanes(ctx)
		dead := false
		for _, p := range ps {
			dead = dead || p.Session == "dead" && p.Dead
		}
		if dead {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pane of \"dead\" did not exit within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return e, bin
}

func TestMain(m *testing.M) {
	// no units here: the test's own cgroup stands for the sessions unit
	sessionsrv.InUnit = func(string) func(int) error { return inUnit }
	os.Exit(m.Run())
}

var inUnit = peer.InSameCgroup

func TestStatesAreThoseOfSessionLs(t *testing.T) {
	outside := func(int) error { return errors.New("in a login's cgroup") }
	for _, tc := range []struct {
		name       string
		supervisor bool
		unit       func(int) error
		want       map[string]string
	}{
		{"supervisor and tmux", true, peer.InSameCgroup, map[string]string{"run": Running, "dead": Dead, "gone": Absent, "park": Stopped}},
		{"no supervisor", false, peer.InSameCgroup, map[string]string{"run": Unknown, "dead": Unknown, "gone": Unknown, "park": Stopped}},
		{"a server outside the sessions unit is not asked", true, outside, map[string]string{"run": Unknown, "dead": Unknown, "gone": Unknown, "park": Stopped}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, bin := world(t, tc.supervisor)
			inUnit = tc.unit
			defer func() { inUnit = peer.InSameCgroup }()
			got, err := List(context.Background(), e, bin, []string{"PATH=" + os.Getenv("PATH")})
			if err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for _, le := range got {
				names = append(names, le.Name)
				if le.State != tc.want[le.Name] {
					t.Errorf("%s: state %q, want %q", le.Name, le.State, tc.want[le.Name])
				}
				if le.Args == nil {
					t.Errorf("%s: nil args (JSON would say null)", le.Name)
				}
			}
			if want := []string{"dead", "gone", "park", "run"}; len(names) != 4 || names[0] != want[0] || names[3] != want[3] {
				t.Errorf("order %q, want %q", names, want)
			}
			if got[3].Restarts != 3 {
				t.Errorf("run: restarts %d, want 3 (from its observation file)", got[3].Restarts)
			}
			if got[3].LastStart == nil || !got[3].LastStart.Equal(lastStart) || got[0].LastStart != nil {
				t.Errorf("last starts: run %v (want %v), dead %v (want none)", got[3].LastStart, lastStart, got[0].LastStart)
			}
		})
	}
}

// lastStart is the launch time of "run" in its observation file.
var lastStart = time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)

func TestACorruptRegistryIsAnError(t *testing.T) {
	e, bin := world(t, false)
	if err := os.WriteFile(e.Registry(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := List(context.Background(), e, bin, nil)
	var ce *registry.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want *registry.CorruptError", err)
	}
}

func TestASessionStartedWithAnOlderConfigurationSaysRestartToApply(t *testing.T) {
	e, bin := world(t, true)
	for name, print := range map[string]string{"run": "now", "dead": "before", "gone": ""} {
		if err := observe.Save(e.ObservationsDir(), observe.Session{Name: name, Spawn: print}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := List(context.Background(), e, bin, []string{"PATH=" + os.Getenv("PATH")})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"dead": true, "gone": false, "park": false, "run": false}
	for _, le := range got {
		if le.RestartToApply != want[le.Name] {
			t.Errorf("%s: restartToApply %v, want %v", le.Name, le.RestartToApply, want[le.Name])
		}
	}
}
