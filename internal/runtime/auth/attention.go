package auth

import (
	"io"
	"net/http"

	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// attentionPut takes user's report (the status listener's PUT
// report.path, from a configured user's uid): 204; 400 for a body that is
// not a report (nothing changes); 429 beyond the user's rate.
func (s *Server) attentionPut(w http.ResponseWriter, r *http.Request, user string) {
	lim := contract.Attention.Report
	if !s.board.Take(user, s.clock.Now()) {
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
	first, fresh := s.board.Set(user, es, s.clock.Now())
	if first {
		s.log.Printf("%s reports the attention states of %d sessions", user, len(es))
	}
	s.notifyFresh(user, fresh)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusNoContent)
}
