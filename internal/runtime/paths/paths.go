// Package paths turns the process environment into agent-box's paths: the
// user's home, configuration, state and runtime directories and every file
// in them. docs/runtime-contract.md is the reference for every variable and
// file named here.
package paths

import (
	"errors"
	"fmt"
	"os/user"
	"path/filepath"
)

// Environment variables read by agent-box (see docs/runtime-contract.md).
// The exported ones are named in other packages' messages.
const (
	envRuntimeDir   = "AGENT_BOX_RUNTIME_DIR"
	envSeed         = "AGENT_BOX_SEED"
	EnvTmux         = "AGENT_BOX_TMUX"
	EnvAgents       = "AGENT_BOX_AGENTS"
	EnvDefaultAgent = "AGENT_BOX_DEFAULT_AGENT"
)

// Env is everything agent-box derives from its environment.
type Env struct {
	Home         string // $HOME
	ConfigDir    string // $HOME/.config/agent-box
	RuntimeDir   string // $AGENT_BOX_RUNTIME_DIR, default /run/agent-box/$USER
	Seed         string // $AGENT_BOX_SEED, may be empty
	Tmux         string // $AGENT_BOX_TMUX, may be empty (then PATH lookup)
	AgentsFile   string // $AGENT_BOX_AGENTS, may be empty
	DefaultAgent string // $AGENT_BOX_DEFAULT_AGENT, may be empty
}

// FromEnv reads the environment through getenv (os.Getenv in production).
func FromEnv(getenv func(string) string) (Env, error) {
	var e Env
	e.Home = getenv("HOME")
	if e.Home == "" || !filepath.IsAbs(e.Home) {
		return e, errors.New("HOME must be set to an absolute path")
	}
	e.Home = filepath.Clean(e.Home)
	e.ConfigDir = filepath.Join(e.Home, ".config", "agent-box")
	e.RuntimeDir = getenv(envRuntimeDir)
	if e.RuntimeDir == "" {
		name := getenv("USER")
		if name == "" {
			u, err := user.Current()
			if err != nil {
				return e, fmt.Errorf("%s unset and user unknown: %w", envRuntimeDir, err)
			}
			name = u.Username
		}
		e.RuntimeDir = filepath.Join("/run/agent-box", name)
	}
	if !filepath.IsAbs(e.RuntimeDir) {
		return e, fmt.Errorf("%s must be absolute: %q", envRuntimeDir, e.RuntimeDir)
	}
	e.RuntimeDir = filepath.Clean(e.RuntimeDir)
	e.Seed = getenv(envSeed)
	e.Tmux = getenv(EnvTmux)
	e.AgentsFile = getenv(EnvAgents)
	e.DefaultAgent = getenv(EnvDefaultAgent)
	return e, nil
}

// Registry is the session registry ~/.config/agent-box/sessions.json.
func (e Env) Registry() string { return filepath.Join(e.ConfigDir, "sessions.json") }

// EnvFile is the per-user secrets file ~/.config/agent-box/env.
func (e Env) EnvFile() string { return filepath.Join(e.ConfigDir, "env") }

// ObservationsDir holds one JSON file per session with what the supervisor saw.
func (e Env) ObservationsDir() string {
	return filepath.Join(e.Home, ".local", "state", "agent-box", "sessions")
}

// StateFile is the supervisor's state.json in the runtime dir.
func (e Env) StateFile() string { return filepath.Join(e.RuntimeDir, "state.json") }

// TmuxSocket is the explicit tmux socket (-S).
func (e Env) TmuxSocket() string { return filepath.Join(e.RuntimeDir, "tmux.sock") }

// TmuxConf is the tmux configuration the supervisor generates.
func (e Env) TmuxConf() string { return filepath.Join(e.RuntimeDir, "tmux.conf") }

// TokenFile holds the token that marks the tmux server as the supervisor's.
func (e Env) TokenFile() string { return filepath.Join(e.RuntimeDir, "tmux.token") }

// SupervisorSocket is the datagram socket the supervisor reads.
func (e Env) SupervisorSocket() string { return filepath.Join(e.RuntimeDir, "supervisor.sock") }

// SupervisorLock is held (flock) by the running supervisor.
func (e Env) SupervisorLock() string { return filepath.Join(e.RuntimeDir, "supervisor.lock") }
