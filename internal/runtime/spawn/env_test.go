package spawn

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/google/go-cmp/cmp"
)

func TestForSessionsDropsSystemdsPerInvocationVariablesAndTheSupervisorsOwn(t *testing.T) {
	got := ForSessions([]string{"PATH=/p", "INVOCATION_ID=abc", "JOURNAL_STREAM=1:2", "A=1", "noequals", "=x", "MAINPID=3", "AGENT_BOX_SILENCE_AFTER=30s"})
	if diff := cmp.Diff([]string{"A=1", "PATH=/p"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestOverlayReplacesInheritedVariablesAndKeepsTheRest(t *testing.T) {
	p := filepath.Join(t.TempDir(), "spawn-env.json")
	if err := WriteEnv(p, []string{"A=new", "C=3", "EQ=a=b"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v (%v), want 0600", fi.Mode(), err)
	}
	got, err := Overlay([]string{"A=old", "B=2", "TMUX_PANE=%1"}, p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"B=2", "TMUX_PANE=%1", "A=new", "C=3", "EQ=a=b"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestOverlayWithoutAFileChangesNothingAndABadFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	in := []string{"A=1"}
	if got, err := Overlay(in, filepath.Join(dir, "missing")); err != nil || !cmp.Equal(got, in) {
		t.Errorf("missing file: %q, %v; want the inherited environment", got, err)
	}
	for name, content := range map[string]string{"garbage": "{not json", "entry": `{"env":["NOEQUALS"]}`} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		if _, err := Overlay(in, p); err == nil || !strings.Contains(err.Error(), "spawn environment") {
			t.Errorf("%s: err %v, want a spawn environment error", name, err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err == nil {
		if _, err := Overlay(in, filepath.Join(dir, "fifo")); err == nil {
			t.Error("a FIFO was read as the spawn environment")
		}
	}
}

func TestFingerprintChangesWithWhatASessionOfThatAgentStartsWith(t *testing.T) {
	env := []string{"A=1"}
	a := agents.Agent{Command: "/bin/claude", Args: []string{"--x"}}
	base := Fingerprint(env, "/bin/agent-box", a)
	for what, got := range map[string]string{
		"environment": Fingerprint([]string{"A=2"}, "/bin/agent-box", a),
		"agent-box":   Fingerprint(env, "/new/agent-box", a),
		"command":     Fingerprint(env, "/bin/agent-box", agents.Agent{Command: "/new/claude", Args: []string{"--x"}}),
		"arguments":   Fingerprint(env, "/bin/agent-box", agents.Agent{Command: "/bin/claude", Args: []string{"--y"}}),
		"split":       Fingerprint([]string{"A=1", ""}, "/bin/agent-box", a),
	} {
		if got == base {
			t.Errorf("a changed %s keeps the fingerprint %s", what, base)
		}
	}
	if Fingerprint(env, "/bin/agent-box", a) != base {
		t.Error("the same inputs gave another fingerprint")
	}
	table := agents.Table{"claude": a, "shell": {Command: "/bin/sh"}}
	before := Fingerprints(env, "/bin/agent-box", table)
	table["shell"] = agents.Agent{Command: "/bin/bash"}
	after := Fingerprints(env, "/bin/agent-box", table)
	if before["claude"] != after["claude"] || before["shell"] == after["shell"] {
		t.Errorf("changing the shell agent: claude %s -> %s (want same), shell %s -> %s (want new)", before["claude"], after["claude"], before["shell"], after["shell"])
	}
}
