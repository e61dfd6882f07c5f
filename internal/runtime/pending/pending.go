// Package pending is the auth service's store of agents' permission
// requests that wait for a person (docs/web-contract.md, "Approvals").
//
// A request lives while its hook waits: the hook's connection holds it
// (Ask, then Leave when the handler returns). It ends, once, when its hook
// gets the answer to a person's decision (Decide, or a notification's
// action token through ByToken) or "none" at the end of its wait, or when
// its hook has not come back within the reattach grace; an ended
// request's id is spent and never comes back. The store is
// written to a file on every change, so a restarted service knows its
// requests (and their decisions not yet delivered) again, and gives their
// hooks, which ask again with the same id, the reattach grace to come
// back.
//
// Invariants: at most the contract's maxPending undecided requests per
// user; a request belongs to one user (an id asked by another is
// refused); a decision is taken once; an action token is stored only as
// its hash, decides only its own request with its own decision, and only
// before it expires.
package pending

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"sync"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/approval"
	"github.com/agent-box/agent-box/internal/runtime/atomicfile"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// Errors of Ask, Decide and ByToken.
var (
	ErrFull       = errors.New("the user has too many requests waiting")
	ErrBusy       = errors.New("the request's hook waits on too many connections")
	ErrSpent      = errors.New("the request has ended")
	ErrNotYours   = errors.New("the request is another's")
	ErrChanged    = errors.New("the request was asked with other content")
	ErrNoRequest  = errors.New("no such request waits")
	ErrAnswered   = errors.New("the request was already answered")
	ErrNoToken    = errors.New("no such action")
	ErrExpired    = errors.New("the action has expired")
	errBadStorage = errors.New("not a store of requests")
)

// Request is one waiting request as the store holds it.
type Request struct {
	User string `json:"user"`
	approval.Request
	Created  time.Time       `json:"created"`
	Deadline time.Time       `json:"deadline"`
	Answer   approval.Answer `json:"answer,omitzero"`
	Tokens   []Token         `json:"tokens,omitempty"`

	attached int
	gone     time.Time
	done     chan struct{}
}

// Token is a notification's action: the hash of its secret, whose
// notification it was, the decision it takes and until when.
type Token struct {
	Hash     string    `json:"hash"`
	Login    string    `json:"login"`
	Decision string    `json:"decision"`
	Expires  time.Time `json:"expires"`
}

// Store holds the requests; the zero Store is not usable (Open).
type Store struct {
	mu    sync.Mutex
	path  string
	reqs  map[string]*Request
	spent map[string]time.Time // ended ids, until when remembered
	grace time.Duration
	// changed is called (without the lock) after every change the inbox
	// shows.
	changed func()
	// gen counts snapshots; wmu orders the writes, so an older snapshot
	// never replaces a newer one.
	gen, written uint64
	wmu          sync.Mutex
}

type file struct {
	Requests []*Request           `json:"requests"`
	Spent    map[string]time.Time `json:"spent"`
}

const fileLimit = 16 << 20

// Open loads the store at path (none yet: an empty one). Requests whose
// wait has passed are dropped; the others wait for their hooks for the
// contract's reattach grace from now. An unreadable file is warned about
// and the store starts empty.
func Open(path string, now time.Time, changed func()) (st *Store, warn error, err error) {
	st = &Store{path: path, reqs: map[string]*Request{}, spent: map[string]time.Time{}, changed: changed,
		grace: contract.Duration(contract.Approvals.ReattachGrace)}
	data, err := userfile.Read(path, fileLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil, nil
	}
	if err != nil && !userfile.Bad(err) {
		return nil, nil, fmt.Errorf("read requests: %w", err)
	}
	var f file
	if err == nil {
		err = json.Unmarshal(data, &f)
	}
	if err != nil {
		return st, fmt.Errorf("%q: %w: %v: starting with no requests", path, errBadStorage, err), nil
	}
	bad := 0
	for _, r := range f.Requests {
		if r == nil || r.Check() != nil || !contract.Names.WebUser.Match(r.User) || st.reqs[r.ID] != nil {
			bad++
			continue
		}
		if !now.Before(r.Deadline) && r.Answer.Decision == "" {
			continue
		}
		r.gone, r.done = now, make(chan struct{})
		if r.Answer.Decision != "" {
			close(r.done)
		}
		st.reqs[r.ID] = r
	}
	for id, until := range f.Spent {
		if now.Before(until) {
			st.spent[id] = until
		}
	}
	if bad > 0 {
		warn = fmt.Errorf("%q: dropped %d invalid requests", path, bad)
	}
	return st, warn, nil
}

// Asked is what Ask gives a hook: the request's end (closed when it is
// answered), its deadline and, for a request new to the store, the
// secrets of its action tokens by login and decision (for the
// notifications; the store keeps only their hashes).
type Asked struct {
	Done     <-chan struct{}
	Deadline time.Time
	Fresh    bool
	Secrets  map[string]map[string]string
	// Answer is the answer once Done is closed (the request's own, read
	// under the lock whatever became of its id since).
	Answer func() approval.Answer
}

// answerOf is r's answer, read under the store's lock.
func (st *Store) answerOf(r *Request) func() approval.Answer {
	return func() approval.Answer {
		st.mu.Lock()
		defer st.mu.Unlock()
		if r.Answer.Decision != "" {
			return r.Answer
		}
		return approval.Answer{Decision: approval.None}
	}
}

// Ask registers user's request r at now, or attaches to it again (a hook
// that asks again after a restart of the service or a broken connection:
// the same id, user and content). A new request waits until now+wait;
// actions is the logins whose notifications carry action URLs, each gets
// a token per decision that lives actionLife.
func (st *Store) Ask(user string, r approval.Request, now time.Time, wait, actionLife time.Duration, actions []string) (Asked, error) {
	st.mu.Lock()
	if _, ok := st.spent[r.ID]; ok {
		st.mu.Unlock()
		return Asked{}, ErrSpent
	}
	if old := st.reqs[r.ID]; old != nil {
		defer st.mu.Unlock()
		switch {
		case old.User != user:
			return Asked{}, ErrNotYours
		case old.Request != r:
			return Asked{}, ErrChanged
		case old.attached >= contract.Approvals.MaxConnections:
			return Asked{}, ErrBusy
		}
		old.attached++
		return Asked{Done: old.done, Deadline: old.Deadline, Answer: st.answerOf(old)}, nil
	}
	st.pruneLocked(now)
	n := 0
	for _, o := range st.reqs {
		if o.User == user && o.Answer.Decision == "" {
			n++
		}
	}
	if n >= contract.Approvals.MaxPending {
		st.mu.Unlock()
		return Asked{}, ErrFull
	}
	nr := &Request{User: user, Request: r, Created: now.UTC(), Deadline: now.Add(wait).UTC(), attached: 1, done: make(chan struct{})}
	secrets := map[string]map[string]string{}
	for _, l := range actions {
		secrets[l] = map[string]string{}
		for _, d := range approval.Decisions {
			if !r.Offers(d) {
				continue
			}
			secret := newSecret()
			secrets[l][d] = secret
			nr.Tokens = append(nr.Tokens, Token{Hash: tokenHash(secret), Login: l, Decision: d, Expires: now.Add(actionLife).UTC()})
		}
	}
	st.reqs[r.ID] = nr
	data := st.snapshotLocked(now)
	st.mu.Unlock()
	err := st.write(data)
	st.changed()
	return Asked{Done: nr.done, Deadline: nr.Deadline, Fresh: true, Secrets: secrets, Answer: st.answerOf(nr)}, err
}

// Leave is a hook's handler returning: delivered says the hook got its
// answer (a decision, or none at the deadline), which ends the request;
// else the connection closed (the hook went away, or the supervisor that
// relays it restarts): the request stays for the reattach grace, and ends
// then unless its hook asks again. (A shutdown of the service calls
// nothing: the restarted service has the request.)
func (st *Store) Leave(id string, delivered bool, now time.Time) error {
	st.mu.Lock()
	r := st.reqs[id]
	if r == nil {
		st.mu.Unlock()
		return nil
	}
	r.attached--
	if !delivered {
		if r.attached <= 0 {
			r.attached, r.gone = 0, now
		}
		st.mu.Unlock()
		return nil
	}
	st.endLocked(r, now)
	data := st.snapshotLocked(now)
	st.mu.Unlock()
	err := st.write(data)
	st.changed()
	return err
}

// endLocked removes r and spends its id until its last token would have
// expired (so no replay and no second ask can revive it).
func (st *Store) endLocked(r *Request, now time.Time) {
	until := r.Deadline
	for _, t := range r.Tokens {
		if t.Expires.After(until) {
			until = t.Expires
		}
	}
	st.spent[r.ID] = maxTime(until, now).Add(time.Minute)
	delete(st.reqs, r.ID)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Decide takes decision d of user's request id at now, by whom: once, and
// only while it waits (before its deadline).
func (st *Store) Decide(user, id, d, by string, now time.Time) error {
	if !approval.IsDecision(d) {
		return fmt.Errorf("%q is not a decision", d)
	}
	st.mu.Lock()
	r := st.reqs[id]
	switch {
	case r == nil || r.User != user:
		_, spent := st.spent[id]
		st.mu.Unlock()
		if spent {
			return ErrAnswered
		}
		return ErrNoRequest
	case r.Answer.Decision != "":
		st.mu.Unlock()
		return ErrAnswered
	case !now.Before(r.Deadline) || !st.waitedLocked(r, now):
		st.mu.Unlock()
		return ErrNoRequest
	case !r.Offers(d):
		st.mu.Unlock()
		return fmt.Errorf("the request does not offer %s (its text was cut, or the agent offers no rules)", d)
	}
	r.Answer = approval.Answer{Decision: d, By: by}
	r.Tokens = nil
	close(r.done)
	data := st.snapshotLocked(now)
	st.mu.Unlock()
	err := st.write(data)
	st.changed()
	return err
}

// Action is what an action token decides.
type Action struct {
	User, ID, Login, Decision string
}

// ByToken is the action of token secret at now: ErrNoToken for a secret
// no waiting request has (never given, or its request has ended: a
// replay), ErrExpired past its lifetime.
func (st *Store) ByToken(secret string, now time.Time) (Action, error) {
	h := tokenHash(secret)
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, r := range st.reqs {
		for _, t := range r.Tokens {
			if t.Hash != h {
				continue
			}
			if !now.Before(t.Expires) {
				return Action{}, ErrExpired
			}
			return Action{User: r.User, ID: r.ID, Login: t.Login, Decision: t.Decision}, nil
		}
	}
	return Action{}, ErrNoToken
}

// Waiting is user's requests that wait for a decision at now, the oldest
// first: undecided, before their deadline, with a hook attached or within
// the reattach grace of their hook's leaving.
func (st *Store) Waiting(user string, now time.Time) []Request {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []Request
	for _, r := range st.reqs {
		if r.User == user && r.Answer.Decision == "" && now.Before(r.Deadline) && st.waitedLocked(r, now) {
			c := *r
			c.Tokens = nil
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// waitedLocked: a hook waits on r, or left it less than the grace ago.
func (st *Store) waitedLocked(r *Request, now time.Time) bool {
	return r.attached > 0 || now.Sub(r.gone) < st.grace
}

// pruneLocked ends what has ended by now: requests whose hook is gone
// past the grace, or past their deadline with no hook waiting; and forgets
// spent ids past their time.
func (st *Store) pruneLocked(now time.Time) {
	for id, until := range st.spent {
		if !now.Before(until) {
			delete(st.spent, id)
		}
	}
	for _, r := range st.reqs {
		if r.attached == 0 && !st.waitedLocked(r, now) || r.Answer.Decision == "" && !now.Before(r.Deadline) && r.attached == 0 {
			st.endLocked(r, now)
		}
	}
}

// snapshotLocked prunes what has ended by now and returns the file.
func (st *Store) snapshotLocked(now time.Time) snapshot {
	st.pruneLocked(now)
	f := file{Requests: make([]*Request, 0, len(st.reqs)), Spent: st.spent}
	for _, r := range st.reqs {
		f.Requests = append(f.Requests, r)
	}
	sort.Slice(f.Requests, func(i, j int) bool { return f.Requests[i].ID < f.Requests[j].ID })
	data, _ := json.MarshalIndent(f, "", "  ")
	st.gen++
	return snapshot{data: append(data, '\n'), gen: st.gen}
}

type snapshot struct {
	data []byte
	gen  uint64
}

func (st *Store) write(s snapshot) error {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	if s.gen <= st.written {
		return nil
	}
	if err := atomicfile.WriteFile(st.path, s.data, 0o600); err != nil {
		return fmt.Errorf("write requests %q: %w", st.path, err)
	}
	st.written = s.gen
	return nil
}

// newSecret is an action token's secret: 32 random bytes, base64url.
func newSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ValidSecret reports whether s has the shape of a token's secret.
func ValidSecret(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(b) == 32
}

func tokenHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
