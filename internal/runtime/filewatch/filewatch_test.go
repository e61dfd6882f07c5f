package filewatch

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestWatcherSurvivesItsDirectoriesBeingRemovedAndRecreated drives the
// watcher step by step (no goroutine): after each change to the chain of
// directories, once the file's directory is watched again, a write of the
// file is an event within a second.
func TestWatcherSurvivesItsDirectoriesBeingRemovedAndRecreated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, home string)
	}{
		{"registry directory removed and created again", func(t *testing.T, home string) {
			must(t, os.RemoveAll(filepath.Join(home, ".config/agent-box")))
			must(t, os.MkdirAll(filepath.Join(home, ".config/agent-box"), 0o700))
		}},
		{"~/.config removed and created again", func(t *testing.T, home string) {
			must(t, os.RemoveAll(filepath.Join(home, ".config")))
			must(t, os.MkdirAll(filepath.Join(home, ".config/agent-box"), 0o700))
		}},
		{"~/.config moved away, a new one created", func(t *testing.T, home string) {
			must(t, os.Rename(filepath.Join(home, ".config"), filepath.Join(home, "old-config")))
			must(t, os.MkdirAll(filepath.Join(home, ".config/agent-box"), 0o700))
		}},
		{"registry directory moved away, then moved back", func(t *testing.T, home string) {
			must(t, os.Rename(filepath.Join(home, ".config/agent-box"), filepath.Join(home, "ab")))
			must(t, os.Rename(filepath.Join(home, "ab"), filepath.Join(home, ".config/agent-box")))
		}},
		{"registry directory replaced by a file, then by a directory", func(t *testing.T, home string) {
			dir := filepath.Join(home, ".config/agent-box")
			must(t, os.RemoveAll(dir))
			must(t, os.WriteFile(dir, nil, 0o600))
			must(t, os.Remove(dir))
			must(t, os.Mkdir(dir, 0o700))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			dir := filepath.Join(home, ".config/agent-box")
			must(t, os.MkdirAll(dir, 0o700))
			w, err := Watch(home, dir, "sessions.json")
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			buf := make([]byte, 64<<10)
			writeSeen(t, w, buf, filepath.Join(dir, "sessions.json"))
			tc.change(t, home)
			writeSeen(t, w, buf, filepath.Join(dir, "sessions.json"))
			writeSeen(t, w, buf, filepath.Join(dir, "sessions.json")) // and again
		})
	}
}

// TestWatcherWaitsForAMissingDirectoryChain starts with nothing below HOME,
// as on a first start.
func TestWatcherWaitsForAMissingDirectoryChain(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".config/agent-box")
	w, err := Watch(home, dir, "sessions.json")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Err(); err != nil {
		t.Errorf("a missing directory is reported as an error: %v", err)
	}
	must(t, os.MkdirAll(dir, 0o700))
	writeSeen(t, w, make([]byte, 64<<10), filepath.Join(dir, "sessions.json"))
}

func TestChainListsTheDirectoriesFromHomeDown(t *testing.T) {
	for _, tc := range []struct {
		top, dir string
		want     []string
	}{
		{"/home/a", "/home/a/.config/agent-box", []string{"/home/a", "/home/a/.config", "/home/a/.config/agent-box"}},
		{"/home/a/", "/home/a/x", []string{"/home/a", "/home/a/x"}},
		{"/home/a", "/elsewhere/agent-box", []string{"/elsewhere", "/elsewhere/agent-box"}},
		{"/home/a", "/home/ab/c", []string{"/home/ab", "/home/ab/c"}},
	} {
		got := chain(tc.top, tc.dir)
		if len(got) != len(tc.want) {
			t.Errorf("chain(%q, %q) = %q, want %q", tc.top, tc.dir, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("chain(%q, %q) = %q, want %q", tc.top, tc.dir, got, tc.want)
				break
			}
		}
	}
}

// writeSeen lets the watcher handle every event queued so far (and wait,
// bounded, until it watches the file's directory again), then replaces
// path by rename as the registry package does, and requires the event
// naming it within a second. Events are queued synchronously by the
// filesystem calls, so an empty queue means the watcher has seen the
// whole change.
func writeSeen(t *testing.T, w *Watcher, buf []byte, path string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for queued(t, w) > 0 || !w.watchesFile() {
		if time.Now().After(deadline) {
			t.Fatalf("the file's directory is not watched again after 5 s (error: %v)", w.Err())
		}
		stepUntil(t, w, buf, deadline)
	}
	tmp := path + ".tmp"
	must(t, os.WriteFile(tmp, []byte("{}"), 0o600))
	must(t, os.Rename(tmp, path))
	deadline = time.Now().Add(time.Second)
	for {
		if hit, _ := stepUntil(t, w, buf, deadline); hit {
			return
		}
	}
}

// queued is the number of bytes of events waiting in the inotify queue.
func queued(t *testing.T, w *Watcher) int {
	t.Helper()
	var n int32
	rc, err := w.f.SyscallConn()
	must(t, err)
	var errno syscall.Errno
	must(t, rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	}))
	if errno != 0 {
		t.Fatalf("FIONREAD: %v", errno)
	}
	return int(n)
}

// stepUntil runs one watcher step, failing the test at deadline.
func stepUntil(t *testing.T, w *Watcher, buf []byte, deadline time.Time) (hit, rearmed bool) {
	t.Helper()
	if err := w.f.SetReadDeadline(deadline); err != nil {
		t.Fatal(err)
	}
	hit, rearmed, err := w.step(buf)
	if err != nil {
		t.Fatalf("no inotify event in time: %v", err)
	}
	return hit, rearmed
}

// watchesFile reports whether the file's directory has a watch.
func (w *Watcher) watchesFile() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, i := range w.wds {
		if i == len(w.levels)-1 {
			return true
		}
	}
	return false
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestWatcherReadHonoursDeadlines: the inotify fd must stay non-blocking
// (os.File.Fd would make it blocking), or Close could not end the reading
// goroutine and a read with no event would hang.
func TestWatcherReadHonoursDeadlines(t *testing.T) {
	home := t.TempDir()
	w, err := Watch(home, filepath.Join(home, ".config/agent-box"), "sessions.json")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Arm() // again, as the resync does
	must(t, w.f.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	done := make(chan error, 1)
	go func() {
		_, _, err := w.step(make([]byte, 4096))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("read with no event: %v, want a deadline error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a read with no event ignored its deadline for 5 s: the inotify fd is blocking")
	}
}
