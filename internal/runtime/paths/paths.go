// Package paths turns the process environment into agent-box's paths: the
// user's home, configuration, state and runtime directories and every file
// in them. docs/runtime-contract.md is the reference for every variable and
// file named here.
package paths

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/envfile"
	"github.com/agent-box/agent-box/internal/runtime/escape"
)

// Environment variables read by agent-box (see docs/runtime-contract.md).
// The exported ones are named in other packages' messages.
var (
	envRuntimeDir   = contract.Env.RuntimeDir.Name
	envSeed         = contract.Env.Seed.Name
	EnvTmux         = contract.Env.Tmux.Name
	EnvAgents       = contract.Env.Agents.Name
	EnvDefaultAgent = contract.Env.DefaultAgent.Name
)

// LoginDir holds one file per agent user, <user>.env, that the NixOS module
// installs (root-owned, in the Nix store): the AGENT_BOX_* values of the
// user's unit, for a CLI run from a plain login. A variable for tests only.
var LoginDir = "/etc/agent-box/users"

// ErrForeignHome: HOME belongs to another user than the one running.
var ErrForeignHome = errors.New("not your home")

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
		e.RuntimeDir = contract.For(contract.Dirs.Runtime, name)
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

// LoginFile is the module's login file for user.
func LoginFile(user string) string { return filepath.Join(LoginDir, user+".env") }

// WithLogin fills the AGENT_BOX_* values the environment leaves unset (a
// plain SSH or console login has none) from the login file of the user
// running this process (by uid, never $USER). The file must be a regular
// file owned by root and writable by nobody else; a missing one changes
// nothing. Values already set win: they come from the unit, or from the
// user's own environment, which is theirs to set.
func (e Env) WithLogin() (Env, error) {
	if e.AgentsFile != "" && e.Tmux != "" && e.DefaultAgent != "" {
		return e, nil
	}
	u, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil {
		return e, nil // no name, no login file
	}
	file := LoginFile(u.Username)
	fi, err := os.Stat(file)
	if errors.Is(err, os.ErrNotExist) {
		return e, nil
	}
	if err != nil {
		return e, fmt.Errorf("login file: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 || !fi.Mode().IsRegular() {
		return e, fmt.Errorf("login file %q must be a regular file owned by root and writable only by root; ignoring it is not safe", file)
	}
	vars, err := envfile.Load(file)
	if err != nil {
		return e, fmt.Errorf("login file: %w", err)
	}
	unset := map[string]*string{EnvAgents: &e.AgentsFile, EnvTmux: &e.Tmux, EnvDefaultAgent: &e.DefaultAgent, envSeed: &e.Seed}
	for _, v := range vars {
		if p, ok := unset[v.Key]; ok && *p == "" {
			*p = v.Value
		}
	}
	return e, nil
}

// CheckOwnHome refuses a HOME that another user owns: the files under it
// (registry, env file, state.json, sockets) are that user's to write, so
// acting on them as anyone else (root included) would trust their content.
func (e Env) CheckOwnHome() error {
	fi, err := os.Stat(e.Home)
	if err != nil {
		return fmt.Errorf("home %s: %w", escape.String(e.Home), err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("home %s: no owner", escape.String(e.Home))
	}
	if int(st.Uid) == os.Getuid() {
		return nil
	}
	owner := strconv.Itoa(int(st.Uid))
	if u, err := user.LookupId(owner); err == nil {
		owner = u.Username
	}
	return &ForeignHomeError{Home: e.Home, Owner: owner}
}

// ForeignHomeError is CheckOwnHome's refusal.
type ForeignHomeError struct {
	Home, Owner string
}

func (e *ForeignHomeError) Error() string {
	return fmt.Sprintf("%s belongs to %s, not to the user running agent-box", escape.String(e.Home), escape.String(e.Owner))
}

func (e *ForeignHomeError) Unwrap() error { return ErrForeignHome }

// Hint says how to act as the home's owner instead.
func (e *ForeignHomeError) Hint() string {
	if strings.ContainsAny(e.Owner, " \t\n'\"") {
		return "run agent-box as the home's owner"
	}
	return fmt.Sprintf("run it as that user: runuser -u %s -- agent-box ...", e.Owner)
}

// Registry is the session registry ~/.config/agent-box/sessions.json.
func (e Env) Registry() string { return filepath.Join(e.ConfigDir, "sessions.json") }

// EnvFile is the per-user secrets file ~/.config/agent-box/env.
func (e Env) EnvFile() string { return filepath.Join(e.ConfigDir, "env") }

// ObservationsDir holds one JSON file per session with what the supervisor saw.
func (e Env) ObservationsDir() string {
	return filepath.Join(e.Home, ".local", "state", "agent-box", "sessions")
}

// ConversationsDir holds one file per session: the agent's conversation
// (package conversation).
func (e Env) ConversationsDir() string {
	return filepath.Join(e.Home, ".local", "state", "agent-box", "conversations")
}

// HooksDir holds one folder of webhook deliveries per hook (the web
// daemon writes them; every session finds it in AGENT_BOX_HOOKS_DIR).
func (e Env) HooksDir() string {
	return filepath.Join(e.Home, ".local", "state", "agent-box", "hooks")
}

// StateFile is the supervisor's state.json in the runtime dir.
func (e Env) StateFile() string { return filepath.Join(e.RuntimeDir, "state.json") }

// SpawnEnvFile is the environment the supervisor passes to new sessions
// (package spawn).
func (e Env) SpawnEnvFile() string { return filepath.Join(e.RuntimeDir, "spawn-env.json") }

// TmuxSocket is the explicit tmux socket (-S).
func (e Env) TmuxSocket() string { return filepath.Join(e.RuntimeDir, "tmux.sock") }

// TmuxConf is the tmux configuration `agent-box tmux-server` generates.
func (e Env) TmuxConf() string { return filepath.Join(e.RuntimeDir, "tmux.conf") }

// TokenFile holds the token that marks the tmux server as the supervisor's.
func (e Env) TokenFile() string { return filepath.Join(e.RuntimeDir, "tmux.token") }

// SupervisorSocket is the datagram socket the supervisor reads.
func (e Env) SupervisorSocket() string { return filepath.Join(e.RuntimeDir, "supervisor.sock") }

// ApprovalSocket is the stream socket where the supervisor takes its
// sessions' permission requests (package supervisor, approvals.go).
func (e Env) ApprovalSocket() string { return filepath.Join(e.RuntimeDir, "approval.sock") }

// SupervisorLock is held (flock) by the running supervisor.
func (e Env) SupervisorLock() string { return filepath.Join(e.RuntimeDir, "supervisor.lock") }
