// Package registry reads and changes the session registry
// ~/.config/agent-box/sessions.json: the user's intent (which sessions exist,
// which agent and arguments they run, whether they are stopped). It is the
// only code that writes the file; every write goes through
// atomicfile.Update, so concurrent writers (CLI processes and the supervisor)
// never lose each other's changes. A registry that cannot be parsed is
// reported as *CorruptError and never rewritten.
package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/atomicfile"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// formatVersion is the registry format version written to "version".
const formatVersion = 1

// Session is one registry entry.
type Session struct {
	Name    string    `json:"name"`
	Agent   string    `json:"agent"`
	Args    []string  `json:"args"`
	Cwd     string    `json:"cwd"`
	Stopped bool      `json:"stopped"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// Registry is the whole file.
type Registry struct {
	Version    int       `json:"version"`
	Sessions   []Session `json:"sessions"`
	Tombstones []string  `json:"tombstones"`
}

// Errors returned by the mutating helpers; test with errors.Is.
var (
	ErrUnknown     = errors.New("unknown session")
	ErrDuplicate   = errors.New("session already exists")
	ErrInvalidName = errors.New("invalid session name")
)

// CorruptError reports a registry file that is not a valid version-1 registry.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt registry %q: %v", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// ValidName reports whether name matches [A-Za-z0-9_-]{1,64}.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// CheckName returns an error wrapping ErrInvalidName for an invalid name.
func CheckName(name string) error {
	if !ValidName(name) {
		return fmt.Errorf("%w %q (want 1-64 of A-Z a-z 0-9 _ -)", ErrInvalidName, name)
	}
	return nil
}

// Find returns the session with the given name.
func (r *Registry) Find(name string) (*Session, bool) {
	for i := range r.Sessions {
		if r.Sessions[i].Name == name {
			return &r.Sessions[i], true
		}
	}
	return nil, false
}

// tombstoned reports whether name was removed by the user.
func (r *Registry) tombstoned(name string) bool {
	for _, t := range r.Tombstones {
		if t == name {
			return true
		}
	}
	return false
}

// Add adds s (validated) and clears a tombstone of the same name.
func (r *Registry) Add(s Session) error {
	if err := CheckName(s.Name); err != nil {
		return err
	}
	if _, ok := r.Find(s.Name); ok {
		return fmt.Errorf("%w: %q", ErrDuplicate, s.Name)
	}
	if s.Agent == "" {
		return fmt.Errorf("session %q: empty agent", s.Name)
	}
	if !filepath.IsAbs(s.Cwd) {
		return fmt.Errorf("session %q: working directory must be absolute, got %q", s.Name, s.Cwd)
	}
	if s.Args == nil {
		s.Args = []string{}
	}
	r.Sessions = append(r.Sessions, s)
	var keep []string
	for _, t := range r.Tombstones {
		if t != s.Name {
			keep = append(keep, t)
		}
	}
	r.Tombstones = keep
	return nil
}

// Remove deletes name and records a tombstone so the seed does not bring it back.
func (r *Registry) Remove(name string) error {
	for i := range r.Sessions {
		if r.Sessions[i].Name == name {
			r.Sessions = append(r.Sessions[:i], r.Sessions[i+1:]...)
			if !r.tombstoned(name) {
				r.Tombstones = append(r.Tombstones, name)
			}
			return nil
		}
	}
	return fmt.Errorf("%w: %q", ErrUnknown, name)
}

// parse decodes and validates a registry document. An empty document is not
// valid; a missing file is handled by Load.
func parse(data []byte) (*Registry, error) {
	var r Registry
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON document")
	}
	if r.Version != formatVersion {
		return nil, fmt.Errorf("unsupported version %d (want %d)", r.Version, formatVersion)
	}
	seen := map[string]bool{}
	for _, s := range r.Sessions {
		if !ValidName(s.Name) {
			return nil, fmt.Errorf("invalid session name %q", s.Name)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("duplicate session %q", s.Name)
		}
		seen[s.Name] = true
		if s.Agent == "" {
			return nil, fmt.Errorf("session %q: empty agent", s.Name)
		}
		if !filepath.IsAbs(s.Cwd) {
			return nil, fmt.Errorf("session %q: working directory must be absolute", s.Name)
		}
	}
	for _, t := range r.Tombstones {
		if !ValidName(t) {
			return nil, fmt.Errorf("invalid tombstone %q", t)
		}
	}
	return &r, nil
}

// marshal renders r deterministically (sessions and tombstones sorted).
func marshal(r *Registry) []byte {
	c := *r
	c.Version = formatVersion
	c.Sessions = append([]Session{}, r.Sessions...)
	sort.Slice(c.Sessions, func(i, j int) bool { return c.Sessions[i].Name < c.Sessions[j].Name })
	for i := range c.Sessions {
		if c.Sessions[i].Args == nil {
			c.Sessions[i].Args = []string{}
		}
	}
	c.Tombstones = append([]string{}, r.Tombstones...)
	sort.Strings(c.Tombstones)
	data, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		panic(err) // only plain types
	}
	return append(data, '\n')
}

// MaxFileSize is the largest registry file agent-box reads.
const MaxFileSize = 4 << 20

// Load reads the registry at path; a missing file is an empty registry.
func Load(path string) (*Registry, error) {
	data, err := userfile.Read(path, MaxFileSize)
	if errors.Is(err, os.ErrNotExist) {
		return &Registry{Version: formatVersion}, nil
	}
	if errors.Is(err, userfile.ErrNotRegular) || errors.Is(err, userfile.ErrTooLarge) {
		return nil, &CorruptError{Path: path, Err: err}
	}
	if err != nil {
		return nil, err
	}
	r, err := parse(data)
	if err != nil {
		return nil, &CorruptError{Path: path, Err: err}
	}
	return r, nil
}

// Update applies fn to the registry under the lock and writes the result
// atomically (mode 0600). If fn returns an error nothing is written. If the
// file is corrupt, Update returns *CorruptError and leaves it byte-identical.
// fn may return atomicfile.ErrNoChange to skip the write.
func Update(ctx context.Context, path string, fn func(r *Registry) error) error {
	return atomicfile.Update(ctx, path, 0o600, MaxFileSize, func(old []byte, exists bool) ([]byte, error) {
		r := &Registry{Version: formatVersion}
		if exists {
			var err error
			if r, err = parse(old); err != nil {
				return nil, &CorruptError{Path: path, Err: err}
			}
		}
		if err := fn(r); err != nil {
			return nil, err
		}
		return marshal(r), nil
	})
}

// SeedSession is one entry of the seed file.
type SeedSession struct {
	Name  string   `json:"name"`
	Agent string   `json:"agent"`
	Args  []string `json:"args"`
	Cwd   string   `json:"cwd"`
}

// Seed is the seed file written by Nix.
type Seed struct {
	Sessions []SeedSession `json:"sessions"`
}

// LoadSeed reads and validates a seed file.
func LoadSeed(path string) (*Seed, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Seed
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("seed %q: %w", path, err)
	}
	for _, e := range s.Sessions {
		if err := CheckName(e.Name); err != nil {
			return nil, fmt.Errorf("seed %q: %w", path, err)
		}
		if e.Agent == "" {
			return nil, fmt.Errorf("seed %q: session %q: empty agent", path, e.Name)
		}
		if e.Cwd != "" && !filepath.IsAbs(e.Cwd) {
			return nil, fmt.Errorf("seed %q: session %q: working directory must be absolute", path, e.Name)
		}
	}
	return &s, nil
}

// ApplySeed adds seed sessions that are neither present nor tombstoned.
// Existing entries are never modified. Sessions without a cwd get home.
// It returns the names it added.
func ApplySeed(r *Registry, s *Seed, home string, now time.Time) []string {
	var added []string
	for _, e := range s.Sessions {
		if _, ok := r.Find(e.Name); ok || r.tombstoned(e.Name) {
			continue
		}
		cwd := e.Cwd
		if cwd == "" {
			cwd = home
		}
		args := append([]string{}, e.Args...)
		if err := r.Add(Session{Name: e.Name, Agent: e.Agent, Args: args, Cwd: cwd, Created: now, Updated: now}); err == nil {
			added = append(added, e.Name)
		}
	}
	return added
}
