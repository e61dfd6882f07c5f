package web

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/httpserve"
)

// The live session list's stream, from the contract.
var (
	EventsPath        = contract.Web.SessionEvents.Path
	EventsKeepAlive   = contract.Duration(contract.Web.SessionEvents.KeepAlive)
	EventsSettle      = contract.Duration(contract.Web.SessionEvents.Settle)
	EventsMaxStreams  = contract.Web.SessionEvents.MaxStreams
	eventsTrackerName = "session list"
)

// streams bounds the open session-list streams of the daemon: one more
// than the most ends the oldest.
type streams struct {
	mu   sync.Mutex
	max  int
	open []chan struct{} // oldest first; closed when evicted
}

// add registers a stream; evicted is closed if a newer one pushes it out,
// and release unregisters it.
func (st *streams) add() (evicted <-chan struct{}, release func()) {
	ch := make(chan struct{})
	st.mu.Lock()
	st.open = append(st.open, ch)
	if len(st.open) > st.max {
		close(st.open[0])
		st.open = st.open[1:]
	}
	st.mu.Unlock()
	return ch, func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		for i, c := range st.open {
			if c == ch {
				st.open = append(st.open[:i], st.open[i+1:]...)
				break
			}
		}
	}
}

// sessionEvents is GET /events: U's session list as an event stream. A
// "sessions" event carries the list's rows (the page's own HTML, one
// data line each) at once and whenever they change; a comment line comes
// every EventsKeepAlive. The stream ends with an "end" event when its box
// session ends (checked with the terminals', every AliveInterval), and
// with "closed" when newer streams pushed it out (the page then stops
// instead of reconnecting). Nothing is computed between changes.
func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request) {
	if !httpserve.OwnStream(r) {
		plain(w, http.StatusForbidden, "forbidden: not this origin's own event stream")
		return
	}
	if err := httpserve.Unbound(w); err != nil {
		s.log.Printf("session list stream: %v", err)
	}
	rc := http.NewResponseController(w)
	session, _ := r.Context().Value(ctxKey{}).(string)
	ended := make(chan struct{})
	var once sync.Once
	unregister := s.alive.add(session, eventsTrackerName, func() { once.Do(func() { close(ended) }) })
	defer unregister()
	evicted, release := s.streams.add()
	defer release()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	keep := time.NewTicker(s.eventsKeepAlive)
	defer keep.Stop()
	last := ""
	for {
		wake := s.changes.wait() // before reading: a change meanwhile wakes again
		if rows := s.listRows(r.Context()); rows != last {
			if writeEvent(w, "sessions", rows) != nil || rc.Flush() != nil {
				return
			}
			last = rows
		}
		for waiting := true; waiting; {
			select {
			case <-r.Context().Done():
				return
			case <-ended:
				writeEvent(w, "end", "your login session has ended")
				rc.Flush()
				return
			case <-evicted:
				writeEvent(w, "closed", "too many session lists are open; this one stopped (reload to open it again)")
				rc.Flush()
				return
			case <-wake:
				waiting = false
			case <-keep.C:
				if _, err := w.Write([]byte(":\n\n")); err != nil || rc.Flush() != nil {
					return
				}
				s.changes.rearm()
			}
		}
	}
}

// writeEvent writes one event; each line of data is a data line.
func writeEvent(w http.ResponseWriter, name, data string) error {
	var b bytes.Buffer
	b.WriteString("event: " + name + "\n")
	for _, l := range strings.Split(data, "\n") {
		b.WriteString("data: " + l + "\n")
	}
	b.WriteString("\n")
	_, err := w.Write(b.Bytes())
	return err
}
