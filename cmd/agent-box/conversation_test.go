package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/runtime/contract"
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

// TestAddOfSeveralSessionsIsOneWriteAllOrNothing: `session add a b c` and
// `session add --file` add every session in one registry write, or none:
// a duplicate (of the registry's or within the call), an invalid name, an
// unknown agent or a bad file refuses them all, with the exit code of
// that error.
func TestAddOfSeveralSessionsIsOneWriteAllOrNothing(t *testing.T) {
	bx := newBox(t, "")
	bx.ok("session", "add", "old")
	names := func() []string {
		var n []string
		for _, s := range bx.registry().Sessions {
			n = append(n, s.Name+":"+s.Agent)
		}
		return n
	}
	before := names()
	for _, c := range []struct {
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"", []string{"session", "add", "a", "b", "old"}, contract.ExitCodes.Duplicate.Code, `"old"`},
		{"", []string{"session", "add", "a", "b", "a"}, contract.ExitCodes.Duplicate.Code, `"a" is named twice`},
		{"", []string{"session", "add", "a", "b/c"}, contract.ExitCodes.InvalidName.Code, `"b/c"`},
		{"", []string{"session", "add", "a", "b", "--agent", "nope"}, contract.ExitCodes.UnknownAgent.Code, `"nope"`},
		{"", []string{"session", "add", "--file", "-", "x"}, 2, "--file takes the sessions"},
		{`{"sessions": [{"name": "a", "agent": "sleep"}, {"name": "old", "agent": "sh"}]}`, []string{"session", "add", "--file", "-"}, contract.ExitCodes.Duplicate.Code, `"old"`},
		{`{"sessions": [{"name": "a", "agent": "sleep", "colour": "red"}]}`, []string{"session", "add", "--file", "-"}, 2, `unknown field "colour"`},
		{`{"sessions": [{"name": "a"}]}`, []string{"session", "add", "--file", "-"}, 2, "empty agent"},
		{`{"sessions": []}`, []string{"session", "add", "--file", "-"}, 2, "no session to add"},
		{"", []string{"session", "add", "--file", filepath.Join(bx.dir, "missing.json")}, 2, "--file"},
	} {
		r := bx.run(c.stdin, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q with %q: exit %d, stderr %q; want exit %d and %q", c.args, c.stdin, r.code, r.stderr, c.code, c.want)
		}
		if got := names(); !slices.Equal(got, before) {
			t.Errorf("%q: the registry changed to %v", c.args, got)
		}
	}
	for _, n := range []string{"a", "b"} {
		if _, err := os.Stat(bx.conversationFile(n)); !os.IsNotExist(err) {
			t.Errorf("a refused add wrote the conversation file of %s", n)
		}
	}

	bx.ok("session", "add", "a", "b", "c", "--agent", "sh", "--prompt", "go", "--", "exec sleep 1000")
	file := `{"sessions": [{"name": "d", "agent": "sleep"}, {"name": "e", "agent": "sh", "args": ["-c", "x"], "cwd": "` + bx.dir + `", "prompt": "kick"}]}`
	if r := bx.run(file, "session", "add", "--file", "-"); r.code != 0 {
		t.Fatalf("session add --file -: exit %d: %s", r.code, r.stderr)
	}
	want := []string{"a:sh", "b:sh", "c:sh", "d:sleep", "e:sh", "old:sleep"} // the registry keeps them sorted
	if got := names(); !slices.Equal(got, want) {
		t.Fatalf("registry: %v, want %v", got, want)
	}
	reg := bx.registry()
	for _, n := range []string{"a", "b", "c"} {
		if s, _ := reg.Find(n); !slices.Equal(s.Args, []string{"exec sleep 1000"}) || s.Cwd != bx.home {
			t.Errorf("%s: args %q, cwd %q", s.Name, s.Args, s.Cwd)
		}
	}
	if e, _ := reg.Find("e"); !slices.Equal(e.Args, []string{"-c", "x"}) || e.Cwd != bx.dir {
		t.Errorf("e: args %q, cwd %q", e.Args, e.Cwd)
	}
	for n, p := range map[string]string{"a": `"prompt": "go"`, "c": `"prompt": "go"`, "e": `"prompt": "kick"`} {
		if data, err := os.ReadFile(bx.conversationFile(n)); err != nil || !strings.Contains(string(data), p) {
			t.Errorf("%s's conversation: %v %s", n, err, data)
		}
	}
}
