package cli

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/sdlisten"
	"github.com/agent-box/agent-box/internal/runtime/web"
)

// webServe runs the per-user web daemon (docs/web-contract.md): as the
// user, on the socket systemd passes as "web". Before anything else it
// makes itself non-dumpable and marks every inherited descriptor
// close-on-exec.
func (p *Program) webServe(ctx context.Context) error {
	if err := web.SetNotDumpable(); err != nil {
		return fmt.Errorf("web serve: %w", err)
	}
	if err := web.CloseOnExecInherited(); err != nil {
		return fmt.Errorf("web serve: %w", err)
	}
	e, err := p.envCfg()
	if err != nil {
		return err
	}
	cfg, err := web.FromEnv(os.Getenv, e)
	if err != nil {
		return err
	}
	ls, err := sdlisten.Listeners()
	if err != nil {
		return fmt.Errorf("web serve: %w", err)
	}
	want := []string{*contract.Sockets.Web.FDName}
	if len(cfg.Hooks.Hooks) > 0 {
		want = append(want, *contract.Sockets.Hook.FDName)
	}
	l, err := sdlisten.Take(ls, want...)
	if err != nil {
		return fmt.Errorf("web serve: %w", err)
	}
	var hook net.Listener
	if len(l) == 2 {
		hook = l[1]
	}
	cfg.ProcEnv, cfg.Log = os.Environ(), p.Stderr
	return web.Serve(ctx, l[0], hook, cfg)
}
