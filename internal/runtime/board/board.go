// Package board is the auth service's attention board: every agent user's attention states as their supervisors report them, the inbox's order, and the inbox streams they wake.
package board

import (
	"sync"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// Board is every agent user's attention states as their supervisors last
// reported them (docs/web-contract.md, "Listener status"): in memory only
// (a supervisor sends its report again at least every resendEvery, so a
// restarted service knows them again within it). Reports are rate-limited
// per user with a token bucket; a user's report replaces all of that
// user's states, and a change wakes the inbox Streams (changed).
type Board struct {
	mu      sync.Mutex
	users   map[string]*report
	buckets map[string]*bucket
	changed *Wakeup
}

// report is one user's last report: when it came, and each state with the
// time the service first saw it (a session's entry keeps its time while
// its state and reason stay, a limited one's from try to try).
type report struct {
	at      time.Time
	entries []Listed
}

type Listed struct {
	attention.Entry
	Since time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

// New is an empty board whose changes fire changed.
func New(changed *Wakeup) *Board {
	return &Board{users: map[string]*report{}, buckets: map[string]*bucket{}, changed: changed}
}

// Take spends one of user's tokens at now; false when none is left.
func (b *Board) Take(user string, now time.Time) bool {
	lim := contract.Attention.Report
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.buckets[user]
	if k == nil {
		k = &bucket{tokens: float64(lim.Burst), at: now}
		b.buckets[user] = k
	}
	k.tokens = min(float64(lim.Burst), k.tokens+now.Sub(k.at).Seconds()*float64(lim.PerSecond))
	k.at = now
	if k.tokens < 1 {
		return false
	}
	k.tokens--
	return true
}

// Set replaces user's states with es, reported at now; first says it is
// user's first report since the service started. fresh are the entries
// whose state (or reason) is new and in the inbox (none on a first report:
// the service cannot tell what it already said before it started). A
// change of any state wakes the inbox Streams.
func (b *Board) Set(user string, es []attention.Entry, now time.Time) (first bool, fresh []Listed) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old, had := b.users[user]
	since := map[attention.Entry]time.Time{}
	was := map[attention.Entry]attention.Entry{}
	if had {
		for _, e := range old.entries {
			since[e.Plain()], was[e.Plain()] = e.Since, e.Entry
		}
	}
	r := &report{at: now, entries: make([]Listed, len(es))}
	changed := !had || len(es) != len(old.entries)
	for i, e := range es {
		// a limited session's next try is a change, not a new state
		t, ok := since[e.Plain()]
		if !ok {
			t, changed = now, true
		}
		if was[e.Plain()] != e {
			changed = true
		}
		r.entries[i] = Listed{Entry: e, Since: t}
		if !ok && had && Rank[e.State] > 0 {
			fresh = append(fresh, r.entries[i])
		}
	}
	b.users[user] = r
	if changed {
		b.changed.Fire()
	}
	return !had, fresh
}

// States is user's states as last reported (nil: no report yet).
func (b *Board) States(user string) []attention.Entry {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.users[user]
	if r == nil {
		return nil
	}
	es := make([]attention.Entry, len(r.entries))
	for i, e := range r.entries {
		es[i] = e.Entry
	}
	return es
}

// Listing is user's states with their times, or nil when user's last
// report is older than the inbox's StaleAfter at now (its supervisor
// stopped, or cannot reach the service).
func (b *Board) Listing(user string, now time.Time) []Listed {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.users[user]
	if r == nil || now.Sub(r.at) >= StaleAfter {
		return nil
	}
	return append([]Listed(nil), r.entries...)
}

// StaleAfter: a user whose last report is older is not Listed.
var StaleAfter = contract.Duration(contract.Attention.Inbox.StaleAfter)

// Rank is each inbox state's place in the list (1 first); 0: not Listed.
var Rank = func() map[attention.State]int {
	m := map[attention.State]int{}
	for i, st := range contract.Attention.Inbox.States {
		m[attention.State(st)] = i + 1
	}
	return m
}()

// Wakeup wakes every waiter at once: Wait returns a channel Fire closes.
type Wakeup struct {
	mu sync.Mutex
	ch chan struct{}
}

// NewWakeup is a Wakeup no one waits on yet.
func NewWakeup() *Wakeup { return &Wakeup{ch: make(chan struct{})} }

// Wait is the channel the next Fire closes.
func (g *Wakeup) Wait() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ch
}

// Fire wakes every waiter (nil: no one waits).
func (g *Wakeup) Fire() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.ch)
	g.ch = make(chan struct{})
}

// Streams are the open inbox Streams per login, oldest first.
type Streams struct {
	mu      sync.Mutex
	byLogin map[string][]*Stream
}

// Stream is one open inbox stream: Evicted closes when a newer one of its
// login ends it.
type Stream struct{ Evicted chan struct{} }

// NewStreams is no stream open.
func NewStreams() *Streams { return &Streams{byLogin: map[string][]*Stream{}} }

// Open adds a Stream of login, ending its oldest beyond max.
func (ss *Streams) Open(login string, max int) *Stream {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	st := &Stream{Evicted: make(chan struct{})}
	l := append(ss.byLogin[login], st)
	for len(l) > max {
		close(l[0].Evicted)
		l = l[1:]
	}
	ss.byLogin[login] = l
	return st
}

// Close removes st (if it is still open).
func (ss *Streams) Close(login string, st *Stream) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	l := ss.byLogin[login]
	for i, x := range l {
		if x == st {
			ss.byLogin[login] = append(l[:i:i], l[i+1:]...)
			break
		}
	}
	if len(ss.byLogin[login]) == 0 {
		delete(ss.byLogin, login)
	}
}

// Count is the number of open Streams of login.
func (ss *Streams) Count(login string) int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.byLogin[login])
}
