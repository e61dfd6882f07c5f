package observe

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/userfile"
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
		if err := os.WriteFile(path, oversized("{}", limit), 0o600); err != nil {
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

func TestABadObservationFileIsAnErrorAtOnce(t *testing.T) {
	for _, kind := range []string{"FIFO", "directory", "symlink to a FIFO", "oversized file"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "x.json")
			hostile(t, p, kind, MaxFileSize)
			var s Session
			err := within(t, func() error { var err error; s, err = Load(dir, "x"); return err })
			if !userfile.Bad(err) || !strings.Contains(err.Error(), p) {
				t.Errorf("Load = %v, want a not-regular or too-large error naming the file", err)
			}
			if s.Name != "x" || s.Launches != 0 {
				t.Errorf("Load returned %+v with the error, want a zero Session named x", s)
			}
		})
	}
}

func TestLoadKeepsTheNameItWasAskedFor(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.json"), []byte(`{"name": "../../elsewhere", "launches": 3}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Load(dir, "x")
	if err != nil || s.Name != "x" || s.Launches != 3 {
		t.Errorf("Load = %+v, %v; want name x (a later Save must not write elsewhere)", s, err)
	}
	if _, err := Load(dir, "missing"); err != nil {
		t.Errorf("Load of a missing file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, "bad"); err == nil || errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of unparseable JSON = %v", err)
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
