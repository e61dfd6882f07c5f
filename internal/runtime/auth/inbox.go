package auth

import (
	"bytes"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/board"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/httpserve"
)

// The inbox (docs/web-contract.md, "Listener pages"): on the box origin,
// for a login, every session in one of the contract's inbox states across
// the agent users the login may open, first in the page (GET /), then live
// through an event stream (GET of the inbox page). The box origin is the
// password origin, so nothing an agent can write is shown there: an entry
// shows its user, state, reason and time, and carries its session's name
// only inside its Open form (the hand-over's next path).

// inboxEntry is one line of a login's inbox.
type inboxEntry struct {
	User, Session string
	Status        attention.Status
	Since         time.Time
}

// Key tells entries apart for the page's script (a new key is a new
// notification): an attribute, never shown. A limited session's tries are
// not in it: one notification when it is parked.
func (e inboxEntry) Key() string {
	return e.User + " " + e.Session + " " + attention.Status{State: e.Status.State, Reason: e.Status.Reason}.String()
}

// State is what the page shows of the entry's state: its state and
// reason; a limited session's tries are shown by Try and Until.
func (e inboxEntry) State() string {
	if e.Status.Try > 0 {
		return string(e.Status.State)
	}
	return e.Status.String()
}

// UntilUTC is a limited session's next try for the page, like SinceUTC
// (with the day when it is not the day of the entry's time); "" when it
// waits for none.
func (e inboxEntry) UntilUTC() string {
	u := e.Status.Until.UTC()
	if u.IsZero() || e.Status.Try == 0 {
		return ""
	}
	if u.YearDay() != e.Since.UTC().YearDay() || u.Year() != e.Since.UTC().Year() {
		return u.Format("Jan 2 15:04 UTC")
	}
	return u.Format("15:04 UTC")
}

// UntilISO is UntilUTC for a <time datetime>.
func (e inboxEntry) UntilISO() string { return e.Status.Until.UTC().Format(time.RFC3339) }

// Next is the local path the entry's Open form hands over to.
func (e inboxEntry) Next() string { return contract.TerminalLink(e.Session) }

// Urgent: the session waits for a person (it needs you, or it keeps
// crashing), as opposed to having ended a piece of work.
func (e inboxEntry) Urgent() bool {
	return e.Status.State == attention.NeedsYou || e.Status.State == attention.CrashLooping
}

// SinceUTC is the entry's time for the page (the script shows it in the
// browser's time zone).
func (e inboxEntry) SinceUTC() string { return e.Since.UTC().Format("15:04 UTC") }

// SinceISO is the entry's time for a <time datetime>.
func (e inboxEntry) SinceISO() string { return e.Since.UTC().Format(time.RFC3339) }

// inbox is login's entries at now: of the users the login may open (and
// no other, whatever the request), the sessions in an inbox state, in the
// contract's order of states, then the longest waiting first.
func (s *Server) inbox(login string, now time.Time) []inboxEntry {
	var out []inboxEntry
	for _, u := range s.cfg.Logins[login].Users {
		for _, e := range s.board.Listing(u, now) {
			if board.Rank[e.State] > 0 {
				st := attention.Status{State: e.State, Reason: e.Reason, Until: e.Until, Try: e.Try}
				out = append(out, inboxEntry{User: u, Session: e.Session, Status: st, Since: e.Since})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ra, rb := board.Rank[a.Status.State], board.Rank[b.Status.State]; ra != rb {
			return ra < rb
		}
		if !a.Since.Equal(b.Since) {
			return a.Since.Before(b.Since)
		}
		if a.User != b.User {
			return a.User < b.User
		}
		return a.Session < b.Session
	})
	return out
}

// inboxList is what the inbox's list shows: the waiting permission
// requests first, then the sessions' entries.
type inboxList struct {
	Requests []requestView
	Entries  []inboxEntry
}

func (s *Server) inboxData(login string, now time.Time) inboxList {
	return inboxList{Requests: s.requests(login, now), Entries: s.inbox(login, now)}
}

// inboxItems is the inbox's list items, as the page and the stream carry
// them (html/template, so the stream's script may set them as HTML).
func (s *Server) inboxItems(login string, now time.Time) ([]byte, error) {
	var b bytes.Buffer
	err := pages().ExecuteTemplate(&b, "inbox", s.inboxData(login, now))
	return b.Bytes(), err
}

// inboxStream is GET of the inbox page on the box origin: with a live box
// session, an event stream (text/event-stream) whose "inbox" events carry
// the list items whenever they change (the first at once), a comment line
// every keepAlive, and an "end" event, then the end of the stream, when
// the session ends (logout, revoke, a changed password at once; expiry
// and idleness at the next keep-alive). An open stream counts as activity,
// as an open terminal does. Without a session, or from another origin
// (httpserve.OwnStream): 403, no stream. At most
// maxStreams per login: one more ends the oldest, with a "closed" event.
func (s *Server) inboxStream(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(r, "", s.clock.Now())
	if !ok {
		httpserve.Plain(w, http.StatusForbidden, "forbidden: no live session on this origin")
		return
	}
	if !httpserve.OwnStream(r) {
		httpserve.Plain(w, http.StatusForbidden, "forbidden: not this origin's own event stream")
		return
	}
	if err := httpserve.Unbound(w); err != nil {
		s.log.Printf("inbox stream: %v", err)
		httpserve.Plain(w, http.StatusInternalServerError, "internal error")
		return
	}
	st := s.streams.Open(sess.Login, contract.Attention.Inbox.MaxStreams)
	defer s.streams.Close(sess.Login, st)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	tick := time.NewTicker(s.keepAlive)
	defer tick.Stop()
	var last []byte
	touch := false
	for {
		wake := s.changed.Wait() // before reading, so no change between is missed
		now := s.clock.Now()
		if _, alive := s.store.alive(sess.ID, now); !alive {
			writeEvent(w, "end", []byte("ended"))
			rc.Flush()
			return
		}
		if touch && s.store.touch(sess.ID, now) {
			s.persistLogged(now)
		}
		items, err := s.inboxItems(sess.Login, now)
		if err != nil {
			s.log.Printf("inbox: %v", err)
			return
		}
		var out bytes.Buffer
		if !bytes.Equal(items, last) {
			writeEvent(&out, "inbox", items)
			last = items
		} else if touch {
			out.WriteString(":\n\n")
		}
		if out.Len() > 0 {
			if _, err := w.Write(out.Bytes()); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
		touch = false
		select {
		case <-wake:
		case <-tick.C:
			touch = true
		case <-st.Evicted:
			writeEvent(w, "closed", []byte(evictedText))
			rc.Flush()
			return
		case <-r.Context().Done():
			return
		case <-s.stopping:
			return
		}
	}
}

// evictedText is the "closed" event's data: why the stream ended with its
// session alive (the page shows it and stops; reconnecting would end
// another page's stream in turn).
const evictedText = "this login has too many inbox pages open"

// writeEvent writes one server-sent event: its name, then each line of
// data as a data line.
func writeEvent(w interface{ Write([]byte) (int, error) }, name string, data []byte) {
	var b strings.Builder
	b.WriteString("event: " + name + "\n")
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	w.Write([]byte(b.String()))
}
