// Package hostilefile plants, for tests, what a hostile user can put where
// agent-box reads a file of theirs: a FIFO (an open for reading would block
// until a writer comes), a directory, a symlink to a FIFO, or valid content
// padded past a size cap. It lives outside internal/runtime, so the module
// never embeds it.
package hostilefile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Kinds are the plantable kinds, for table tests.
var Kinds = []string{"FIFO", "directory", "symlink to a FIFO", "oversized file"}

// Plant puts kind at path (its directory created): for "oversized file",
// valid padded to limit+1 bytes. A reader that blocked on a FIFO anyway is
// released when the test ends.
func Plant(t testing.TB, path, kind string, limit int64, valid string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := path
	switch kind {
	case "FIFO":
	case "directory":
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		return
	case "symlink to a FIFO":
		fifo = path + ".target"
		if err := os.Symlink(fifo, path); err != nil {
			t.Fatal(err)
		}
	case "oversized file":
		if err := os.WriteFile(path, Oversized(valid, limit), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	default:
		t.Fatalf("unknown kind %q", kind)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			syscall.Close(fd)
		}
	})
}

// Oversized returns valid padded to limit+1 bytes (with newlines if valid
// ends in one, else spaces): content that parses, only its size is wrong.
func Oversized(valid string, limit int64) []byte {
	pad := " "
	if strings.HasSuffix(valid, "\n") {
		pad = "\n"
	}
	return []byte(valid + strings.Repeat(pad, int(limit)+1-len(valid)))
}

// Within fails the test if f does not return within 5 s: a read that blocks
// must fail the test, not stall the suite.
func Within(t testing.TB, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("blocked for 5 s")
		return nil
	}
}
