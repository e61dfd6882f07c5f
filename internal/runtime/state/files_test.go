package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
)

// within fails the test if f does not return within a few seconds: a read
// that blocks must fail the test, not stall the suite.
func within(t *testing.T, f func() error) error {
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

// hostile puts a FIFO, a directory, a symlink to a FIFO or valid content
// padded to limit+1 bytes at path. A reader that blocked on the FIFO anyway is
// released when the test ends.
func hostile(t *testing.T, path, kind string, limit int64) {
	t.Helper()
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
		if err := os.WriteFile(path, oversized(`{"format": 1, "pid": 1}`, limit), 0o600); err != nil {
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

func TestABadStateFileIsCorruptAtOnce(t *testing.T) {
	for _, kind := range []string{"FIFO", "directory", "symlink to a FIFO", "oversized file", "unparseable"} {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "state.json")
			if kind == "unparseable" {
				if err := os.WriteFile(p, []byte(`{"pid": "\u001b[2J`), 0o600); err != nil {
					t.Fatal(err)
				}
			} else {
				hostile(t, p, kind, MaxFileSize)
			}
			err := within(t, func() error { _, err := Read(p); return err })
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != p {
				t.Fatalf("Read = %v, want *CorruptError", err)
			}
			if errors.Is(err, ErrNotRunning) {
				t.Errorf("a corrupt state file reads as not running: %v", err)
			}
			if strings.Contains(err.Error(), "\x1b") {
				t.Errorf("raw control bytes in %q", err)
			}
			h := ce.Hint()
			if want := "mv " + p + " " + p + ".bad"; strings.Contains(h, "\n") || !strings.Contains(h, want) {
				t.Errorf("Hint() = %q, want one line containing %q", h, want)
			}
			if kind == "oversized file" && !strings.Contains(h, "1048576") {
				t.Errorf("Hint() = %q does not name the limit", h)
			}
		})
	}
}

func TestWriteRefusesAStateItsReadersWouldFindCorrupt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	huge := agents.Table{"a": {Command: "/bin/a", Args: []string{strings.Repeat("<", 200<<10)}}} // '<' is written as \u003c
	err := Write(p, State{Format: Format, PID: os.Getpid(), Agents: huge})
	if err == nil || !strings.Contains(err.Error(), "1048576") {
		t.Errorf("Write of a %d-byte state = %v, want an error naming 1048576", 6*200<<10, err)
	}
	if _, err := os.Stat(p); err == nil {
		t.Errorf("the refused state was written")
	}
}

// oversized returns valid padded to limit+1 bytes (with newlines if valid
// ends in one, else spaces): content that parses, only its size is wrong.
func oversized(valid string, limit int64) []byte {
	pad := " "
	if strings.HasSuffix(valid, "\n") {
		pad = "\n"
	}
	return []byte(valid + strings.Repeat(pad, int(limit)+1-len(valid)))
}
