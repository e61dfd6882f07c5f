package actions

import (
	"errors"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/envfile"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/state"
)

// Kind is what went wrong with a change to a user's sessions or secrets,
// as both front ends answer it: the CLI maps a kind to its exit code, the
// settings page to an HTTP status (the one classifier of both).
type Kind int

const (
	// Unavailable: anything else (I/O, a lock that timed out, tmux): the
	// CLI's 1, the page's 503.
	Unavailable Kind = iota
	// Input: an InputError (2 / 400).
	Input
	// InvalidName: a session name, env key or env value that is not one,
	// or a registry change over its limits (5 / 400).
	InvalidName
	// UnknownAgent: an agent the agents table lacks (6 / 400).
	UnknownAgent
	// Unknown: no such session or env key (3 / 404).
	Unknown
	// Duplicate: the session exists (4 / 409).
	Duplicate
	// Corrupt: the registry, env file or state.json cannot be used; left
	// as it is (7 / 500).
	Corrupt
	// NotRunning: no supervisor runs (8 / 503).
	NotRunning
)

// KindOf classifies err (nil is Unavailable: ask only about an error).
func KindOf(err error) Kind {
	var ie *InputError
	var rc *registry.CorruptError
	var ec *envfile.CorruptError
	var sc *state.CorruptError
	switch {
	case errors.As(err, &ie):
		return Input
	case errors.Is(err, registry.ErrUnknown), errors.Is(err, envfile.ErrUnknownKey):
		return Unknown
	case errors.Is(err, registry.ErrDuplicate):
		return Duplicate
	case errors.Is(err, registry.ErrInvalidName), errors.Is(err, registry.ErrTooLarge),
		errors.Is(err, envfile.ErrInvalidKey), errors.Is(err, envfile.ErrInvalidValue):
		return InvalidName
	case errors.Is(err, agents.ErrUnknownAgent):
		return UnknownAgent
	case errors.As(err, &rc), errors.As(err, &ec), errors.As(err, &sc):
		return Corrupt
	case errors.Is(err, state.ErrNotRunning):
		return NotRunning
	}
	return Unavailable
}
