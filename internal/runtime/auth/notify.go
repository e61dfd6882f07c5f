package auth

import (
	"context"
	"net"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/journal"
	"github.com/agent-box/agent-box/internal/runtime/notify"
)

// feedQueue bounds the notifications waiting for the feed socket.
const feedQueue = 256

// notifyFresh sends, for every login with notifications that may open
// user, one event per fresh entry to the notify service's feed
// (docs/web-contract.md, "Notifications"). It never waits: the feed is
// written off the request's path.
func (s *Server) notifyFresh(user string, fresh []listed) {
	for _, e := range fresh {
		for _, l := range s.notifyLogins {
			if !s.cfg.mayOpen(l, user) {
				continue
			}
			s.feed.send(notify.Event{
				Login: l, User: user, Session: e.Session, State: string(e.State), Reason: e.Reason,
				Link: s.cfg.originURL(origin{User: user}) + contract.TerminalLink(e.Session),
				Time: e.Since.UTC().Format(time.RFC3339),
			}.Feed())
		}
	}
}

// feed writes datagrams to the notify service's socket, one goroutine
// (run), so that a full socket or a missing service never holds a
// request; beyond feedQueue waiting, a notification is dropped and
// logged.
type feed struct {
	path string
	ch   chan []byte
	log  *journal.Logger
}

func newFeed(path string, log *journal.Logger) *feed {
	return &feed{path: path, ch: make(chan []byte, feedQueue), log: log}
}

func (f *feed) send(b []byte) {
	select {
	case f.ch <- b:
	default:
		f.log.Printf("notify: dropped a notification: %d are waiting for %s", feedQueue, f.path)
	}
}

// run writes the queued datagrams until ctx ends. A failure is logged
// once until a write succeeds again (the socket is missing while the
// notify service's socket unit is, for example).
func (f *feed) run(ctx context.Context) {
	var conn net.Conn
	var failing string
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		var b []byte
		select {
		case b = <-f.ch:
		case <-ctx.Done():
			return
		}
		var err error
		if conn == nil {
			conn, err = net.Dial("unixgram", f.path)
		}
		if err == nil {
			conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, err = conn.Write(b)
		}
		if err != nil {
			if conn != nil {
				conn.Close()
				conn = nil
			}
			if err.Error() != failing {
				f.log.Printf("notify: a notification was not sent: %v", err)
				failing = err.Error()
			}
			continue
		}
		if failing != "" {
			f.log.Printf("notify: the feed takes notifications again")
			failing = ""
		}
	}
}
