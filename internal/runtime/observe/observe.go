// Package observe records what the supervisor observed about each session
// (launches, restarts, last exit) in ~/.local/state/agent-box/sessions/NAME.json.
// Observations are never intent: the registry is not touched here. Only the
// supervisor writes these files (atomically); anyone may read them.
package observe

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/atomicfile"
)

// maxRecent is how many launch times RecentStarts keeps.
const maxRecent = 20

// Exit is how a session's program ended.
type Exit struct {
	// Status is the exit status, or -1 when the program was killed by a signal.
	Status int       `json:"status"`
	Signal string    `json:"signal,omitempty"`
	At     time.Time `json:"at"`
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
}

// path is the observation file of name in dir.
func path(dir, name string) string { return filepath.Join(dir, name+".json") }

// Load reads name's observations; a missing file yields a zero Session.
func Load(dir, name string) (Session, error) {
	s := Session{Name: name}
	data, err := os.ReadFile(path(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	err = json.Unmarshal(data, &s)
	return s, err
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
