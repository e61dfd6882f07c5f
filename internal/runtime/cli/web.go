package cli

import "context"

// auth runs `agent-box auth SUBCOMMAND`.
func (p *Program) auth(ctx context.Context, args []string) error {
	if len(args) == 1 && args[0] == "serve" {
		return p.authServe(ctx)
	}
	return usagef("usage: auth serve")
}

// web runs `agent-box web SUBCOMMAND`.
func (p *Program) web(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("web: missing subcommand (serve, hash-password, revoke LOGIN)")
	}
	switch args[0] {
	case "serve":
		if len(args) != 1 {
			return usagef("usage: web serve")
		}
		return p.webServe(ctx)
	case "hash-password":
		if len(args) != 1 {
			return usagef("usage: web hash-password (the password is read from stdin, never from arguments)")
		}
		return p.webHashPassword()
	case "revoke":
		if len(args) != 2 {
			return usagef("usage: web revoke LOGIN")
		}
		return p.webRevoke(ctx, args[1])
	}
	return usagef("unknown web subcommand %q", args[0])
}
