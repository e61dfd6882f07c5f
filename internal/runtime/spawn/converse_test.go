package spawn

import (
	"context"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/google/go-cmp/cmp"
)

var claudeLike = agents.Agent{
	Command:    "/bin/claude",
	ResumeArgs: []string{"--resume", "{id}"},
	NewArgs:    []string{"--session-id", "{id}"},
	PromptArgs: []string{"--", "{prompt}"},
	Setup:      "claude",
}

func TestConverseGivesThePromptToTheFirstConversationAndResumesTheNext(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	if err := conversation.Reset(ctx, e.ConversationsDir(), "s", "-do {id} it"); err != nil {
		t.Fatal(err)
	}
	plan := Plan{Argv: []string{"/bin/claude"}, Dir: "/tmp"}
	logs := Converse(ctx, e, claudeLike, "s", &plan, time.Now())
	if len(plan.Argv) != 5 || plan.Argv[1] != "--session-id" || plan.Argv[3] != "--" || plan.Argv[4] != "-do {id} it" {
		t.Fatalf("first spawn argv %q", plan.Argv)
	}
	id := plan.Argv[2]
	if !strings.Contains(strings.Join(logs, "\n"), "gave the kickoff prompt (11 bytes)") {
		t.Errorf("logs %q", logs)
	}
	// The agent reports the conversation it started, and writes its transcript.
	tr := filepath.Join(e.Home, "t.jsonl")
	os.WriteFile(tr, []byte("{}\n"), 0o600)
	conversation.Update(ctx, e.ConversationsDir(), "s", func(r *conversation.Record) error { r.ID, r.Transcript = id, tr; return nil })
	plan = Plan{Argv: []string{"/bin/claude"}, Dir: "/tmp"}
	Converse(ctx, e, claudeLike, "s", &plan, time.Now())
	if d := cmp.Diff([]string{"/bin/claude", "--resume", id}, plan.Argv); d != "" {
		t.Errorf("second spawn (-want +got):\n%s", d)
	}
	// A third spawn after the transcript is gone: new, no prompt.
	os.Remove(tr)
	plan = Plan{Argv: []string{"/bin/claude"}, Dir: "/tmp"}
	logs = Converse(ctx, e, claudeLike, "s", &plan, time.Now())
	if len(plan.Argv) != 3 || plan.Argv[1] != "--session-id" || plan.Argv[2] == id {
		t.Errorf("third spawn argv %q, want a new --session-id and no prompt", plan.Argv)
	}
	if !strings.Contains(strings.Join(logs, "\n"), "is missing") {
		t.Errorf("logs %q do not say why", logs)
	}
}

func TestConverseMergesClaudeStateAndReportsARejectedKey(t *testing.T) {
	e := setup(t)
	key := "sk-ant-0123456789abcdefghijklmnopqrstuvwxyz"
	os.WriteFile(filepath.Join(e.Home, ".claude.json"), []byte(`{"customApiKeyResponses":{"approved":[],"rejected":["`+key[len(key)-20:]+`"]}}`), 0o600)
	plan := Plan{Argv: []string{"/bin/claude"}, Dir: "/work", Env: []string{"ANTHROPIC_API_KEY=" + key}}
	logs := Converse(context.Background(), e, claudeLike, "s", &plan, time.Now())
	if !strings.Contains(strings.Join(logs, "\n"), "ending wxyz") {
		t.Errorf("logs %q do not report the rejected key", logs)
	}
	rec, _ := conversation.Load(e.ConversationsDir(), "s")
	if !strings.Contains(rec.Notice, "reject") {
		t.Errorf("notice %q", rec.Notice)
	}
	data, _ := os.ReadFile(filepath.Join(e.Home, ".claude.json"))
	if !strings.Contains(string(data), `"/work"`) {
		t.Errorf("the session's folder is not trusted: %s", data)
	}
}

func TestAnAgentWithoutConversationArgumentsIsLeftAsItIs(t *testing.T) {
	e := setup(t)
	plan := Plan{Argv: []string{"/bin/tool", "x"}}
	if logs := Converse(context.Background(), e, agents.Agent{Command: "/bin/tool"}, "s", &plan, time.Now()); len(logs) != 0 || len(plan.Argv) != 2 {
		t.Errorf("argv %q logs %q", plan.Argv, logs)
	}
	if _, err := os.Stat(conversation.Path(e.ConversationsDir(), "s")); !os.IsNotExist(err) {
		t.Error("a conversation file was written")
	}
}

var codexLike = agents.Agent{
	Command:    "/bin/codex",
	ResumeArgs: []string{"resume", "{id}"},
	PromptArgs: []string{"--", "{prompt}"},
	Setup:      "codex",
}

func TestConverseTrustsTheSessionFolderOnCodexsCommandLine(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	if err := conversation.Reset(ctx, e.ConversationsDir(), "s", "start"); err != nil {
		t.Fatal(err)
	}
	plan := Plan{Argv: []string{"/bin/codex", "-s", "danger-full-access"}, Dir: "/work/a b"}
	Converse(ctx, e, codexLike, "s", &plan, time.Now())
	want := []string{"/bin/codex", "-c", `projects={"/work/a b"={trust_level="trusted"}}`, "-s", "danger-full-access", "--", "start"}
	if d := cmp.Diff(want, plan.Argv); d != "" {
		t.Errorf("first spawn (-want +got):\n%s", d)
	}
	// Codex reports the id it chose (its SessionStart hook, at the first
	// turn); the next spawn resumes it, the trust still first.
	tr := filepath.Join(e.Home, "rollout.jsonl")
	os.WriteFile(tr, []byte("{}\n"), 0o600)
	conversation.Update(ctx, e.ConversationsDir(), "s", func(r *conversation.Record) error { r.ID, r.Transcript = "019a-c0de", tr; return nil })
	plan = Plan{Argv: []string{"/bin/codex"}}
	Converse(ctx, e, codexLike, "s", &plan, time.Now())
	want = []string{"/bin/codex", "-c", `projects={"` + e.Home + `"={trust_level="trusted"}}`, "resume", "019a-c0de"}
	if d := cmp.Diff(want, plan.Argv); d != "" {
		t.Errorf("second spawn, in the home (-want +got):\n%s", d)
	}
}

var openCodeLike = agents.Agent{
	Command:    "/bin/opencode",
	ResumeArgs: []string{"--session={id}"},
	PromptArgs: []string{"--prompt={prompt}"},
	Setup:      "opencode",
}

// openCodeDB makes a database shaped like OpenCode 1.18.33's holding ids
// (the real sqlite3; scripts/deps installs it).
func openCodeDB(t *testing.T, path string, ids ...string) {
	t.Helper()
	sql := "PRAGMA journal_mode=WAL; CREATE TABLE IF NOT EXISTS session (id text PRIMARY KEY); DELETE FROM session;"
	for _, id := range ids {
		sql += "INSERT INTO session VALUES ('" + id + "');"
	}
	if out, err := exec.Command("sqlite3", path, sql).CombinedOutput(); err != nil {
		t.Fatalf("sqlite3 (scripts/deps installs it): %v: %s", err, out)
	}
}

func TestConverseResumesAnOpenCodeSessionWhileItsDatabaseHoldsIt(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	if err := conversation.Reset(ctx, e.ConversationsDir(), "s", "start"); err != nil {
		t.Fatal(err)
	}
	plan := Plan{Argv: []string{"/bin/opencode"}}
	Converse(ctx, e, openCodeLike, "s", &plan, time.Now())
	if d := cmp.Diff([]string{"/bin/opencode", "--prompt=start"}, plan.Argv); d != "" {
		t.Errorf("first spawn (-want +got):\n%s", d)
	}
	// The plugin reports the session OpenCode made and its database.
	db := filepath.Join(e.Home, "opencode.db")
	openCodeDB(t, db, "ses_a", "ses_b")
	conversation.Update(ctx, e.ConversationsDir(), "s", func(r *conversation.Record) error { r.ID, r.Transcript = "ses_a", db; return nil })
	plan = Plan{Argv: []string{"/bin/opencode"}}
	Converse(ctx, e, openCodeLike, "s", &plan, time.Now())
	if d := cmp.Diff([]string{"/bin/opencode", "--session=ses_a"}, plan.Argv); d != "" {
		t.Errorf("second spawn (-want +got):\n%s", d)
	}
	// The session is deleted; the database stays: a new one, said.
	openCodeDB(t, db, "ses_b")
	plan = Plan{Argv: []string{"/bin/opencode"}}
	logs := Converse(ctx, e, openCodeLike, "s", &plan, time.Now())
	if d := cmp.Diff([]string{"/bin/opencode"}, plan.Argv); d != "" {
		t.Errorf("third spawn (-want +got):\n%s", d)
	}
	rec, _ := conversation.Load(e.ConversationsDir(), "s")
	want := `started fresh: OpenCode's database "` + db + `" no longer holds session "ses_a"`
	if got := rec.FreshNote(); got != want {
		t.Errorf("fresh note %q, want %q (logs %q)", got, want, logs)
	}
}

// TestAResumedOpenCodeGetsItsResumePromptThroughThePlugin: OpenCode's TUI
// ignores --prompt beside --session, so the resume prompt of a resumed
// OpenCode conversation goes in the plugin's variable (the session and
// the text), not in its arguments; once.
func TestAResumedOpenCodeGetsItsResumePromptThroughThePlugin(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	db := filepath.Join(e.Home, "opencode.db")
	openCodeDB(t, db, "ses_a")
	conversation.Update(ctx, e.ConversationsDir(), "s", func(r *conversation.Record) error {
		r.ID, r.Transcript, r.Resume = "ses_a", db, `continue "now"`
		return nil
	})
	plan := Plan{Argv: []string{"/bin/opencode"}, Env: []string{"HOME=/home/ada"}}
	logs := Converse(ctx, e, openCodeLike, "s", &plan, time.Now())
	if d := cmp.Diff([]string{"/bin/opencode", "--session=ses_a"}, plan.Argv); d != "" {
		t.Errorf("argv (-want +got):\n%s", d)
	}
	want := contract.Env.AgentPrompt.Name + `={"session":"ses_a","prompt":"continue \"now\""}`
	if !slices.Contains(plan.Env, want) || !strings.Contains(strings.Join(logs, "\n"), "gave the resume prompt (14 bytes)") {
		t.Errorf("env %q, logs %q; want %s", plan.Env, logs, want)
	}
	plan = Plan{Argv: []string{"/bin/opencode"}}
	Converse(ctx, e, openCodeLike, "s", &plan, time.Now())
	for _, kv := range plan.Env {
		if strings.HasPrefix(kv, contract.Env.AgentPrompt.Name+"=") {
			t.Errorf("the next spawn gave the resume prompt again: %s", kv)
		}
	}
}

func TestConverseResumesWhileTheOpenCodeDatabaseExistsWhenItCannotAskIt(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	db := filepath.Join(e.Home, "opencode.db")
	openCodeDB(t, db, "ses_a")
	conversation.Update(ctx, e.ConversationsDir(), "s", func(r *conversation.Record) error { r.ID, r.Transcript = "ses_gone", db; return nil })
	t.Setenv("PATH", t.TempDir()) // no sqlite3
	plan := Plan{Argv: []string{"/bin/opencode"}}
	logs := Converse(ctx, e, openCodeLike, "s", &plan, time.Now())
	if d := cmp.Diff([]string{"/bin/opencode", "--session=ses_gone"}, plan.Argv); d != "" {
		t.Errorf("argv (-want +got):\n%s", d)
	}
	if !strings.Contains(strings.Join(logs, "\n"), `cannot tell whether OpenCode still holds session "ses_gone"`) {
		t.Errorf("logs %q do not say the lookup failed", logs)
	}
}

func TestConverseTurnsOffOpenCodesFetchesUnlessTheSessionSetsThem(t *testing.T) {
	e := setup(t)
	plan := Plan{Argv: []string{"/bin/opencode"}, Env: []string{"HOME=/home/ada", "OPENCODE_DISABLE_MODELS_FETCH=false"}}
	Converse(context.Background(), e, openCodeLike, "s", &plan, time.Now())
	want := []string{
		"HOME=/home/ada",
		"OPENCODE_DISABLE_MODELS_FETCH=false",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1",
	}
	if d := cmp.Diff(want, plan.Env); d != "" {
		t.Errorf("env (-want +got):\n%s", d)
	}
	plan = Plan{Argv: []string{"/bin/claude"}, Env: []string{"HOME=/home/ada"}}
	Converse(context.Background(), e, claudeLike, "t", &plan, time.Now())
	if len(plan.Env) != 1 {
		t.Errorf("another agent's env got %q", plan.Env)
	}
}

// TestTheResumePromptGoesWithTheResumedConversationOnce: the supervisor's
// resume after a usage limit reaches the resumed conversation as its
// prompt, on one spawn only; a spawn that cannot resume drops it, saying so.
func TestTheResumePromptGoesWithTheResumedConversationOnce(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	tr := filepath.Join(e.Home, "t.jsonl")
	os.WriteFile(tr, []byte("{}\n"), 0o600)
	resume := func(text string) {
		t.Helper()
		if err := conversation.Update(ctx, e.ConversationsDir(), "s", func(r *conversation.Record) error {
			r.ID, r.Transcript, r.Resume = "c1", tr, text
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	spawn := func() ([]string, string) {
		plan := Plan{Argv: []string{"/bin/claude"}, Dir: "/tmp"}
		logs := Converse(ctx, e, claudeLike, "s", &plan, time.Now())
		return plan.Argv, strings.Join(logs, "\n")
	}
	resume("continue; then -x")
	argv, logs := spawn()
	if d := cmp.Diff([]string{"/bin/claude", "--resume", "c1", "--", "continue; then -x"}, argv); d != "" {
		t.Errorf("the resume (-want +got):\n%s", d)
	}
	if !strings.Contains(logs, "gave the resume prompt (17 bytes)") {
		t.Errorf("logs %q", logs)
	}
	if argv, _ := spawn(); len(argv) != 3 {
		t.Errorf("the spawn after: %q, want the conversation without a prompt", argv)
	}
	resume("continue")
	os.Remove(tr)
	argv, logs = spawn()
	if len(argv) != 3 || argv[1] != "--session-id" || !strings.Contains(logs, "did not give the resume prompt: the conversation is a new one") {
		t.Errorf("no transcript: %q, %q; want a new conversation without the resume prompt, saying so", argv, logs)
	}
	if r, _ := conversation.Load(e.ConversationsDir(), "s"); r.Resume != "" {
		t.Errorf("the resume prompt %q stayed for another spawn", r.Resume)
	}
}
