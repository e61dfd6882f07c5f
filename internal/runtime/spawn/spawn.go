// Package spawn is `agent-box exec-session NAME`, the program tmux runs in a
// session's pane. It raises its own oom_score_adj, builds the environment
// (inherited environment, then ~/.config/agent-box/env on top), changes to
// the session's working directory and replaces itself (execve) with the
// agent's command. Arguments go from the registry and the agents table
// straight into execve: no shell ever sees them.
package spawn

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/envfile"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/registry"
)

// OOMScoreAdj is written to /proc/self/oom_score_adj: sessions are the
// kernel's first choice under memory pressure, before tmux and the supervisor.
const OOMScoreAdj = 1000

// Plan is what Exec will run.
type Plan struct {
	Path string   // absolute program
	Argv []string // argv[0] is the program path
	Dir  string
	Env  []string
	// Agent is the agents table's entry (for Converse).
	Agent agents.Agent
}

// Prepare resolves session name against the registry and agents table and
// reads the env file. environ is the inherited environment.
func Prepare(e paths.Env, table agents.Table, name string, environ []string) (Plan, error) {
	if err := registry.CheckName(name); err != nil {
		return Plan{}, err
	}
	reg, err := registry.Load(e.Registry())
	if err != nil {
		return Plan{}, err
	}
	s, ok := reg.Find(name)
	if !ok {
		return Plan{}, fmt.Errorf("%w: %q", registry.ErrUnknown, name)
	}
	ag, ok := table[s.Agent]
	if !ok {
		return Plan{}, fmt.Errorf("%w %q (known: %s)", agents.ErrUnknownAgent, s.Agent, escape.String(strings.Join(table.Names(), ", ")))
	}
	vars, err := envfile.Load(e.EnvFile())
	if err != nil {
		return Plan{}, err
	}
	argv := append([]string{ag.Command}, ag.Args...)
	argv = append(argv, s.Args...)
	// Where the web daemon stores webhook deliveries (docs/web-contract.md,
	// "Webhooks"); the env file may not move it.
	// AGENT_BOX_AGENT_PID: this process's pid, which the agent keeps
	// (execve), so that its hooks can tell it from a program it starts
	// (conversation.CheckReporter).
	env := envfile.Merge(envfile.Merge(environ, vars), []envfile.Var{
		{Key: contract.Env.HooksDir.Name, Value: e.HooksDir()},
		{Key: contract.Env.AgentPid.Name, Value: strconv.Itoa(os.Getpid())},
	})
	return Plan{Path: ag.Command, Argv: argv, Dir: s.Cwd, Env: env, Agent: ag}, nil
}

// RaiseOOMScore raises /proc/self/oom_score_adj to at least want. Raising is
// always permitted; a current value already higher is left alone.
func RaiseOOMScore(want int) error {
	const p = "/proc/self/oom_score_adj"
	cur, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(strings.TrimSpace(string(cur))); err == nil && n >= want {
		return nil
	}
	return os.WriteFile(p, []byte(strconv.Itoa(want)), 0)
}

// Exec changes to plan.Dir and execs the program. It returns only on error.
func Exec(plan Plan) error {
	if err := os.Chdir(plan.Dir); err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	err := syscall.Exec(plan.Path, plan.Argv, plan.Env)
	if errors.Is(err, syscall.E2BIG) {
		return fmt.Errorf("exec %q: %w: %s", plan.Path, err, largest(plan))
	}
	return fmt.Errorf("exec %q: %w", plan.Path, err)
}

// MaxArgStrlen is Linux's MAX_ARG_STRLEN: the longest single argument or
// environment string execve accepts (terminating NUL included).
const MaxArgStrlen = 32 * 4096

// largest names what most likely made execve fail with E2BIG: the first
// string over MaxArgStrlen-1 bytes, else the largest one, and the totals.
func largest(plan Plan) string {
	what, size := "", -1
	total := 0
	consider := func(kind, name string, n int) {
		total += n + 1
		if n > size || n >= MaxArgStrlen && size < MaxArgStrlen {
			what, size = kind+" "+name, n
		}
	}
	for i, a := range plan.Argv {
		consider("argument", strconv.Itoa(i), len(a))
	}
	for _, kv := range plan.Env {
		k, _, _ := strings.Cut(kv, "=")
		consider("environment variable", escape.String(k), len(kv))
	}
	limit := "the largest value"
	if size >= MaxArgStrlen {
		limit = fmt.Sprintf("over Linux's %d-byte limit per value", MaxArgStrlen-1)
	}
	return fmt.Sprintf("%s is %s (%d bytes); arguments and environment total %d bytes", what, limit, size, total)
}
