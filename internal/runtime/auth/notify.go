package auth

import (
	"time"

	"github.com/agent-box/agent-box/internal/runtime/board"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/notify"
)

// notifyFresh sends, for every login with notifications that may open
// user, one event per fresh entry to the notify service's feed
// (docs/web-contract.md, "Notifications"). It never waits: the feed is
// written off the request's path.
func (s *Server) notifyFresh(user string, fresh []board.Listed) {
	for _, e := range fresh {
		for _, l := range s.notifyLogins {
			if !s.cfg.mayOpen(l, user) {
				continue
			}
			s.feed.Send(notify.Event{
				Login: l, User: user, Session: e.Session, State: string(e.State), Reason: e.Reason,
				Link: s.cfg.originURL(origin{User: user}) + contract.TerminalLink(e.Session),
				Time: e.Since.UTC().Format(time.RFC3339),
			}.Feed())
		}
	}
}
