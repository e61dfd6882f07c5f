package main

// Process tests of the supervisor's robustness against what a user (or an
// agent) can do to its files and its control socket: the registry
// removed, moved or replaced, its directories removed, floods of control
// datagrams, control bytes in them. They use the harness in
// harness_test.go; every wait has a deadline.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/registry"
)

// listed reports whether the registry on disk is valid and lists every
// one of names, not stopped.
func (b *box) listed(names ...string) bool {
	r, err := registry.Load(b.registryPath())
	if err != nil {
		return false
	}
	for _, n := range names {
		if s, ok := r.Find(n); !ok || s.Stopped {
			return false
		}
	}
	return true
}

// samePIDs fails the test unless each session runs with the pid it had.
func (b *box) samePIDs(what string, pids map[string]int) {
	b.t.Helper()
	for name, pid := range pids {
		if p, ok := b.running(name); !ok || p.PID != pid {
			b.t.Errorf("%s: session %s runs %v with pid %d, want the untouched pid %d\nsupervisor log:\n%s",
				what, name, ok, p.PID, pid, b.supLog)
		}
	}
}

// roundTrip makes the supervisor handle one more registry event to its
// end: a session added by the CLI runs.
func (b *box) roundTrip(name string) {
	b.t.Helper()
	b.ok("session", "add", name, "--agent", "sleep")
	b.waitRunning(name)
}

// writeRegistry replaces the registry by rename, as every writer does.
func (b *box) writeRegistry(r *registry.Registry) {
	b.t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		b.t.Fatal(err)
	}
	tmp := b.registryPath() + ".by-hand"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		b.t.Fatal(err)
	}
	if err := os.Rename(tmp, b.registryPath()); err != nil {
		b.t.Fatal(err)
	}
}

func TestRegistryRemovedMovedOrReplacedKillsNoSession(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(b *box)
		log    string
	}{
		{"removed", func(b *box) {
			if err := os.Remove(b.registryPath()); err != nil {
				b.t.Fatal(err)
			}
		}, "was missing: rebuilt"},
		{"moved away", func(b *box) {
			if err := os.Rename(b.registryPath(), filepath.Join(b.dir, "sessions.json.moved")); err != nil {
				b.t.Fatal(err)
			}
		}, "was missing: rebuilt"},
		{"replaced by one that omits a running session", func(b *box) {
			r := b.registry()
			var keep []registry.Session
			for _, s := range r.Sessions {
				if s.Name != "b" {
					keep = append(keep, s)
				}
			}
			r.Sessions = keep
			b.writeRegistry(r)
		}, `session "b" is missing from the registry but was not removed with 'session rm': written back`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// a comes from the seed, b only from the CLI: only the
			// supervisor's memory can bring b back
			bx := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}]}`)
			bx.startSupervisor()
			bx.ok("session", "add", "b", "--agent", "sleep", "--", "1")
			pids := map[string]int{"a": bx.waitRunning("a").PID, "b": bx.waitRunning("b").PID}
			tc.change(bx)
			bx.waitFor(10*time.Second, "the registry lists a and b again", func() bool { return bx.listed("a", "b") })
			bx.roundTrip("c")
			bx.samePIDs("after the registry was "+tc.name, pids)
			if b, _ := bx.registry().Find("b"); len(b.Args) != 1 || b.Args[0] != "1" || b.Agent != "sleep" || b.Cwd != bx.home {
				t.Errorf("b written back as %+v, want agent sleep, args [1], cwd %s", b, bx.home)
			}
			if n := strings.Count(bx.supLog.String(), tc.log); n != 1 {
				t.Errorf("log has %d lines with %q, want 1:\n%s", n, tc.log, bx.supLog)
			}
		})
	}
}

func TestDeletedRegistryIsRebuiltWithTheLiveSessions(t *testing.T) {
	t.Parallel()
	b := newBox(t, "") // no seed: the rebuilt registry holds exactly the live sessions
	b.startSupervisor()
	pids := map[string]int{}
	for _, n := range []string{"x", "y"} {
		b.ok("session", "add", n, "--agent", "sleep")
		pids[n] = b.waitRunning(n).PID
	}
	if err := os.Remove(b.registryPath()); err != nil {
		t.Fatal(err)
	}
	b.waitFor(10*time.Second, "the registry is rebuilt", func() bool { return b.listed("x", "y") })
	if got := len(b.registry().Sessions); got != 2 {
		t.Errorf("rebuilt registry has %d sessions, want 2", got)
	}
	b.samePIDs("after the registry was deleted", pids)
	if log := b.supLog.String(); !strings.Contains(log, `was missing: rebuilt with the supervised sessions ["x", "y"]`+"\n"+``) {
		t.Errorf("the rebuild is not logged:\n%s", log)
	}
}

func TestSessionRmAndStopStillEndSessionsAndStayEnded(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	b.startSupervisor()
	for _, n := range []string{"gone", "parked", "kept"} {
		b.ok("session", "add", n, "--agent", "sleep")
		b.waitRunning(n)
	}
	kept := map[string]int{"kept": b.waitRunning("kept").PID}
	b.ok("session", "rm", "gone")
	b.waitGone("gone")
	b.ok("session", "stop", "parked")
	b.waitGone("parked")
	// the registry goes away: only what still runs is written back
	if err := os.Remove(b.registryPath()); err != nil {
		t.Fatal(err)
	}
	b.waitFor(10*time.Second, "the registry is rebuilt", func() bool { return b.listed("kept") })
	b.roundTrip("probe")
	r := b.registry()
	for _, n := range []string{"gone", "parked"} {
		if _, ok := r.Find(n); ok {
			t.Errorf("ended session %s written back into the registry", n)
		}
		if _, ok := b.panes()[n]; ok {
			t.Errorf("ended session %s runs again", n)
		}
	}
	b.samePIDs("after rm, stop and a rebuild", kept)
}

func TestTmuxSessionNotStartedByAgentBoxIsLeftAlone(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	b.startSupervisor()
	own := exec.Command(tmuxBin, "-S", b.tm.Socket, "new-session", "-d", "-s", "mine", sleepBin, "100000")
	own.Env = b.env
	if out, err := own.CombinedOutput(); err != nil {
		t.Fatalf("creating a session on the supervisor's server: %v\n%s", err, out)
	}
	pid := b.waitRunning("mine").PID
	b.roundTrip("x")
	b.roundTrip("y")
	b.samePIDs("after two reconciles", map[string]int{"mine": pid})
	const line = `tmux session "mine" was not started by agent-box and is not in the registry: left alone`
	if n := strings.Count(b.supLog.String(), line); n != 1 {
		t.Errorf("log has %d lines %q, want 1:\n%s", n, line, b.supLog)
	}
}

// removeAll is `rm -rf`, retried while the supervisor writes into the
// directory at the same moment (ENOTEMPTY).
func removeAll(t *testing.T, dir string) {
	t.Helper()
	var err error
	for i := 0; i < 5; i++ {
		if err = os.RemoveAll(dir); err == nil {
			return
		}
	}
	t.Fatal(err)
}

func TestAddAfterConfigDirectoryRemovalIsLiveWithinASecond(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{".config/agent-box", ".config"} {
		for _, running := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s removed, a session running %v", dir, running), func(t *testing.T) {
				t.Parallel()
				b := newBox(t, "")
				b.startSupervisor()
				pids := map[string]int{}
				if running {
					b.ok("session", "add", "a", "--agent", "sleep")
					pids["a"] = b.waitRunning("a").PID
				}
				removeAll(t, filepath.Join(b.home, dir))
				for _, n := range []string{"x", "y"} {
					b.ok("session", "add", n, "--agent", "sleep")
					b.waitFor(time.Second, fmt.Sprintf("%s runs within a second of its add", n), func() bool {
						_, ok := b.running(n)
						return ok
					})
				}
				b.samePIDs("after the removal", pids)
			})
		}
	}
}
