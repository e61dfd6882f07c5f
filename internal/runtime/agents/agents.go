// Package agents reads the agents table (AGENT_BOX_AGENTS): which command,
// with which leading arguments, each agent name runs. See
// docs/runtime-contract.md, "Agents table". The file is read without
// blocking, a regular file of at most MaxFileSize; an agent's command and
// arguments reach every execve of its sessions, so they take at most
// MaxAgentSize.
package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

const (
	// MaxFileSize is the largest agents table agent-box reads.
	MaxFileSize = 1 << 20
	// MaxAgentSize bounds an agent's command and arguments together, each
	// counted as execve counts it: its bytes, its NUL and an 8-byte pointer.
	MaxAgentSize = 64 << 10
)

// Agent is one entry of the agents table: an absolute command and the
// arguments that precede a session's own arguments.
type Agent struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	// How the agent keeps its conversation (package conversation), each
	// a list of arguments after the session's own: ResumeArgs continue
	// conversation {id}; NewArgs start a new one with the id {id} chosen
	// up front (empty: the agent chooses); PromptArgs carry the kickoff
	// prompt {prompt}. An agent without ResumeArgs starts afresh at every
	// spawn and gets its prompt at the first.
	ResumeArgs []string `json:"resumeArgs,omitempty"`
	NewArgs    []string `json:"newArgs,omitempty"`
	PromptArgs []string `json:"promptArgs,omitempty"`
	// Setup names what exec-session prepares before each spawn (package
	// agentsetup, one file per agent): "claude" merges ~/.claude.json;
	// "codex" trusts the session's folder for that spawn; "opencode"
	// turns off its network fetches; "" nothing.
	Setup string `json:"setup,omitempty"`
}

// Placeholders in an agent's conversation arguments (the contract's).
var (
	IDPlaceholder     = contract.Conversations.IDPlaceholder
	PromptPlaceholder = contract.Conversations.PromptPlaceholder
)

// Setups are the values Agent.Setup may take: nothing, or one of the
// contract's.
var Setups = append([]string{""}, contract.Conversations.Setups...)

// ErrUnknownAgent is returned for an agent missing from the agents table.
var ErrUnknownAgent = errors.New("unknown agent")

// Table maps agent names to commands.
type Table map[string]Agent

// Names returns the agent names, sorted.
func (a Table) Names() []string {
	var n []string
	for k := range a {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// parse decodes and validates an agents table.
func parse(data []byte) (Table, error) {
	var a Table
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON document")
	}
	for _, name := range a.Names() {
		ag := a[name]
		if name == "" {
			return nil, errors.New("empty agent name")
		}
		if !filepath.IsAbs(ag.Command) {
			return nil, fmt.Errorf("agent %s: command must be an absolute path, got %s", escape.Quote(name, 64), escape.Quote(ag.Command, 64))
		}
		n := len(ag.Command) + 1 + 8
		for _, list := range [][]string{ag.Args, ag.ResumeArgs, ag.NewArgs, ag.PromptArgs} {
			for _, arg := range list {
				n += len(arg) + 1 + 8
			}
		}
		for _, c := range []struct {
			field, placeholder string
			list               []string
		}{{"resumeArgs", IDPlaceholder, ag.ResumeArgs}, {"newArgs", IDPlaceholder, ag.NewArgs}, {"promptArgs", PromptPlaceholder, ag.PromptArgs}} {
			if len(c.list) > 0 && !strings.Contains(strings.Join(c.list, "\x00"), c.placeholder) {
				return nil, fmt.Errorf("agent %s: %s has no %s", escape.Quote(name, 64), c.field, c.placeholder)
			}
		}
		if !slices.Contains(Setups, ag.Setup) {
			return nil, fmt.Errorf("agent %s: unknown setup %s (known: %s)", escape.Quote(name, 64), escape.Quote(ag.Setup, 64), strings.Join(contract.Conversations.Setups, ", "))
		}
		if n > MaxAgentSize {
			return nil, fmt.Errorf("agent %s: command and arguments take %d bytes, more than %d (64 KiB, each counted with its NUL and an 8-byte pointer, as execve counts it)", escape.Quote(name, 64), n, MaxAgentSize)
		}
	}
	return a, nil
}

// Fill returns list with {id} and {prompt} replaced, in one pass (a
// prompt holding "{id}" stays as it is).
func Fill(list []string, id, prompt string) []string {
	r := strings.NewReplacer(IDPlaceholder, id, PromptPlaceholder, prompt)
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = r.Replace(a)
	}
	return out
}

// Load reads an agents table file.
func Load(path string) (Table, error) {
	data, err := userfile.Read(path, MaxFileSize)
	if userfile.Bad(err) {
		return nil, fmt.Errorf("agents table: %w", err)
	}
	if err != nil {
		return nil, err
	}
	a, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("agents table %q: %w", path, err)
	}
	return a, nil
}
