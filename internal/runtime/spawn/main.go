package spawn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/envfile"
	"github.com/agent-box/agent-box/internal/runtime/journal"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/registry"
)

// Session is `exec-session NAME`, what tmux runs in session name's pane
// (the program agent-box-exec, and agent-box's command of the same
// name): the supervisor's spawn environment over the inherited one, the
// session and its agent from the registry and the agents table, the env
// file, oom_score_adj, the conversation (Converse), then execve of the
// agent. It returns only on error; its lines for the journal go there
// (stderr is the pane).
func Session(name string, stderr io.Writer) error {
	// The environment inherited from the tmux server is the sessions
	// unit's, set when the server started; the supervisor's spawn
	// environment (the configuration now) goes over it first, so that the
	// agents table, PATH and `environment` are the current ones.
	e0, err := paths.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	environ, err := Overlay(os.Environ(), e0.SpawnEnvFile())
	if err != nil {
		return err
	}
	os.Clearenv()
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
	e, err := paths.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	if err := e.CheckOwnHome(); err != nil {
		return err
	}
	if e, err = e.WithLogin(); err != nil {
		return err
	}
	if e.AgentsFile == "" {
		return fmt.Errorf("no agents table: %s is unset and there is no login file %s", paths.EnvAgents, paths.LoginFile("<user>"))
	}
	table, err := agents.Load(e.AgentsFile)
	if err != nil {
		return err
	}
	if err := RaiseOOMScore(OOMScoreAdj); err != nil {
		fmt.Fprintf(stderr, "agent-box: warning: oom_score_adj: %v\n", err)
	}
	environ = append(os.Environ(), contract.Env.Session.Name+"="+name)
	plan, err := Prepare(e, table, name, environ)
	if err != nil {
		return err
	}
	log := journal.New(journal.Native{Identifier: "agent-box", Fallback: stderr}, "agent-box")
	for _, l := range Converse(context.Background(), e, plan.Agent, name, &plan, time.Now().UTC()) {
		log.Printf("%s", l)
	}
	return Exec(plan)
}

// ExitCode is the exit status of an error Session returned, as agent-box
// gives it for the same error (cmd/agent-box's tests check they agree):
// the contract's code for an unknown session, an invalid name or a value
// over a limit, an unknown agent, a corrupt registry or env file, and
// for a home that is not the user's; 1 for any other.
func ExitCode(err error) int {
	var rc *registry.CorruptError
	var ec *envfile.CorruptError
	x := contract.ExitCodes
	switch {
	case errors.Is(err, registry.ErrUnknown):
		return x.Unknown.Code
	case errors.Is(err, registry.ErrInvalidName), errors.Is(err, registry.ErrTooLarge),
		errors.Is(err, envfile.ErrInvalidKey), errors.Is(err, envfile.ErrInvalidValue):
		return x.InvalidName.Code
	case errors.Is(err, agents.ErrUnknownAgent):
		return x.UnknownAgent.Code
	case errors.As(err, &rc), errors.As(err, &ec):
		return x.Corrupt.Code
	case errors.Is(err, paths.ErrForeignHome):
		return x.ForeignHome.Code
	}
	return x.Failure.Code
}
