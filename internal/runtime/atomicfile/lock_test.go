package atomicfile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/hostilefile"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// holdEnv makes the test binary a lock holder: it takes the lock named by
// the variable, prints "locked" and holds it until stdin is closed.
const holdEnv = "ATOMICFILE_TEST_HOLD"

func TestMain(m *testing.M) {
	if p := os.Getenv(holdEnv); p != "" {
		unlock, ok, err := TryLock(p)
		if err != nil || !ok {
			fmt.Fprintln(os.Stderr, "holder:", ok, err)
			os.Exit(1)
		}
		fmt.Println("locked")
		io.Copy(io.Discard, os.Stdin)
		unlock()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holdLock runs a holder process on lockPath and returns its pid once it
// holds the lock; the lock is released when the test ends.
func holdLock(t *testing.T, lockPath string) int {
	pid, _ := holdLockUntil(t, lockPath)
	return pid
}

// holdLockUntil is holdLock with a function that ends the holder (it
// releases the lock as it exits).
func holdLockUntil(t *testing.T, lockPath string) (pid int, release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+lockPath)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { stdin.Close(); cmd.Wait(); cancel() }) }
	t.Cleanup(release)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("holder said %q, %v", line, err)
	}
	return cmd.Process.Pid, release
}

func TestUpdateReturnsPromptlyWhenCtxEndsWhileAnotherProcessHoldsTheLock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("before"), 0o600); err != nil {
		t.Fatal(err)
	}
	holdLock(t, p+".lock")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	called := false
	start := time.Now()
	err := hostilefile.Within(t, func() error {
		return Update(ctx, p, 0o600, 1<<20, func([]byte, bool) ([]byte, error) { called = true; return []byte("after"), nil })
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Update = %v, want the context's error", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Update returned %s after the context ended", d)
	}
	if called {
		t.Errorf("fn was called without the lock")
	}
	if data, _ := os.ReadFile(p); string(data) != "before" {
		t.Errorf("file changed to %q", data)
	}
}

func TestUpdateGivesUpAfterLockWaitNamingTheHolder(t *testing.T) {
	shortLock(t, 300*time.Millisecond, 10*time.Second)
	p := filepath.Join(t.TempDir(), "f")
	pid := holdLock(t, p+".lock")
	err := hostilefile.Within(t, func() error {
		return Update(context.Background(), p, 0o600, 1<<20, func([]byte, bool) ([]byte, error) { return []byte("x"), nil })
	})
	if !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("Update = %v, want ErrLockTimeout", err)
	}
	if want := "held by pid " + strconv.Itoa(pid); !strings.Contains(err.Error(), want) {
		t.Errorf("%q does not say %q", err, want)
	}
	if _, err := os.Stat(p); err == nil {
		t.Errorf("the file was written after the timeout")
	}
}

// shortLock shortens the lock's waits for a test.
func shortLock(t *testing.T, wait, queue time.Duration) {
	old := [3]time.Duration{lockWait, lockQueueWait, lockPoll}
	lockWait, lockQueueWait, lockPoll = wait, queue, 10*time.Millisecond
	t.Cleanup(func() { lockWait, lockQueueWait, lockPoll = old[0], old[1], old[2] })
}

// turns writes another pid into the lock file every step until stop is
// closed, as a queue of writers taking the lock in turn does.
func turns(lockPath string, step time.Duration, stop <-chan struct{}) {
	for pid := 1000; ; pid++ {
		select {
		case <-stop:
			return
		case <-time.After(step):
			os.WriteFile(lockPath, []byte(strconv.Itoa(pid)+"\n"), 0o600)
		}
	}
}

// While the holder changes (a queue of writers), Update waits past
// LockWait, and gets the lock when it comes free.
func TestUpdateWaitsPastLockWaitWhileTheHolderChanges(t *testing.T) {
	shortLock(t, 300*time.Millisecond, 10*time.Second)
	p := filepath.Join(t.TempDir(), "f")
	_, release := holdLockUntil(t, p+".lock")
	stop := make(chan struct{})
	go turns(p+".lock", 100*time.Millisecond, stop)
	time.AfterFunc(time.Second, func() { close(stop); release() })
	start := time.Now()
	err := Update(context.Background(), p, 0o600, 1<<20, func([]byte, bool) ([]byte, error) { return []byte("x"), nil })
	if err != nil {
		t.Fatalf("Update behind writers in turn for 1s (LockWait 300ms): %v", err)
	}
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Errorf("Update took %s: it did not wait for the holders", took)
	}
}

// Writers in turn cannot hold a waiter forever: LockQueueWait bounds it.
func TestUpdateGivesUpAfterLockQueueWaitEvenWhileTheHolderChanges(t *testing.T) {
	shortLock(t, 300*time.Millisecond, 800*time.Millisecond)
	p := filepath.Join(t.TempDir(), "f")
	holdLock(t, p+".lock")
	stop := make(chan struct{})
	defer close(stop)
	go turns(p+".lock", 100*time.Millisecond, stop)
	err := Update(context.Background(), p, 0o600, 1<<20, func([]byte, bool) ([]byte, error) { return []byte("x"), nil })
	if !errors.Is(err, ErrLockTimeout) || !strings.Contains(err.Error(), "in turn") {
		t.Fatalf("Update = %v, want ErrLockTimeout after the queue's bound", err)
	}
}

func TestUpdateRefusesABadFileOrLockFileWithoutBlocking(t *testing.T) {
	for _, which := range []string{"file", "lock file"} {
		for _, kind := range []string{"FIFO", "directory", "symlink to a FIFO"} {
			t.Run(which+" is a "+kind, func(t *testing.T) {
				p := filepath.Join(t.TempDir(), "f")
				bad := p
				if which == "lock file" {
					bad = p + ".lock"
				}
				hostilefile.Plant(t, bad, kind, 0, "")
				called := false
				err := hostilefile.Within(t, func() error {
					return Update(context.Background(), p, 0o600, 1<<20, func([]byte, bool) ([]byte, error) { called = true; return []byte("x"), nil })
				})
				var ue *userfile.Error
				if !errors.As(err, &ue) || ue.Err != userfile.ErrNotRegular || ue.Path != bad {
					t.Errorf("Update = %v, want a *userfile.Error naming %s", err, bad)
				}
				if called {
					t.Errorf("fn was called")
				}
			})
		}
	}
}

func TestUpdateRefusesAnOversizedFileAndResetsAnOversizedLockFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := hostilefile.Within(t, func() error {
		return Update(context.Background(), p, 0o600, 4, func([]byte, bool) ([]byte, error) { return []byte("x"), nil })
	})
	if !errors.Is(err, userfile.ErrTooLarge) {
		t.Errorf("Update of a file over the limit = %v, want ErrTooLarge", err)
	}
	// A lock file's contents are only the holder's pid: one grown huge is
	// harmless and truncated by the next holder.
	if err := os.Truncate(p+".lock", 1<<30); err != nil {
		t.Fatal(err)
	}
	err = hostilefile.Within(t, func() error {
		return Update(context.Background(), p, 0o600, 1<<20, func([]byte, bool) ([]byte, error) { return []byte("x"), nil })
	})
	if err != nil {
		t.Fatalf("Update with a 1 GiB lock file: %v", err)
	}
	if data, _ := os.ReadFile(p + ".lock"); string(data) != strconv.Itoa(os.Getpid())+"\n" {
		t.Errorf("lock file holds %d bytes %.40q, want this process's pid", len(data), data)
	}
}
