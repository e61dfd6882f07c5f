package state

import (
	"errors"
	"github.com/agent-box/agent-box/internal/hostilefile"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/runtime/agents"
)

func TestABadStateFileIsCorruptAtOnce(t *testing.T) {
	for _, kind := range []string{"FIFO", "directory", "symlink to a FIFO", "oversized file", "unparseable"} {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "state.json")
			if kind == "unparseable" {
				if err := os.WriteFile(p, []byte(`{"pid": "\u001b[2J`), 0o600); err != nil {
					t.Fatal(err)
				}
			} else {
				hostilefile.Plant(t, p, kind, MaxFileSize, `{"format": 1, "pid": 1}`)
			}
			err := hostilefile.Within(t, func() error { _, err := Read(p); return err })
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
