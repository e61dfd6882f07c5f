// Package config turns the process environment into agent-box's paths and
// reads the small JSON documents the units hand to the program: the agents
// table and the supervisor's state.json. docs/runtime-contract.md is the
// reference for every variable and file named here.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/atomicfile"
)

// Environment variables read by agent-box (see docs/runtime-contract.md).
const (
	EnvRuntimeDir   = "AGENT_BOX_RUNTIME_DIR"
	EnvSeed         = "AGENT_BOX_SEED"
	EnvTmux         = "AGENT_BOX_TMUX"
	EnvAgents       = "AGENT_BOX_AGENTS"
	EnvDefaultAgent = "AGENT_BOX_DEFAULT_AGENT"
)

// Env is everything agent-box derives from its environment.
type Env struct {
	Home         string // $HOME
	ConfigDir    string // $HOME/.config/agent-box
	StateDir     string // $HOME/.local/state/agent-box
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
	e.StateDir = filepath.Join(e.Home, ".local", "state", "agent-box")
	e.RuntimeDir = getenv(EnvRuntimeDir)
	if e.RuntimeDir == "" {
		name := getenv("USER")
		if name == "" {
			u, err := user.Current()
			if err != nil {
				return e, fmt.Errorf("%s unset and user unknown: %w", EnvRuntimeDir, err)
			}
			name = u.Username
		}
		e.RuntimeDir = filepath.Join("/run/agent-box", name)
	}
	if !filepath.IsAbs(e.RuntimeDir) {
		return e, fmt.Errorf("%s must be absolute: %q", EnvRuntimeDir, e.RuntimeDir)
	}
	e.RuntimeDir = filepath.Clean(e.RuntimeDir)
	e.Seed = getenv(EnvSeed)
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
func (e Env) ObservationsDir() string { return filepath.Join(e.StateDir, "sessions") }

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

// Agent is one entry of the agents table: an absolute command and the
// arguments that precede a session's own arguments.
type Agent struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
}

// Agents maps agent names to commands.
type Agents map[string]Agent

// Names returns the agent names, sorted.
func (a Agents) Names() []string {
	var n []string
	for k := range a {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// ParseAgents decodes and validates an agents table.
func ParseAgents(data []byte) (Agents, error) {
	var a Agents
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, err
	}
	for name, ag := range a {
		if name == "" {
			return nil, errors.New("empty agent name")
		}
		if !filepath.IsAbs(ag.Command) {
			return nil, fmt.Errorf("agent %q: command must be an absolute path, got %q", name, ag.Command)
		}
	}
	return a, nil
}

// LoadAgents reads an agents table file.
func LoadAgents(path string) (Agents, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	a, err := ParseAgents(data)
	if err != nil {
		return nil, fmt.Errorf("agents table %q: %w", path, err)
	}
	return a, nil
}

// StateFormat is the version of state.json.
const StateFormat = 1

// State is the supervisor's state.json.
type State struct {
	Format       int       `json:"format"`
	PID          int       `json:"pid"`
	Version      string    `json:"version"`
	Socket       string    `json:"socket"`
	Tmux         string    `json:"tmux"`
	Control      string    `json:"control"`
	Agents       Agents    `json:"agents"`
	DefaultAgent string    `json:"defaultAgent,omitempty"`
	StartedAt    time.Time `json:"startedAt"`
}

// WriteState writes state.json atomically with mode 0600.
func WriteState(path string, s State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o600)
}

// ErrNotRunning means state.json is absent or names a dead process.
var ErrNotRunning = errors.New("supervisor not running")

// ReadState reads state.json and checks that its pid is alive. It returns an
// error wrapping ErrNotRunning when the file is absent or the pid is dead.
func ReadState(path string) (State, error) {
	var s State
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, fmt.Errorf("%w (no %s)", ErrNotRunning, path)
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("state %q: %w", path, err)
	}
	if s.PID <= 0 || !alive(s.PID) {
		return s, fmt.Errorf("%w (pid %d in %s is gone)", ErrNotRunning, s.PID, path)
	}
	return s, nil
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
