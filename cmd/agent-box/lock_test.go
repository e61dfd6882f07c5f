package main

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A CLI waiting for the registry lock obeys SIGINT and SIGTERM: it exits
// at once, says nothing changed, and does not apply the change later when
// the lock is released.
func TestSignalDuringALockWaitAbortsWithNothingChanged(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			b := newBox(t, "")
			b.ok("session", "add", "keep")
			before, err := os.ReadFile(b.registryPath())
			if err != nil {
				t.Fatal(err)
			}
			// another writer holds the lock
			lock, err := os.OpenFile(b.registryPath()+".lock", os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Close()
			if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
				t.Fatal(err)
			}
			cmd := b.command(t.Context(), "session", "add", "late")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			time.Sleep(300 * time.Millisecond) // it is waiting for the lock now
			cmd.Process.Signal(sig)
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("the interrupted add exited 0")
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("the add ignored %s while waiting for the lock", sig)
			}
			if !strings.Contains(stderr.String(), "interrupted while waiting for the lock") || !strings.Contains(stderr.String(), "nothing changed") {
				t.Errorf("stderr %q does not say it was interrupted and changed nothing", stderr.String())
			}
			syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
			time.Sleep(200 * time.Millisecond)
			after, err := os.ReadFile(b.registryPath())
			if err != nil || string(after) != string(before) {
				t.Errorf("the registry changed after the interrupted add: %v\n%s", err, after)
			}
		})
	}
}
