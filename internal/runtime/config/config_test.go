package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFromEnvDefaultsAndOverrides(t *testing.T) {
	env := map[string]string{"HOME": "/home/alice/", "USER": "alice"}
	e, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if e.RuntimeDir != "/run/agent-box/alice" || e.Registry() != "/home/alice/.config/agent-box/sessions.json" ||
		e.EnvFile() != "/home/alice/.config/agent-box/env" || e.ObservationsDir() != "/home/alice/.local/state/agent-box/sessions" ||
		e.TmuxSocket() != "/run/agent-box/alice/tmux.sock" {
		t.Errorf("defaults: %+v", e)
	}
	env[EnvRuntimeDir] = "relative"
	if _, err := FromEnv(func(k string) string { return env[k] }); err == nil {
		t.Errorf("relative %s accepted", EnvRuntimeDir)
	}
	if _, err := FromEnv(func(string) string { return "" }); err == nil {
		t.Errorf("missing HOME accepted")
	}
}

func TestReadStateReportsNotRunningForMissingFileAndDeadPID(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	if _, err := ReadState(p); !errors.Is(err, ErrNotRunning) {
		t.Errorf("missing state.json: %v", err)
	}
	if err := WriteState(p, State{Format: StateFormat, PID: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadState(p); !errors.Is(err, ErrNotRunning) {
		t.Errorf("dead pid: %v", err)
	}
	if err := WriteState(p, State{Format: StateFormat, PID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadState(p); err != nil {
		t.Errorf("live pid: %v", err)
	}
}

func TestParseAgentsRequiresAbsoluteCommands(t *testing.T) {
	if _, err := ParseAgents([]byte(`{"a": {"command": "claude"}}`)); err == nil {
		t.Errorf("relative command accepted")
	}
	if _, err := ParseAgents([]byte(`{"a": {"command": "/bin/a", "extra": 1}}`)); err == nil {
		t.Errorf("unknown field accepted")
	}
	a, err := ParseAgents([]byte(`{"b": {"command": "/bin/b"}, "a": {"command": "/bin/a", "args": ["-x"]}}`))
	if err != nil || len(a) != 2 || a.Names()[0] != "a" {
		t.Errorf("ParseAgents = %v, %v", a, err)
	}
}
