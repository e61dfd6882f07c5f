package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agent-box/agent-box/internal/runtime/auth"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/pwhash"
	"github.com/agent-box/agent-box/internal/runtime/sdlisten"
)

// authServe runs the auth service (docs/web-contract.md).
func (p *Program) authServe(ctx context.Context) error {
	cfg, err := auth.LoadConfig(os.Getenv(contract.Env.AuthConfig.Name), os.Getenv("CREDENTIALS_DIRECTORY"))
	if err != nil {
		return err
	}
	// systemd joins several StateDirectory= paths with ':'; the unit has one
	stateDir, _, _ := strings.Cut(os.Getenv("STATE_DIRECTORY"), ":")
	srv, err := auth.New(auth.Options{Config: cfg, StateDir: stateDir, Log: p.Stderr})
	if err != nil {
		return err
	}
	passed, err := sdlisten.Listeners()
	if err != nil {
		return fmt.Errorf("auth serve: %w", err)
	}
	ls, err := sdlisten.Take(passed, auth.ListenerNames...)
	if err != nil {
		return fmt.Errorf("auth serve: %w", err)
	}
	return srv.Serve(ctx, ls[0], ls[1], ls[2], ls[3])
}

// webHashPassword reads a password from stdin and prints its hash.
func (p *Program) webHashPassword() error {
	pw, err := pwhash.Read(p.Stdin, p.Stderr)
	if errors.Is(err, pwhash.ErrEmpty) || errors.Is(err, pwhash.ErrTooLong) {
		return usagef("web hash-password: %v (it is read from stdin, one line)", err)
	}
	if err != nil {
		return fmt.Errorf("web hash-password: %w", err)
	}
	_, err = fmt.Fprintln(p.Stdout, pwhash.NewHash(pw).String())
	return err
}

// webRevoke ends every session of login through the control socket.
func (p *Program) webRevoke(ctx context.Context, login string) error {
	if err := auth.CheckLogin(login); err != nil {
		return usagef("web revoke: %v", err)
	}
	n, err := auth.Revoke(ctx, auth.ControlSocket, login)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(p.Stdout, n)
	return err
}
