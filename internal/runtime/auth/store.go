package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"sync"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/atomicfile"
	"github.com/agent-box/agent-box/internal/runtime/board"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/pwhash"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

const (
	stateLimit      = 16 << 20 // sessions.json
	stateVersion    = 1
	persistInterval = time.Minute // lastSeen reaches the disk at most this often
	maxBoxPerLogin  = 64          // box sessions of one login; a new one ends the least recently seen
	maxChildren     = 8           // child sessions of one box session for one origin; likewise
)

// Session is one session as stored in sessions.json. The secret itself is
// never stored: SHA256 is the hex sha256 of the cookie's secret text.
type Session struct {
	ID       string    `json:"id"`
	SHA256   string    `json:"sha256"`
	Login    string    `json:"login"`
	Origin   string    `json:"origin"` // "" for the box origin, the agent user, or "app:<label>" (origin.key)
	Parent   string    `json:"parent"` // a child's box session, "" for a box session
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires"`
	LastSeen time.Time `json:"lastSeen"`
}

// stateFile is sessions.json. Logins holds, per login, the sha256 of the
// hash its sessions were made under: a changed hash ends them at start.
// Passwords holds the passwords changed on the box origin.
type stateFile struct {
	Version   int                        `json:"version"`
	Logins    map[string]string          `json:"logins"`
	Sessions  []Session                  `json:"sessions"`
	Passwords map[string]ChangedPassword `json:"passwords,omitempty"`
}

// ChangedPassword is a login's password changed through /auth/password:
// its hash, and the sha256 of the configured hash it replaced. It counts
// only while the configured hash is still that one: an operator who writes
// a new hashedPasswordFile (a reset) wins.
type ChangedPassword struct {
	Hash     string `json:"hash"`
	Replaces string `json:"replaces"`
}

// fingerprint is the hex sha256 of a hash's text.
func fingerprint(h pwhash.Hash) string {
	sum := sha256.Sum256([]byte(h.String()))
	return hex.EncodeToString(sum[:])
}

// store is the session table, the one copy in memory and its file.
type store struct {
	path string
	idle time.Duration

	mu          sync.Mutex
	sessions    map[string]*Session
	logins      map[string]string
	passwords   map[string]ChangedPassword
	gen         uint64    // bumped by every change
	lastPersist time.Time // when lastSeen was last written (or attempted)

	wmu     sync.Mutex // serialises writes; a snapshot is never overwritten by an older one
	written uint64

	ended *board.Wakeup // fired when sessions end (the inbox streams check theirs)
}

// loadStore reads path. A missing file is an empty store; an unreadable or
// invalid one too, with the reason in warn (everyone logs in again: failing
// closed, and the service still starts).
func loadStore(path string, idle time.Duration) (st *store, warn error, err error) {
	st = &store{path: path, idle: idle, sessions: map[string]*Session{}, logins: map[string]string{}, passwords: map[string]ChangedPassword{}}
	data, err := userfile.Read(path, stateLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil, nil
	}
	if err != nil && !userfile.Bad(err) {
		return nil, nil, fmt.Errorf("read sessions: %w", err)
	}
	if err != nil {
		return st, fmt.Errorf("%w: starting with no sessions", err), nil
	}
	var f stateFile
	if err := json.Unmarshal(data, &f); err != nil {
		return st, fmt.Errorf("%q: %v: starting with no sessions", path, err), nil
	}
	if f.Version != stateVersion {
		return st, fmt.Errorf("%q: version %d, want %d: starting with no sessions", path, f.Version, stateVersion), nil
	}
	bad := 0
	for i := range f.Sessions {
		s := f.Sessions[i]
		if !validStored(&s) || st.sessions[s.ID] != nil {
			bad++
			continue
		}
		st.sessions[s.ID] = &s
	}
	for l, fp := range f.Logins {
		st.logins[l] = fp
	}
	for l, p := range f.Passwords {
		if _, err := pwhash.ParseHash(p.Hash); err != nil || !loginName.Match(l) {
			bad++
			continue
		}
		st.passwords[l] = p
	}
	if bad > 0 {
		warn = fmt.Errorf("%q: dropped %d invalid session entries", path, bad)
	}
	return st, warn, nil
}

func validStored(s *Session) bool {
	if !validID(s.ID) || len(s.SHA256) != 64 || !isHex(s.SHA256) || !loginName.Match(s.Login) {
		return false
	}
	if s.Origin == "" {
		return s.Parent == ""
	}
	_, ok := keyOrigin(s.Origin)
	return ok && validID(s.Parent)
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

func validID(id string) bool { return contract.Names.WebSessionID.Match(id) }

// secretLen is the length of the base64url text of 32 bytes.
var secretLen = base64.RawURLEncoding.EncodedLen(32)

// splitCookie splits "<id>.<secret>" and checks the shapes.
func splitCookie(v string) (id, secret string, ok bool) {
	if len(v) != 32+1+secretLen || v[32] != '.' {
		return "", "", false
	}
	id, secret = v[:32], v[33:]
	if !validID(id) {
		return "", "", false
	}
	for i := 0; i < len(secret); i++ {
		c := secret[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return "", "", false
		}
	}
	return id, secret, true
}

func secretHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func randomText(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// aliveLocked: not past its absolute expiry nor idle, and for a child, its
// box session too.
func (st *store) aliveLocked(s *Session, now time.Time) bool {
	if !now.Before(s.Expires) || now.Sub(s.LastSeen) >= st.idle {
		return false
	}
	if s.Origin == "" {
		return true
	}
	p := st.sessions[s.Parent]
	return p != nil && p.Origin == "" && p.Login == s.Login && st.aliveLocked(p, now)
}

// find returns a copy of the session the cookie value names if its secret
// matches (alive or not).
func (st *store) find(cookie string) (Session, bool) {
	id, secret, ok := splitCookie(cookie)
	if !ok {
		return Session{}, false
	}
	want := secretHash(secret)
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.sessions[id]
	if s == nil || subtle.ConstantTimeCompare([]byte(s.SHA256), []byte(want)) != 1 {
		return Session{}, false
	}
	return *s, true
}

// alive reports whether the session id is alive at now, and returns it.
func (st *store) alive(id string, now time.Time) (Session, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.sessions[id]
	if s == nil || !st.aliveLocked(s, now) {
		return Session{}, false
	}
	return *s, true
}

// touch records activity on id (and on its box session, so that working
// on a user origin keeps the box session from going idle). It reports
// whether lastSeen is due to be written.
func (st *store) touch(id string, now time.Time) (due bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.sessions[id]
	if s == nil {
		return false
	}
	s.LastSeen = now
	if p := st.sessions[s.Parent]; p != nil {
		p.LastSeen = now
	}
	st.gen++
	if now.Sub(st.lastPersist) >= persistInterval {
		st.lastPersist = now
		return true
	}
	return false
}

// create adds a session and returns it with its secret. A box session
// (parent nil) lives lifetime; a child ends with its box session. Beyond
// the caps the least recently seen sibling is ended.
func (st *store) create(login string, parent *Session, origin string, now time.Time, lifetime time.Duration) (Session, string) {
	secret := randomText(32)
	s := &Session{
		ID: randomHex(16), SHA256: secretHash(secret), Login: login, Origin: origin,
		Created: now, Expires: now.Add(lifetime), LastSeen: now,
	}
	if parent != nil {
		s.Parent, s.Expires = parent.ID, parent.Expires
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var siblings []*Session
	for _, o := range st.sessions {
		if o.Login == login && o.Origin == origin && o.Parent == s.Parent {
			siblings = append(siblings, o)
		}
	}
	limit := maxBoxPerLogin
	if parent != nil {
		limit = maxChildren
	}
	if len(siblings) >= limit {
		sort.Slice(siblings, func(i, j int) bool { return siblings[i].LastSeen.Before(siblings[j].LastSeen) })
		for _, o := range siblings[:len(siblings)-limit+1] {
			st.endLocked(o.ID)
		}
	}
	st.sessions[s.ID] = s
	st.gen++
	return *s, secret
}

// endLocked removes id and, for a box session, its children; it returns
// how many sessions ended.
func (st *store) endLocked(id string) int {
	s := st.sessions[id]
	if s == nil {
		return 0
	}
	n := 1
	delete(st.sessions, id)
	if s.Origin == "" {
		for cid, c := range st.sessions {
			if c.Parent == id {
				delete(st.sessions, cid)
				n++
			}
		}
	}
	st.gen++
	st.ended.Fire()
	return n
}

// endOne ends session id alone (a child: its box session and siblings
// stay).
func (st *store) endOne(id string) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.endLocked(id)
}

// endFamily ends the box session of s (s itself, or its parent) and all
// its children.
func (st *store) endFamily(s Session) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	root := s.ID
	if s.Origin != "" {
		root = s.Parent
	}
	n := st.endLocked(root)
	n += st.endLocked(s.ID) // a child whose box session was already gone
	return n
}

// endLogin ends every session of login.
func (st *store) endLogin(login string) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := 0
	for id, s := range st.sessions {
		if s.Login == login {
			delete(st.sessions, id)
			n++
		}
	}
	if n > 0 {
		st.gen++
		st.ended.Fire()
	}
	return n
}

// reconcile drops, at start, every session the configuration no longer
// allows (a removed login, a user removed from its list, a changed hash),
// children without their box session, and dead sessions. It returns how
// many were dropped because of the configuration.
func (st *store) reconcile(c *Config, now time.Time) (dropped int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	fps := map[string]string{}
	for l, h := range c.hashes {
		fps[l] = fingerprint(h)
	}
	// a changed password counts while its configured hash is unchanged
	for l, p := range st.passwords {
		if fp, ok := fps[l]; !ok || p.Replaces != fp {
			delete(st.passwords, l)
		}
	}
	allowed := func(s *Session) bool {
		fp, ok := fps[s.Login]
		if _, listed := c.Logins[s.Login]; !ok || !listed {
			return false
		}
		if old, had := st.logins[s.Login]; had && old != fp {
			return false
		}
		return c.mayOpenKey(s.Login, s.Origin)
	}
	for id, s := range st.sessions {
		if !allowed(s) {
			delete(st.sessions, id)
			dropped++
		}
	}
	for id, s := range st.sessions {
		if !st.aliveLocked(s, now) {
			delete(st.sessions, id)
		}
	}
	st.logins = fps
	st.gen++
	return dropped
}

// pruneLocked drops dead sessions, so the file does not grow.
func (st *store) pruneLocked(now time.Time) {
	for id, s := range st.sessions {
		if !st.aliveLocked(s, now) {
			delete(st.sessions, id)
		}
	}
}

// persist writes the current table (if a newer one is not already on
// disk), pruning dead sessions first.
func (st *store) persist(now time.Time) error {
	st.mu.Lock()
	st.pruneLocked(now)
	st.lastPersist = now
	f := stateFile{Version: stateVersion, Logins: st.logins, Sessions: make([]Session, 0, len(st.sessions)), Passwords: map[string]ChangedPassword{}}
	for l, p := range st.passwords {
		f.Passwords[l] = p
	}
	for _, s := range st.sessions {
		f.Sessions = append(f.Sessions, *s)
	}
	gen := st.gen
	st.mu.Unlock()
	sort.Slice(f.Sessions, func(i, j int) bool { return f.Sessions[i].ID < f.Sessions[j].ID })
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	st.wmu.Lock()
	defer st.wmu.Unlock()
	if gen <= st.written && st.written != 0 {
		return nil
	}
	if err := atomicfile.WriteFile(st.path, data, 0o600); err != nil {
		return fmt.Errorf("write sessions %q: %w", st.path, err)
	}
	st.written = gen
	return nil
}

// changedPassword returns the hash login's password was changed to, if the
// configured hash it replaced (fingerprint fp) is still the configured one.
func (st *store) changedPassword(login, fp string) (string, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	p, ok := st.passwords[login]
	if !ok || p.Replaces != fp {
		return "", false
	}
	return p.Hash, true
}

// setPassword records login's new hash and ends every session of login but
// the box session keep and its children; it returns how many ended.
func (st *store) setPassword(login string, h pwhash.Hash, replaces, keep string) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.passwords[login] = ChangedPassword{Hash: h.String(), Replaces: replaces}
	n := 0
	for id, s := range st.sessions {
		if s.Login == login && id != keep && s.Parent != keep {
			delete(st.sessions, id)
			n++
		}
	}
	st.gen++
	st.ended.Fire()
	return n
}

// count returns the number of sessions in memory.
func (st *store) count() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.sessions)
}
