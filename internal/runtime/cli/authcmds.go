package cli

import (
	"context"
	"errors"
)

// authServe runs the auth service (docs/web-contract.md).
func (p *Program) authServe(ctx context.Context) error {
	return errors.New("auth serve: not implemented yet")
}

// webHashPassword reads a password from stdin and prints its hash.
func (p *Program) webHashPassword() error {
	return errors.New("web hash-password: not implemented yet")
}

// webRevoke ends every session of login through the control socket.
func (p *Program) webRevoke(ctx context.Context, login string) error {
	return errors.New("web revoke: not implemented yet")
}
