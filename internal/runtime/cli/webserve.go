package cli

import (
	"context"
	"fmt"
	"os"

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
	l, err := sdlisten.Take(ls, "web")
	if err != nil {
		return fmt.Errorf("web serve: %w", err)
	}
	cfg.ProcEnv, cfg.Log = os.Environ(), p.Stderr
	return web.Serve(ctx, l[0], cfg)
}
