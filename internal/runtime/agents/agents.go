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
	"sort"

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
}

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
		for _, arg := range ag.Args {
			n += len(arg) + 1 + 8
		}
		if n > MaxAgentSize {
			return nil, fmt.Errorf("agent %s: command and arguments take %d bytes, more than %d (64 KiB, each counted with its NUL and an 8-byte pointer, as execve counts it)", escape.Quote(name, 64), n, MaxAgentSize)
		}
	}
	return a, nil
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
