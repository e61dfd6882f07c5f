package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func (b *box) conversationFile(name string) string {
	return filepath.Join(b.home, ".local/state/agent-box/conversations", name+".json")
}

func TestAddWithAPromptRecordsItAndRmForgetsTheConversation(t *testing.T) {
	bx := newBox(t, "")
	bx.ok("session", "add", "a", "--prompt", "-starts with a dash")
	data, err := os.ReadFile(bx.conversationFile("a"))
	if err != nil || !strings.Contains(string(data), `"prompt": "-starts with a dash"`) {
		t.Fatalf("conversation file: %v\n%s", err, data)
	}
	// from stdin, for long text
	r := bx.run("line one\nline two\n", "session", "add", "b", "--prompt-file", "-")
	if r.code != 0 {
		t.Fatalf("--prompt-file -: exit %d: %s", r.code, r.stderr)
	}
	data, _ = os.ReadFile(bx.conversationFile("b"))
	if !strings.Contains(string(data), `"prompt": "line one\nline two\n"`) {
		t.Errorf("prompt from stdin: %s", data)
	}
	bx.ok("session", "rm", "a")
	if _, err := os.Stat(bx.conversationFile("a")); !os.IsNotExist(err) {
		t.Errorf("session rm left the conversation file: %v", err)
	}
	// the registry itself carries no prompt: an older agent-box reads it
	reg, _ := os.ReadFile(bx.registryPath())
	if strings.Contains(string(reg), "prompt") {
		t.Errorf("the registry carries the prompt:\n%s", reg)
	}
}

func TestPromptInputErrors(t *testing.T) {
	bx := newBox(t, "")
	for _, c := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"session", "add", "x", "--prompt", "p", "--prompt-file", "-"}, "exclude each other"},
		{strings.Repeat("x", 65537), []string{"session", "add", "x", "--prompt-file", "-"}, "over 65536 bytes"},
		{"", []string{"session", "add", "x", "--prompt=" + strings.Repeat("y", 65537)}, "more than 65536"},
		{"", []string{"session", "restart", "--fresh"}, "usage: session restart"},
	} {
		r := bx.run(c.stdin, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", c.args[:3], r.code, r.stderr, c.want)
		}
	}
	if _, err := os.Stat(bx.conversationFile("x")); !os.IsNotExist(err) {
		t.Error("a refused add wrote a conversation file")
	}
}

func TestAgentHookOutsideASessionDoesNothingAndSaysNothing(t *testing.T) {
	bx := newBox(t, "")
	r := bx.run(`{"session_id":"c1","transcript_path":"/t/c1.jsonl","source":"startup"}`, "agent-hook", "claude", "session-start")
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and nothing", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Dir(bx.conversationFile("x"))); !os.IsNotExist(err) {
		t.Errorf("the hook wrote under the home: %v", err)
	}
}

func TestAgentHookNamesAnAgentThatReportsConversations(t *testing.T) {
	bx := newBox(t, "")
	for _, agent := range []string{"claude", "codex", "opencode"} {
		if r := bx.run("{}", "agent-hook", agent, "session-start"); r.code != 0 {
			t.Errorf("agent-hook %s: exit %d, stderr %q", agent, r.code, r.stderr)
		}
	}
	for _, args := range [][]string{{"gemini", "session-start"}, {"codex", "stop"}, {"codex"}} {
		r := bx.run("{}", append([]string{"agent-hook"}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "usage: agent-hook claude|codex|opencode session-start") {
			t.Errorf("agent-hook %q: exit %d, stderr %q; want a usage error", args, r.code, r.stderr)
		}
	}
}
