// Package agents reads the agents table (AGENT_BOX_AGENTS): which command,
// with which leading arguments, each agent name runs. See
// docs/runtime-contract.md, "Agents table".
package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Agent is one entry of the agents table: an absolute command and the
// arguments that precede a session's own arguments.
type Agent struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
}

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

// Load reads an agents table file.
func Load(path string) (Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	a, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("agents table %q: %w", path, err)
	}
	return a, nil
}
