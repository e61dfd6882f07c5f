// Package appctl is `agent-box app`: a user's agents manage that user's own
// apps (docs/runtime-contract.md, "Apps") without root. It runs systemctl
// and journalctl as the user: reading a unit's state needs no privilege;
// start, stop and restart (and the reset of a failed unit) are allowed by
// the module's polkit rules for exactly the user's own app units (the
// contract's apps.manage); the logs are the app's lines in the user's journal
// (its program and launcher run as the user; PID 1's lines are not there).
package appctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// Kinds of errors, for the CLI's exit codes.
var (
	// ErrName: NAME is not an app name (another user's label included).
	ErrName = errors.New("not an app name")
	// ErrUnknown: the user has no such app.
	ErrUnknown = errors.New("no such app")
)

// Ctl manages the apps of User.
type Ctl struct {
	User string
	// Run runs a program (systemctl or journalctl) with args and returns
	// its standard output; the default runs it from PATH.
	Run func(ctx context.Context, name string, args ...string) ([]byte, error)
}

func (c *Ctl) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if c.Run != nil {
		return c.Run(ctx, name, args...)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return out, fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
		}
		return out, fmt.Errorf("%s %s: %s", name, strings.Join(args, " "), msg)
	}
	return out, nil
}

// Unit is the unit of the user's app name, after checking the name: an
// app of another user cannot even be named (app names hold no '-').
func (c *Ctl) Unit(name string) (string, error) {
	if !contract.Names.App.Match(name) {
		return "", fmt.Errorf("%q: %w (%s); agent-box app manages the apps of %s, the user running it", name, ErrName, contract.Names.App.What, c.User)
	}
	return strings.Replace(contract.Apps.Unit, "<label>", contract.AppLabel(c.User, name), 1), nil
}

// State is what systemd says of an app's unit.
type State struct {
	Name, Unit string
	Active     string    // ActiveState (SubState)
	Status     string    // the launcher's status text: waiting, running, backing off
	Since      time.Time // ActiveEnterTimestamp; zero when never active
	Restarts   int       // NRestarts: of the launcher, by systemd
}

var showProps = []string{"LoadState", "ActiveState", "SubState", "StatusText", "ActiveEnterTimestamp", "NRestarts"}

// Status reads the state of the user's app name.
func (c *Ctl) Status(ctx context.Context, name string) (State, error) {
	unit, err := c.Unit(name)
	if err != nil {
		return State{}, err
	}
	out, err := c.run(ctx, "systemctl", "show", "--timestamp=unix", "--property="+strings.Join(showProps, ","), "--", unit)
	if err != nil {
		return State{}, err
	}
	p := parseShow(out)
	if p["LoadState"] != "loaded" {
		return State{}, fmt.Errorf("%s has no app %q (services.agent-box.users.%s.apps): %w", c.User, name, c.User, ErrUnknown)
	}
	s := State{Name: name, Unit: unit, Active: p["ActiveState"] + " (" + p["SubState"] + ")", Status: p["StatusText"]}
	s.Restarts, _ = strconv.Atoi(p["NRestarts"])
	if secs, err := strconv.ParseInt(strings.TrimPrefix(p["ActiveEnterTimestamp"], "@"), 10, 64); err == nil && secs > 0 {
		s.Since = time.Unix(secs, 0)
	}
	return s, nil
}

// parseShow reads systemctl show's KEY=VALUE lines.
func parseShow(out []byte) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// List reads the state of each of the user's apps: the loaded app units
// whose label names this user (a glob alone would also match the apps of
// a user whose name ends in "--" and this one's).
func (c *Ctl) List(ctx context.Context) ([]State, error) {
	pattern := strings.Replace(contract.Apps.Unit, "<label>", contract.AppLabel(c.User, "*"), 1)
	out, err := c.run(ctx, "systemctl", "list-units", "--all", "--plain", "--no-legend", "--no-pager", "--full", "--", pattern)
	if err != nil {
		return nil, err
	}
	prefix, suffix, _ := strings.Cut(contract.Apps.Unit, "<label>")
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		label, ok := strings.CutPrefix(f[0], prefix)
		label, ok2 := strings.CutSuffix(label, suffix)
		if u, app, ok3 := contract.SplitAppLabel(label); ok && ok2 && ok3 && u == c.User && contract.Names.App.Match(app) {
			names = append(names, app)
		}
	}
	slices.Sort(names)
	var states []State
	for _, n := range slices.Compact(names) {
		s, err := c.Status(ctx, n)
		if err != nil {
			return nil, err
		}
		states = append(states, s)
	}
	return states, nil
}

// Do runs verb (start, stop or restart) on the user's app name; a failed
// unit is reset first, so that a start always gets its chance. Never a
// password prompt: polkit allows it or refuses it.
func (c *Ctl) Do(ctx context.Context, verb, name string) error {
	if !slices.Contains(contract.Apps.Manage.Verbs, verb) {
		return fmt.Errorf("unknown action %q (start, stop or restart)", verb)
	}
	s, err := c.Status(ctx, name)
	if err != nil {
		return err
	}
	if strings.HasPrefix(s.Active, "failed") {
		if _, err := c.run(ctx, "systemctl", "--no-ask-password", contract.Apps.Manage.Reset, "--", s.Unit); err != nil {
			return err
		}
	}
	_, err = c.run(ctx, "systemctl", "--no-ask-password", verb, "--", s.Unit)
	return err
}

// Logs returns the last lines (at most n) of the user's app name from
// the user's journal.
func (c *Ctl) Logs(ctx context.Context, name string, n int) ([]byte, error) {
	s, err := c.Status(ctx, name)
	if err != nil {
		return nil, err
	}
	return c.run(ctx, "journalctl", "--no-pager", "--quiet", "--output=short-iso", "--lines="+strconv.Itoa(n), "--unit="+s.Unit)
}
