package web

import (
	"context"
	"net"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/peer"
)

// ttydDialTimeout bounds the connection to U's ttyd socket.
const ttydDialTimeout = 5 * time.Second

// dialTTYD connects to U's ttyd socket and checks who listens on it: uid
// U, and a process in agent-box-term@U.service running ttyd. Anything
// else is closed unused (a *peer.Error).
func (s *Server) dialTTYD(ctx context.Context, _, _ string) (net.Conn, error) {
	d := net.Dialer{Timeout: ttydDialTimeout}
	c, err := d.DialContext(ctx, "unix", s.cfg.TTYDSocket)
	if err != nil {
		return nil, err
	}
	if _, err := peer.Check(c.(*net.UnixConn), s.cfg.UID, s.cfg.InUnit, s.cfg.IsTTYD); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// TermUnit is the unit of U's ttyd.
func TermUnit(user string) string { return contract.For(contract.Sockets.TTYD.Unit, user) }

// InTermUnit is the real unit check: /proc/<pid>/cgroup must put the
// process in agent-box-term@U.service of the system manager.
func InTermUnit(user string) func(pid int) error { return peer.InUnit(TermUnit(user)) }

// RunsProgram is the program check of ttyd (peer.RunsProgram).
func RunsProgram(path string) func(pid int) error { return peer.RunsProgram(path) }
