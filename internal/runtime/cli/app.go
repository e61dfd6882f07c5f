package cli

import (
	"context"
	"fmt"
	"os/user"
	"strconv"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/appctl"
)

// appUsage is `agent-box app`'s usage line.
const appUsage = "usage: app ls | status NAME | start NAME | stop NAME | restart NAME | logs [-n N] NAME"

// appCtl is the Ctl of the user running; tests replace it.
var appCtl = func() (*appctl.Ctl, error) {
	u, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("app: who is running: %w", err)
	}
	return &appctl.Ctl{User: u.Username}, nil
}

// app is `agent-box app`: the running user's own apps.
func (p *Program) app(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("%s", appUsage)
	}
	c, err := appCtl()
	if err != nil {
		return err
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "ls":
		if len(rest) != 0 {
			return usagef("usage: app ls")
		}
		states, err := c.List(ctx)
		if err != nil {
			return appErr(err)
		}
		if len(states) == 0 {
			fmt.Fprintf(p.Stdout, "%s has no apps (services.agent-box.users.%s.apps)\n", c.User, c.User)
		}
		for _, s := range states {
			fmt.Fprintf(p.Stdout, "%s\t%s\t%s\t%s\n", s.Name, s.Active, since(s.Since), s.Status)
		}
		return nil
	case "status":
		if len(rest) != 1 {
			return usagef("usage: app status NAME")
		}
		s, err := c.Status(ctx, rest[0])
		if err != nil {
			return appErr(err)
		}
		fmt.Fprintf(p.Stdout, "app: %s (%s)\nstate: %s, %s\nstatus: %s\nlauncher restarts: %d\n", s.Name, s.Unit, s.Active, since(s.Since), s.Status, s.Restarts)
		return nil
	case "start", "stop", "restart":
		if len(rest) != 1 {
			return usagef("usage: app %s NAME", sub)
		}
		return appErr(c.Do(ctx, sub, rest[0]))
	case "logs":
		n := 50
		if len(rest) == 3 && rest[0] == "-n" {
			v, err := strconv.Atoi(rest[1])
			if err != nil || v < 1 {
				return usagef("app logs: -n takes a positive number, not %q", rest[1])
			}
			n, rest = v, rest[2:]
		}
		if len(rest) != 1 {
			return usagef("usage: app logs [-n N] NAME")
		}
		out, err := c.Logs(ctx, rest[0], n)
		if err != nil {
			return appErr(err)
		}
		p.Stdout.Write(out)
		return nil
	}
	return usagef("app: unknown subcommand %q\n%s", sub, appUsage)
}

// appErr names the command in appctl's errors (exitCode gives ErrName
// and ErrUnknown their codes).
func appErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("app: %w", err)
}

// since says since when a unit is in its state.
func since(t time.Time) string {
	if t.IsZero() {
		return "never active"
	}
	return "since " + t.UTC().Format(time.RFC3339) + " (" + time.Since(t).Round(time.Second).String() + ")"
}
