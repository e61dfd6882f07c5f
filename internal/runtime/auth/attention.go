package auth

import (
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// board is every agent user's attention states as their supervisors last
// reported them (docs/web-contract.md, "Listener status"): in memory only
// (a supervisor sends its report again at least every resendEvery, so a
// restarted service knows them again within it). Reports are rate-limited
// per user with a token bucket; a user's report replaces all of that
// user's states, and a change wakes the inbox streams (changed).
type board struct {
	mu      sync.Mutex
	users   map[string]*report
	buckets map[string]*bucket
	changed *wakeup
}

// report is one user's last report: when it came, and each state with the
// time the service first saw it (a session's entry keeps its time while
// its state and reason stay).
type report struct {
	at      time.Time
	entries []listed
}

type listed struct {
	attention.Entry
	Since time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newBoard(changed *wakeup) *board {
	return &board{users: map[string]*report{}, buckets: map[string]*bucket{}, changed: changed}
}

// take spends one of user's tokens at now; false when none is left.
func (b *board) take(user string, now time.Time) bool {
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

// set replaces user's states with es, reported at now; first says it is
// user's first report since the service started. fresh are the entries
// whose state (or reason) is new and in the inbox (none on a first report:
// the service cannot tell what it already said before it started). A
// change of any state wakes the inbox streams.
func (b *board) set(user string, es []attention.Entry, now time.Time) (first bool, fresh []listed) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old, had := b.users[user]
	since := map[attention.Entry]time.Time{}
	if had {
		for _, e := range old.entries {
			since[e.Entry] = e.Since
		}
	}
	r := &report{at: now, entries: make([]listed, len(es))}
	changed := !had || len(es) != len(old.entries)
	for i, e := range es {
		t, ok := since[e]
		if !ok {
			t, changed = now, true
		}
		r.entries[i] = listed{Entry: e, Since: t}
		if !ok && had && inboxRank[e.State] > 0 {
			fresh = append(fresh, r.entries[i])
		}
	}
	b.users[user] = r
	if changed {
		b.changed.fire()
	}
	return !had, fresh
}

// states is user's states as last reported (nil: no report yet).
func (b *board) states(user string) []attention.Entry {
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

// listing is user's states with their times, or nil when user's last
// report is older than the inbox's staleAfter at now (its supervisor
// stopped, or cannot reach the service).
func (b *board) listing(user string, now time.Time) []listed {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.users[user]
	if r == nil || now.Sub(r.at) >= staleAfter {
		return nil
	}
	return append([]listed(nil), r.entries...)
}

// attentionPut takes user's report (the status listener's PUT
// report.path, from a configured user's uid): 204; 400 for a body that is
// not a report (nothing changes); 429 beyond the user's rate.
func (s *Server) attentionPut(w http.ResponseWriter, r *http.Request, user string) {
	lim := contract.Attention.Report
	if !s.board.take(user, s.clock.Now()) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many reports", http.StatusTooManyRequests)
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, int64(lim.MaxBytes)+1))
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	es, err := attention.ParseReport(data)
	if err != nil {
		http.Error(w, "not a report: "+err.Error(), http.StatusBadRequest)
		return
	}
	first, fresh := s.board.set(user, es, s.clock.Now())
	if first {
		s.log.Printf("%s reports the attention states of %d sessions", user, len(es))
	}
	s.notifyFresh(user, fresh)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusNoContent)
}
