// Package state is the supervisor's state.json: written by the running
// supervisor, read by the CLI and exec-session to find it (its tmux, its
// control socket, its agents table) and to tell whether it still runs. See
// docs/runtime-contract.md, "state.json".
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/atomicfile"
)

// Format is the version of state.json.
const Format = 1

// State is the supervisor's state.json.
type State struct {
	Format       int          `json:"format"`
	PID          int          `json:"pid"`
	Version      string       `json:"version"`
	Socket       string       `json:"socket"`
	Tmux         string       `json:"tmux"`
	Control      string       `json:"control"`
	Agents       agents.Table `json:"agents"`
	DefaultAgent string       `json:"defaultAgent,omitempty"`
	StartedAt    time.Time    `json:"startedAt"`
}

// Write writes state.json atomically with mode 0600.
func Write(path string, s State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o600)
}

// ErrNotRunning means state.json is absent or names a dead process.
var ErrNotRunning = errors.New("supervisor not running")

// Read reads state.json and checks that its pid is alive. It returns an
// error wrapping ErrNotRunning when the file is absent or the pid is dead.
func Read(path string) (State, error) {
	var s State
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, fmt.Errorf("%w (no %s)", ErrNotRunning, path)
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("state %q: %w", path, err)
	}
	if s.PID <= 0 || !alive(s.PID) {
		return s, fmt.Errorf("%w (pid %d in %s is gone)", ErrNotRunning, s.PID, path)
	}
	return s, nil
}

// alive reports whether process pid exists (EPERM: it exists, as another user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
