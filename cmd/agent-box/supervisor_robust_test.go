package main

// Process tests of the supervisor's robustness against what a user (or an
// agent) can do to its files and its control socket: the registry
// removed, moved or replaced, its directories removed, floods of control
// datagrams, control bytes in them. They use the harness in
// harness_test.go; every wait has a deadline.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

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
		for _, running := range []bool{false} {
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
