// Package registry reads and changes the session registry
// ~/.config/agent-box/sessions.json: the user's intent (which sessions exist,
// which agent and arguments they run, whether they are stopped). It is the
// only code that writes the file; every write goes through
// atomicfile.Update, so concurrent writers (CLI processes and the supervisor)
// never lose each other's changes. A registry that cannot be parsed, is not
// a regular file or is over MaxFileSize is reported as *CorruptError and
// never rewritten. The limits below are checked when a change is written
// (an error wrapping ErrTooLarge) and again when the file is read, so that a
// hand-written file cannot bypass them.
package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/atomicfile"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// Limits. Everything of a session that reaches the agent's execve fits
// Linux's limits: each argument is one execve string (MAX_ARG_STRLEN is 32
// pages, 131072 bytes with the terminating NUL), and a session's arguments
// together take at most MaxArgsSize of ARG_MAX (2 MiB under the default 8 MiB
// stack limit), leaving room for the agent's own arguments, the env file and
// the unit environment (docs/runtime-contract.md, "Limits"). The session
// limits are the contract's (contract.Sessions), which the module's
// assertions check too.
const (
	// MaxFileSize is the largest registry file agent-box reads or writes.
	MaxFileSize = 4 << 20
)

var (
	// MaxSessions is the most sessions a registry holds.
	MaxSessions = contract.Sessions.Max
	// MaxArgLen is the longest session argument: MAX_ARG_STRLEN less its NUL.
	MaxArgLen = contract.Sessions.ArgMaxBytes
	// MaxArgsSize bounds a session's arguments together, each counted as
	// execve counts it: its bytes, its NUL and an 8-byte pointer (ArgsSize).
	MaxArgsSize = contract.Sessions.ArgsMaxBytes
	// MaxCwdLen is the longest working directory: PATH_MAX less its NUL
	// (chdir refuses a longer path).
	MaxCwdLen = contract.Sessions.CwdMaxBytes
	// MaxSeedSize is the largest seed file agent-box reads.
	MaxSeedSize = contract.Sessions.SeedMaxBytes
	// MaxTombstones is the most removed names a registry keeps.
	MaxTombstones = contract.Sessions.MaxTombstones
)

// ArgsSize is what args take of execve's ARG_MAX: each argument's bytes,
// its NUL and the 8-byte pointer to it.
func ArgsSize(args []string) int {
	n := 0
	for _, a := range args {
		n += len(a) + 1 + contract.Sessions.ArgPointerBytes
	}
	return n
}

// quote quotes a user-written name or value in an error, escaped and cut.
func quote(s string) string { return escape.Quote(s, 64) }

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
	// ErrTooLarge: a change would take the registry, a session or an
	// argument over one of the limits above; the message names the limit.
	ErrTooLarge = errors.New("over the limit")
)

// CorruptError reports a registry file that is not a valid version-1
// registry: unparseable or beyond a limit (Err says why), not a regular
// file, or over MaxFileSize (Err is a *userfile.Error; if its path is the
// lock file, the lock file is what is wrong). Its chain never holds
// ErrInvalidName or ErrTooLarge: those are errors in the caller's input.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt registry %q: %v", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Hint is one line saying how to recover.
func (e *CorruptError) Hint() string {
	const rebuilt = "the supervisor rebuilds it from the live sessions (stopped sessions and tombstones are lost)"
	var ue *userfile.Error
	if errors.As(e.Err, &ue) && ue.Path != e.Path {
		return fmt.Sprintf("move the lock file away (mv %s %s); it is recreated at the next change", escape.ShellArg(ue.Path), escape.ShellArg(ue.Path+".bad"))
	}
	mv := fmt.Sprintf("mv %s %s", escape.ShellArg(e.Path), escape.ShellArg(e.Path+".bad"))
	switch {
	case errors.As(e.Err, &ue) && ue.Err == userfile.ErrTooLarge:
		return fmt.Sprintf("a registry holds at most %d bytes (4 MiB): move it away (%s); %s", MaxFileSize, mv, rebuilt)
	case ue != nil:
		return fmt.Sprintf("move it away (%s); %s", mv, rebuilt)
	}
	return fmt.Sprintf("fix it by hand, or move it away (%s); %s", mv, rebuilt)
}

// ValidName reports whether name is a session (or agent) name: the
// contract's session pattern.
func ValidName(name string) bool { return contract.Names.Session.Match(name) }

// ErrNoChange may be returned by an Update callback to leave the registry
// as it is (no write, no new mtime).
var ErrNoChange = atomicfile.ErrNoChange

// CheckName returns an error wrapping ErrInvalidName for an invalid name.
func CheckName(name string) error {
	if !ValidName(name) {
		return fmt.Errorf("%w %s (want %s)", ErrInvalidName, quote(name), contract.Names.Session.Pattern)
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

// checkSession validates one entry: its name, agent and working directory,
// and the limits on what reaches the agent's execve.
func checkSession(s Session) error {
	if err := CheckName(s.Name); err != nil {
		return err
	}
	if s.Agent == "" {
		return fmt.Errorf("session %s: empty agent", quote(s.Name))
	}
	if !filepath.IsAbs(s.Cwd) {
		return fmt.Errorf("session %s: working directory must be absolute, got %s", quote(s.Name), quote(s.Cwd))
	}
	if len(s.Cwd) > MaxCwdLen {
		return fmt.Errorf("session %s: working directory is %d bytes: %w of %d (Linux's PATH_MAX less its NUL)", quote(s.Name), len(s.Cwd), ErrTooLarge, MaxCwdLen)
	}
	for i, a := range s.Args {
		if len(a) > MaxArgLen {
			return fmt.Errorf("session %s: argument %d is %d bytes: %w of %d (Linux's MAX_ARG_STRLEN less its NUL)", quote(s.Name), i+1, len(a), ErrTooLarge, MaxArgLen)
		}
	}
	if n := ArgsSize(s.Args); n > MaxArgsSize {
		return fmt.Errorf("session %s: its %d arguments take %d bytes: %w of %d (256 KiB, each counted with its NUL and an 8-byte pointer, as execve counts it)", quote(s.Name), len(s.Args), n, ErrTooLarge, MaxArgsSize)
	}
	return nil
}

// Add adds s (validated) and clears a tombstone of the same name.
func (r *Registry) Add(s Session) error {
	if err := checkSession(s); err != nil {
		return err
	}
	if _, ok := r.Find(s.Name); ok {
		return fmt.Errorf("%w: %s", ErrDuplicate, quote(s.Name))
	}
	if len(r.Sessions) >= MaxSessions {
		return fmt.Errorf("session %s: the registry already holds %d sessions: %w of %d", quote(s.Name), len(r.Sessions), ErrTooLarge, MaxSessions)
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

// Remove deletes name and records a tombstone so the seed does not bring it
// back (nor the supervisor, while it still runs the session). With
// MaxTombstones already kept it refuses (ErrTooLarge): the supervisor
// prunes them, so that many means it has not run for a while.
func (r *Registry) Remove(name string) error {
	for i := range r.Sessions {
		if r.Sessions[i].Name == name {
			if !r.tombstoned(name) && len(r.Tombstones) >= MaxTombstones {
				return fmt.Errorf("session %s: the registry keeps %d removed names (tombstones): %w of %d; the supervisor prunes those that keep nothing away when it runs (is it running?)", quote(name), len(r.Tombstones), ErrTooLarge, MaxTombstones)
			}
			r.Sessions = append(r.Sessions[:i], r.Sessions[i+1:]...)
			if !r.tombstoned(name) {
				r.Tombstones = append(r.Tombstones, name)
			}
			return nil
		}
	}
	return fmt.Errorf("%w: %s", ErrUnknown, quote(name))
}

// PruneTombstones drops every tombstone keep refuses and returns how many
// it dropped.
func (r *Registry) PruneTombstones(keep func(name string) bool) int {
	kept := r.Tombstones[:0:0]
	for _, t := range r.Tombstones {
		if keep(t) {
			kept = append(kept, t)
		}
	}
	dropped := len(r.Tombstones) - len(kept)
	if dropped > 0 {
		r.Tombstones = kept
	}
	return dropped
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
	if err := r.validate(); err != nil {
		// The file is corrupt, not the caller's input: keep
		// ErrInvalidName and ErrTooLarge out of the chain.
		return nil, errors.New(err.Error())
	}
	return &r, nil
}

// validate checks every rule a registry obeys, on a parsed file and on the
// result of every change before it is written.
func (r *Registry) validate() error {
	if len(r.Sessions) > MaxSessions {
		return fmt.Errorf("%d sessions: %w of %d", len(r.Sessions), ErrTooLarge, MaxSessions)
	}
	seen := map[string]bool{}
	for _, s := range r.Sessions {
		if err := checkSession(s); err != nil {
			return err
		}
		if seen[s.Name] {
			return fmt.Errorf("duplicate session %s", quote(s.Name))
		}
		seen[s.Name] = true
	}
	for _, t := range r.Tombstones {
		if !ValidName(t) {
			return fmt.Errorf("invalid tombstone %s", quote(t))
		}
	}
	return nil
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

// Load reads the registry at path; a missing file is an empty registry.
func Load(path string) (*Registry, error) {
	data, err := userfile.Read(path, MaxFileSize)
	if errors.Is(err, os.ErrNotExist) {
		return &Registry{Version: formatVersion}, nil
	}
	if userfile.Bad(err) {
		return nil, &CorruptError{Path: path, Err: err}
	}
	if err != nil {
		return nil, err
	}
	if r := parsed.get(path, data); r != nil {
		return r, nil
	}
	r, err := parse(data)
	if err != nil {
		return nil, &CorruptError{Path: path, Err: err}
	}
	parsed.put(path, data, r)
	return r.clone(), nil
}

// parsed remembers the last registry Load parsed, by path and exact
// bytes: a long-running reader (the web daemon renders every page from
// the registry) parses a file only when its content changed. Callers get
// their own copy.
var parsed parseCache

type parseCache struct {
	mu   sync.Mutex
	path string
	data []byte
	reg  *Registry
}

func (c *parseCache) get(path string, data []byte) *Registry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reg == nil || c.path != path || !bytes.Equal(c.data, data) {
		return nil
	}
	return c.reg.clone()
}

func (c *parseCache) put(path string, data []byte, r *Registry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.path, c.data, c.reg = path, data, r
}

// clone is a deep copy.
func (r *Registry) clone() *Registry {
	c := &Registry{Version: r.Version, Tombstones: slices.Clone(r.Tombstones), Sessions: slices.Clone(r.Sessions)}
	for i := range c.Sessions {
		c.Sessions[i].Args = slices.Clone(c.Sessions[i].Args)
	}
	return c
}

// Update applies fn to the registry under the lock and writes the result
// atomically (mode 0600). If fn returns an error nothing is written. If the
// file (or its lock file) is corrupt, Update returns *CorruptError and
// leaves it byte-identical. A result beyond a limit (too many sessions, a
// session's arguments or working directory too long, more than MaxFileSize
// in all) is not written: the error wraps ErrTooLarge and names the limit.
// fn may return atomicfile.ErrNoChange to skip the write.
func Update(ctx context.Context, path string, fn func(r *Registry) error) error {
	called := false
	err := atomicfile.Update(ctx, path, 0o600, MaxFileSize, func(old []byte, exists bool) ([]byte, error) {
		called = true
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
		if err := r.validate(); err != nil {
			return nil, err
		}
		data := marshal(r)
		if len(data) > MaxFileSize {
			return nil, fmt.Errorf("the registry would hold %d bytes: %w of %d (4 MiB)", len(data), ErrTooLarge, MaxFileSize)
		}
		return data, nil
	})
	if !called && userfile.Bad(err) {
		return &CorruptError{Path: path, Err: err}
	}
	return err
}

// SeedSession is one entry of the seed file.
type SeedSession struct {
	Name  string   `json:"name"`
	Agent string   `json:"agent"`
	Args  []string `json:"args"`
	Cwd   string   `json:"cwd"`
	// Prompt is the kickoff prompt of the session's first conversation
	// (kept by package conversation, not in the registry).
	Prompt string `json:"prompt,omitempty"`
}

// Prompt returns the seed's prompt for session name, or "".
func (s *Seed) Prompt(name string) string {
	for _, e := range s.Sessions {
		if e.Name == name {
			return e.Prompt
		}
	}
	return ""
}

// Seed is the seed file written by Nix.
type Seed struct {
	Sessions []SeedSession `json:"sessions"`
}

// LoadSeed reads and validates a seed file (a regular file of at most
// MaxSeedSize bytes, at most MaxSessions entries, each within the limits of
// a registry entry).
func LoadSeed(path string) (*Seed, error) {
	data, err := userfile.Read(path, int64(MaxSeedSize))
	if userfile.Bad(err) {
		return nil, fmt.Errorf("seed: %w", err)
	}
	if err != nil {
		return nil, err
	}
	s, err := ParseSeed(data)
	if err != nil {
		return nil, fmt.Errorf("seed %q: %w", path, err)
	}
	return s, nil
}

// ParseSeed decodes and validates a document in the seed file's format
// (at most MaxSessions entries, each within the limits of a registry
// entry; no unknown field). `session add --file` reads the same format.
func ParseSeed(data []byte) (*Seed, error) {
	var s Seed
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON document")
	}
	if len(s.Sessions) > MaxSessions {
		return nil, fmt.Errorf("%d sessions: %w of %d", len(s.Sessions), ErrTooLarge, MaxSessions)
	}
	for _, e := range s.Sessions {
		cwd := e.Cwd
		if cwd == "" {
			cwd = "/" // the home, when applied
		}
		if err := checkSession(Session{Name: e.Name, Agent: e.Agent, Args: e.Args, Cwd: cwd}); err != nil {
			return nil, err
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
