package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestReadReportsNotRunningForMissingFileAndDeadPID(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	if _, err := Read(p); !errors.Is(err, ErrNotRunning) {
		t.Errorf("missing state.json: %v", err)
	}
	if err := Write(p, State{Format: Format, PID: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); !errors.Is(err, ErrNotRunning) {
		t.Errorf("dead pid: %v", err)
	}
	if err := Write(p, State{Format: Format, PID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); err != nil {
		t.Errorf("live pid: %v", err)
	}
}
