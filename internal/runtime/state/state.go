// Package state is the supervisor's state.json: written by the running
// supervisor, read by the CLI and exec-session to find it (its tmux, its
// control socket, its agents table) and to tell whether it still runs. See
// docs/runtime-contract.md, "state.json". The file lives in the user's
// runtime directory, so it is read like every user-writable file: without
// blocking, a regular file of at most MaxFileSize, or *CorruptError.
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
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// Format is the version of state.json.
const Format = 1

// MaxFileSize is the largest state.json agent-box reads or writes.
const MaxFileSize = 1 << 20

// State is the supervisor's state.json.
type State struct {
	Format        int          `json:"format"`
	PID           int          `json:"pid"`
	Version       string       `json:"version"`
	Socket        string       `json:"socket"`
	Tmux          string       `json:"tmux"`          // the program the server runs (its clients run it too)
	TmuxInstalled string       `json:"tmuxInstalled"` // the configured tmux: a new server runs it
	Control       string       `json:"control"`
	Agents        agents.Table `json:"agents"`
	DefaultAgent  string       `json:"defaultAgent,omitempty"`
	StartedAt     time.Time    `json:"startedAt"`
	// Spawn is, per agent, the fingerprint of what a session of it
	// started now gets (package spawn); a session that was started with
	// another runs an older configuration until it restarts.
	Spawn map[string]string `json:"spawn,omitempty"`
}

// Write writes state.json atomically with mode 0600. A state over
// MaxFileSize (an agents table that large) is refused, so that no reader
// finds the file corrupt.
func Write(path string, s State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if len(data)+1 > MaxFileSize {
		return fmt.Errorf("state %q would hold %d bytes, more than %d (1 MiB): is the agents table that large?", path, len(data)+1, MaxFileSize)
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o600)
}

// ErrNotRunning means state.json is absent or names a dead process.
var ErrNotRunning = errors.New("supervisor not running")

// CorruptError reports a state.json that is not a regular file, is over
// MaxFileSize (Err is a *userfile.Error) or does not parse. Its chain never
// holds ErrNotRunning: whether a supervisor runs is unknown.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt state file %q: %v", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Hint is one line saying how to recover.
func (e *CorruptError) Hint() string {
	mv := fmt.Sprintf("mv %s %s", escape.ShellArg(e.Path), escape.ShellArg(e.Path+".bad"))
	var ue *userfile.Error
	if errors.As(e.Err, &ue) && ue.Err == userfile.ErrTooLarge {
		return fmt.Sprintf("a state file holds at most %d bytes (1 MiB): move it away (%s); the supervisor writes a new one when it starts", MaxFileSize, mv)
	}
	return fmt.Sprintf("move it away (%s); the supervisor writes a new one when it starts", mv)
}

// Read reads state.json and checks that its pid is alive. It returns an
// error wrapping ErrNotRunning when the file is absent or the pid is dead,
// and *CorruptError when it is not a regular file, too large or unparseable.
func Read(path string) (State, error) {
	var s State
	data, err := userfile.Read(path, MaxFileSize)
	if errors.Is(err, os.ErrNotExist) {
		return s, fmt.Errorf("%w (no %q)", ErrNotRunning, path)
	}
	if userfile.Bad(err) {
		return s, &CorruptError{Path: path, Err: err}
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return State{}, &CorruptError{Path: path, Err: err}
	}
	if s.PID <= 0 || !alive(s.PID) {
		return s, fmt.Errorf("%w (pid %d in %q is gone)", ErrNotRunning, s.PID, path)
	}
	return s, nil
}

// alive reports whether process pid exists (EPERM: it exists, as another user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
