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
// user's states.
type board struct {
	mu      sync.Mutex
	users   map[string][]attention.Entry
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newBoard() *board {
	return &board{users: map[string][]attention.Entry{}, buckets: map[string]*bucket{}}
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

// set replaces user's states; first says it is user's first report.
func (b *board) set(user string, es []attention.Entry) (first bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, had := b.users[user]
	b.users[user] = es
	return !had
}

// states is user's states as last reported (nil: no report yet).
func (b *board) states(user string) []attention.Entry {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]attention.Entry(nil), b.users[user]...)
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
	if s.board.set(user, es) {
		s.log.Printf("%s reports the attention states of %d sessions", user, len(es))
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusNoContent)
}
