package agents

import (
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

func TestABadAgentsTableIsAnErrorAtOnce(t *testing.T) {
	for _, kind := range []string{"FIFO", "directory", "symlink to a FIFO", "oversized file"} {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "agents.json")
			hostile(t, p, kind, MaxFileSize)
			err := within(t, func() error { _, err := Load(p); return err })
			if !userfile.Bad(err) || !strings.Contains(err.Error(), p) {
				t.Errorf("Load = %v, want a not-regular or too-large error naming the file", err)
			}
		})
	}
}

func TestAnAgentsCommandAndArgumentsAreBounded(t *testing.T) {
	arg := strings.Repeat("a", 40<<10)
	if _, err := parse([]byte(`{"a": {"command": "/bin/a", "args": ["` + arg + `"]}}`)); err != nil {
		t.Errorf("a 40 KiB argument: %v", err)
	}
	_, err := parse([]byte(`{"a": {"command": "/bin/a", "args": ["` + arg + `", "` + arg + `"]}}`))
	if err == nil || !strings.Contains(err.Error(), "65536") {
		t.Errorf("two 40 KiB arguments: %v, want an error naming 65536", err)
	}
}

func TestErrorsQuoteAgentNamesAndCommandsEscapedAndCut(t *testing.T) {
	name := `\u001b[2J` + strings.Repeat("x", 1000)
	_, err := parse([]byte(`{"` + name + `": {"command": "rel\u001b]0;t\u0007"}}`))
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\x07") || !strings.Contains(err.Error(), `\x1b[2Jx`) {
		t.Fatalf("parse = %v, want the name and command escaped", err)
	}
	if msg := err.Error(); len(msg) > 200 || !strings.Contains(msg, "... (1004 bytes)") {
		t.Errorf("the name is not cut at 64 bytes: %d bytes: %s", len(msg), msg)
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
