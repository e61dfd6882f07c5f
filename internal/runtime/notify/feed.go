package notify

import (
	"context"
	"net"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/journal"
)

// feedQueue bounds the notifications waiting for the feed socket.
const feedQueue = 256

// Feed writes datagrams to the notify service's socket (the auth
// service's side of the feed), one goroutine (Run), so that a full socket or a missing service never holds a
// request; beyond feedQueue waiting, a notification is dropped and
// logged.
type Feed struct {
	path string
	ch   chan []byte
	log  *journal.Logger
}

// NewFeed is a feed to the socket at path, logging to log.
func NewFeed(path string, log *journal.Logger) *Feed {
	return &Feed{path: path, ch: make(chan []byte, feedQueue), log: log}
}

// Send queues datagram b; it never waits.
func (f *Feed) Send(b []byte) {
	select {
	case f.ch <- b:
	default:
		f.log.Printf("notify: dropped a notification: %d are waiting for %s", feedQueue, f.path)
	}
}

// Run writes the queued datagrams until ctx ends. A failure is logged
// once until a write succeeds again (the socket is missing while the
// notify service's socket unit is, for example).
func (f *Feed) Run(ctx context.Context) {
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
