package auth

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/approval"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/httpserve"
)

// Replies (docs/web-contract.md, "Replies"): a person types a reply to a
// session that waits for one (the inbox's reply field); the user's
// supervisor takes it (a long GET on the status listener) and types it
// into the session, as a person at its terminal would.

// Reply is one reply on its way to a supervisor.
type Reply struct {
	Session string `json:"session"`
	Text    string `json:"text"`
}

// replies are the replies waiting for their users' supervisors, in
// memory: a supervisor polls all the time, so one waits milliseconds, or
// until the supervisor runs again.
type replies struct {
	mu   sync.Mutex
	q    map[string][]queued
	wake map[string]chan struct{}
}

type queued struct {
	Reply
	at time.Time
}

func newReplies() *replies {
	return &replies{q: map[string][]queued{}, wake: map[string]chan struct{}{}}
}

// freshLocked drops user's replies older than the contract's maxAge at
// now (a supervisor that was stopped gets no stale answer).
func (rs *replies) freshLocked(user string, now time.Time) {
	q := rs.q[user][:0]
	for _, r := range rs.q[user] {
		if now.Sub(r.at) < contract.Duration(contract.Approvals.Reply.MaxAge) {
			q = append(q, r)
		}
	}
	if len(q) == 0 {
		delete(rs.q, user)
		return
	}
	rs.q[user] = q
}

// add queues r for user at now; false when the user has the contract's
// most waiting.
func (rs *replies) add(user string, r Reply, now time.Time) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.freshLocked(user, now)
	if len(rs.q[user]) >= contract.Approvals.Reply.MaxPending {
		return false
	}
	rs.q[user] = append(rs.q[user], queued{r, now})
	if ch := rs.wake[user]; ch != nil {
		close(ch)
		delete(rs.wake, user)
	}
	return true
}

// take is user's waiting replies at now (removed), or none and a channel
// closed when one comes.
func (rs *replies) take(user string, now time.Time) ([]Reply, <-chan struct{}) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.freshLocked(user, now)
	if q := rs.q[user]; len(q) > 0 {
		delete(rs.q, user)
		out := make([]Reply, len(q))
		for i, r := range q {
			out[i] = r.Reply
		}
		return out, nil
	}
	ch := rs.wake[user]
	if ch == nil {
		ch = make(chan struct{})
		rs.wake[user] = ch
	}
	return nil, ch
}

// repliesGet is the status listener's GET of the reply path from user's
// supervisor: the user's waiting replies as a JSON array, as soon as
// there is one, or an empty one after the poll time.
func (s *Server) repliesGet(w http.ResponseWriter, r *http.Request, user string) {
	// the poll outlasts the listener's deadlines
	if err := httpserve.Unbound(w); err != nil {
		s.log.Printf("%s's reply poll: %v", user, err)
	}
	timer := time.NewTimer(contract.Duration(contract.Approvals.Reply.Poll))
	defer timer.Stop()
	var got []Reply
	for got == nil {
		var wake <-chan struct{}
		if got, wake = s.replies.take(user, s.clock.Now()); got != nil {
			break
		}
		select {
		case <-wake:
		case <-timer.C:
			got = []Reply{}
		case <-r.Context().Done():
			return
		case <-s.stopping:
			got = []Reply{}
		}
	}
	body, _ := json.Marshal(got)
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(body, '\n'))
}

// mayReply reports whether user's session is in one of the reply states
// by its supervisor's last report.
func (s *Server) mayReply(user, session string) bool {
	for _, e := range s.board.States(user) {
		if e.Session == session {
			return slices.Contains(contract.Approvals.Reply.States, string(e.State))
		}
	}
	return false
}

// CanReply: the entry's session takes a reply from the inbox.
func (e inboxEntry) CanReply() bool {
	return slices.Contains(contract.Approvals.Reply.States, string(e.Status.State))
}

// replyPost is POST authPage(reply page) of the box origin: a logged-in
// person's reply (the form's user, session and text) to a session of a
// user the login may open that waits for one; then back to the box page.
// The text is one line of clean text, at most the prompt's bound.
func (s *Server) replyPost(w http.ResponseWriter, r *http.Request) {
	now := s.clock.Now()
	sess, ok := s.session(r, "", now)
	if !ok {
		s.message(w, http.StatusForbidden, "Not logged in", "Log in to reply to an agent.")
		return
	}
	if err := r.ParseForm(); err != nil {
		s.message(w, http.StatusBadRequest, "Bad request", "The form could not be read.")
		return
	}
	user, session, text := r.PostForm.Get("user"), r.PostForm.Get("session"), strings.TrimSpace(r.PostForm.Get("text"))
	if !s.cfg.mayOpen(sess.Login, user) {
		s.message(w, http.StatusForbidden, "Not allowed", "This login may not reply to that user's agents.")
		return
	}
	limit := contract.Conversations.PromptMaxBytes
	switch {
	case text == "":
		s.message(w, http.StatusBadRequest, "Nothing sent", "The reply is empty.")
		return
	case len(text) > limit || approval.Clean(text, limit) != text || strings.ContainsAny(text, "\n\t"):
		s.message(w, http.StatusBadRequest, "Nothing sent", "A reply is one line of text, without control characters.")
		return
	case !contract.Names.Session.Match(session) || !s.mayReply(user, session):
		s.message(w, http.StatusConflict, "Nothing sent", "That session no longer waits for a reply.")
		return
	}
	if !s.replies.add(user, Reply{Session: session, Text: text}, now) {
		s.message(w, http.StatusTooManyRequests, "Nothing sent", "Too many replies wait for that user's supervisor; try again in a moment.")
		return
	}
	s.log.Printf("login %s: a reply of %d bytes to %s's session %s", sess.Login, len(text), user, escape.Quote(session, 64))
	redirect(w, http.StatusSeeOther, "/")
}
