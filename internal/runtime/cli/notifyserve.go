package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/journal"
	"github.com/agent-box/agent-box/internal/runtime/notify"
	"github.com/agent-box/agent-box/internal/runtime/sdlisten"
)

// notifyServe runs the notify service (docs/web-contract.md,
// "Notifications"): the logins' URLs from its credentials, the feed from
// the socket systemd passes.
func (p *Program) notifyServe(ctx context.Context) error {
	log := journal.New(p.Stderr, "agent-box-notify")
	urls, insecure, err := notify.LoadURLs(os.Getenv("CREDENTIALS_DIRECTORY"))
	if err != nil {
		return err
	}
	for _, l := range insecure {
		log.Printf("warning: the notify URL of login %s is plain http: its token and the notifications travel unencrypted", l)
	}
	conns, err := sdlisten.PacketConns()
	if err != nil {
		return fmt.Errorf("notify serve: %w", err)
	}
	name := *contract.Sockets.NotifyFeed.FDName
	conn, ok := conns[name]
	if !ok || len(conns) != 1 {
		return fmt.Errorf("notify serve: systemd passed %d sockets, want exactly one named %q", len(conns), name)
	}
	sender := notify.NewSender(urls, notify.DefaultLimits(), nil, log)
	work, stop := context.WithCancel(ctx)
	sender.Run(work)
	log.Printf("sending the notifications of %d logins", len(urls))
	err = notify.Serve(ctx, conn, sender, log)
	stop()
	sender.Wait()
	return err
}
