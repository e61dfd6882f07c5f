package cli

import (
	"context"
	"errors"
)

// webServe runs the per-user web daemon (docs/web-contract.md).
func (p *Program) webServe(ctx context.Context) error {
	return errors.New("web serve: not implemented yet")
}
