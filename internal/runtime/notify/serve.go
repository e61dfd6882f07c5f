package notify

import (
	"context"
	"errors"
	"net"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/journal"
)

// Serve reads the feed's datagrams from conn and queues each event on s
// until ctx ends. A datagram that is not an event, or one for a login
// without a URL, is logged (what was wrong, never its contents) and
// dropped.
func Serve(ctx context.Context, conn net.PacketConn, s *Sender, log *journal.Logger) error {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	buf := make([]byte, contract.Attention.Notify.MaxEventBytes+1)
	for {
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		e, err := ParseFeed(buf[:n])
		if err != nil {
			log.Printf("dropped a datagram of %d bytes: %v", n, err)
			continue
		}
		if !s.Enqueue(e) {
			log.Printf("dropped a notification for login %s: it has no URL (%s%s)", e.Login, contract.Creds.NotifyPrefix, e.Login)
		}
	}
}
