// Package observe records what the supervisor observed about each session
// (launches, restarts, last exit) in ~/.local/state/agent-box/sessions/NAME.json.
// Observations are never intent: the registry is not touched here. Only the
// supervisor writes these files (atomically); anyone may read them. They
// live in the user's home, so they are read like every user-writable file:
// without blocking, a regular file of at most MaxFileSize.
package observe

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/atomicfile"
	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// MaxFileSize is the largest observation file agent-box reads (one written
// by the supervisor takes about 2 KiB).
const MaxFileSize = 64 << 10

// maxRecent is how many launch times RecentStarts keeps.
const maxRecent = 20

// Exit is how a session's program ended.
type Exit struct {
	// Status is the exit status, or -1 when the program was killed by a signal.
	Status int       `json:"status"`
	Signal string    `json:"signal,omitempty"`
	At     time.Time `json:"at"`
	// OutOfMemory: an OOM killer ended the program (the signal is 9).
	OutOfMemory bool `json:"outOfMemory,omitempty"`
}

// Session is the observation file of one session.
type Session struct {
	Name         string      `json:"name"`
	Launches     int         `json:"launches"`
	Restarts     int         `json:"restarts"`
	LastStart    time.Time   `json:"lastStart"`
	RecentStarts []time.Time `json:"recentStarts"`
	LastExit     *Exit       `json:"lastExit,omitempty"`
	// NextStart is set while a restart waits for its backoff delay.
	NextStart *time.Time `json:"nextStart,omitempty"`
	// Spawn is the fingerprint of what the last launch started with
	// (state.json's spawn, for the session's agent).
	Spawn string `json:"spawn,omitempty"`
	// Attention is the session's attention state (package attention);
	// nil until the supervisor first started it.
	Attention *attention.Status `json:"attention,omitempty"`
	// TurnTold is the newest turn whose failed end the supervisor told
	// from the agent's log (supervisor, turnlog.go: Codex's rollout file),
	// so that a restarted supervisor does not tell it again.
	TurnTold string `json:"turnTold,omitempty"`
}

// path is the observation file of name in dir.
func path(dir, name string) string { return filepath.Join(dir, name+".json") }

// Load reads name's observations; a missing file yields a zero Session. A
// file that is not a regular file, is over MaxFileSize or does not parse is
// an error naming it. The name is always name, whatever the file says.
func Load(dir, name string) (Session, error) {
	s := Session{Name: name}
	p := path(dir, name)
	data, err := userfile.Read(p, MaxFileSize)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if userfile.Bad(err) {
		return s, fmt.Errorf("observations: %w", err)
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return Session{Name: name}, fmt.Errorf("observations %q: %w", p, err)
	}
	s.Name = name
	return s, nil
}

// Save writes s atomically (0600), creating dir if needed.
func Save(dir string, s Session) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path(dir, s.Name), append(data, '\n'), 0o600)
}

// Started records a launch at t; restart says whether it replaced a dead or
// restarted program.
func (s *Session) Started(t time.Time, restart bool) {
	s.Launches++
	if restart {
		s.Restarts++
	}
	s.LastStart = t
	s.RecentStarts = append(s.RecentStarts, t)
	if n := len(s.RecentStarts); n > maxRecent {
		s.RecentStarts = append([]time.Time{}, s.RecentStarts[n-maxRecent:]...)
	}
	s.NextStart = nil
}
