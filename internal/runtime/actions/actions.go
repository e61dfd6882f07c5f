// Package actions changes a user's sessions the one way both the CLI and
// the web daemon's settings page do: validated input, then one locked
// registry update (or, for a restart, one message to the supervisor). The
// supervisor applies a registry change within a second.
package actions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/control"
	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/state"
)

// InputError is input a person got wrong (the CLI's usage error, exit 2;
// the page's 400).
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputf(format string, a ...any) error { return &InputError{fmt.Sprintf(format, a...)} }

// Agents returns the agents table AGENT_BOX_AGENTS names (the unit's, else
// the login file's: root-owned store files) and the default agent.
// state.json is never consulted: its owner can write it, and exec-session
// executes what the table names.
func Agents(e paths.Env) (agents.Table, string, error) {
	if e.AgentsFile == "" {
		return nil, "", fmt.Errorf("no agents table: %s is unset and there is no login file %s", paths.EnvAgents, paths.LoginFile("<user>"))
	}
	a, err := agents.Load(e.AgentsFile)
	return a, e.DefaultAgent, err
}

// Spec is a session to add. Empty Agent is the default agent; empty Cwd
// is the home.
type Spec struct {
	Name, Agent, Cwd string
	Args             []string
	// Prompt is the kickoff prompt ("": none), given to the agent at the
	// session's first spawn (package conversation).
	Prompt string
}

// Add adds a session: a valid, new name; an agent of the user's table;
// an existing working directory.
func Add(ctx context.Context, e paths.Env, table agents.Table, defaultAgent string, s Spec) error {
	return AddAll(ctx, e, table, defaultAgent, []Spec{s})
}

// AddAll adds every session of specs in one registry write, or none: each
// is checked as Add checks one, and a name the registry holds or that
// specs name twice refuses them all.
func AddAll(ctx context.Context, e paths.Env, table agents.Table, defaultAgent string, specs []Spec) error {
	if len(specs) == 0 {
		return inputf("no session to add")
	}
	seen := make(map[string]bool, len(specs))
	add := make([]registry.Session, len(specs))
	now := time.Now().UTC()
	for i, s := range specs {
		if err := registry.CheckName(s.Name); err != nil {
			return err
		}
		if seen[s.Name] {
			return fmt.Errorf("%w: %s is named twice", registry.ErrDuplicate, escape.Quote(s.Name, 64))
		}
		seen[s.Name] = true
		agent := s.Agent
		if agent == "" {
			agent = defaultAgent
		}
		if agent == "" {
			return inputf("no --agent given and no default agent (%s)", paths.EnvDefaultAgent)
		}
		if _, ok := table[agent]; !ok {
			return fmt.Errorf("%w %q (known: %s)", agents.ErrUnknownAgent, agent, escape.String(strings.Join(table.Names(), ", ")))
		}
		cwd := s.Cwd
		if cwd == "" {
			cwd = e.Home
		}
		cwd, err := filepath.Abs(cwd)
		if err != nil {
			return err
		}
		if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
			return inputf("working directory %q is not a directory", cwd)
		}
		if err := conversation.CheckPrompt(s.Prompt); err != nil {
			return inputf("session %s: %v", escape.Quote(s.Name, 64), err)
		}
		add[i] = registry.Session{Name: s.Name, Agent: agent, Args: s.Args, Cwd: cwd, Created: now, Updated: now}
	}
	return registry.Update(ctx, e.Registry(), func(r *registry.Registry) error {
		for _, s := range add {
			if err := r.Add(s); err != nil {
				return err
			}
		}
		// Under the registry's lock, before the supervisor can see the
		// sessions: each conversation starts empty, with its prompt.
		for _, s := range specs {
			if err := conversation.Reset(ctx, e.ConversationsDir(), s.Name, s.Prompt); err != nil {
				return err
			}
		}
		return nil
	})
}

// SetStopped parks (stopped) or unparks a session.
func SetStopped(ctx context.Context, e paths.Env, name string, stopped bool) error {
	if err := registry.CheckName(name); err != nil {
		return err
	}
	return registry.Update(ctx, e.Registry(), func(r *registry.Registry) error {
		s, ok := r.Find(name)
		if !ok {
			return fmt.Errorf("%w: %q", registry.ErrUnknown, name)
		}
		s.Stopped = stopped
		s.Updated = time.Now().UTC()
		return nil
	})
}

// Remove removes a session (its name is tombstoned).
func Remove(ctx context.Context, e paths.Env, name string) error {
	if err := registry.CheckName(name); err != nil {
		return err
	}
	if err := registry.Update(ctx, e.Registry(), func(r *registry.Registry) error { return r.Remove(name) }); err != nil {
		return err
	}
	return conversation.Remove(e.ConversationsDir(), name)
}

// RestartFresh restarts session name with a new conversation: the next
// spawn starts one instead of resuming (the transcript stays where the
// agent keeps it).
func RestartFresh(ctx context.Context, e paths.Env, name string) error {
	if err := registry.CheckName(name); err != nil {
		return err
	}
	if err := restartable(e, name); err != nil {
		return err
	}
	if err := conversation.Update(ctx, e.ConversationsDir(), name, func(r *conversation.Record) error {
		r.WantFresh = true
		return nil
	}); err != nil {
		return err
	}
	return Restart(e, name)
}

// Restart asks the running supervisor to restart one session, or every
// session when name is "".
func Restart(e paths.Env, name string) error {
	if err := restartable(e, name); err != nil {
		return err
	}
	err := control.Send(e.SupervisorSocket(), control.Restart(name).Format())
	if control.IsNotListening(err) {
		return fmt.Errorf("%w (nothing listens on %s)", state.ErrNotRunning, e.SupervisorSocket())
	}
	return err
}

// restartable checks that the supervisor runs and that session name ("":
// every session) exists and is not stopped.
func restartable(e paths.Env, name string) error {
	if _, err := state.Read(e.StateFile()); err != nil {
		return err
	}
	if name != "" {
		if err := registry.CheckName(name); err != nil {
			return err
		}
		reg, err := registry.Load(e.Registry())
		if err != nil {
			return err
		}
		s, ok := reg.Find(name)
		if !ok {
			return fmt.Errorf("%w: %q", registry.ErrUnknown, name)
		}
		if s.Stopped {
			return fmt.Errorf("session %q is stopped; use 'agent-box session start %s'", name, name)
		}
	}
	return nil
}
