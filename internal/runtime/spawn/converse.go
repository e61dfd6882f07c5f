package spawn

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/claudestate"
	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/opencodestate"
	"github.com/agent-box/agent-box/internal/runtime/paths"
)

// Converse prepares the conversation of session name before its agent
// starts: the agent's setup (Claude Code: ~/.claude.json merged; Codex: the
// session's folder trusted on its command line; OpenCode: its database
// asked whether the session to resume is still there), then the
// decision on the session's conversation file (package conversation). It
// appends the agent's conversation arguments to plan.Argv and returns the
// lines to log. Nothing here stops the spawn: a failure is logged, and the
// agent starts as the table says, without conversation arguments.
func Converse(ctx context.Context, e paths.Env, ag agents.Agent, name string, plan *Plan, now time.Time) (logs []string) {
	logf := func(format string, a ...any) {
		logs = append(logs, fmt.Sprintf("session %s: ", escape.Quote(name, 64))+fmt.Sprintf(format, a...))
	}
	notice := ""
	if ag.Setup == "claude" {
		key, _ := lookup(plan.Env, "ANTHROPIC_API_KEY")
		res, err := claudestate.Merge(e.Home, claudestate.Needs{Cwd: plan.Dir, APIKey: key})
		switch {
		case err != nil:
			notice = "~/.claude.json left alone: " + err.Error()
			logf("%s (Claude may stop at its first-run dialogs)", notice)
		case res.KeyRejected:
			notice = "Claude was told to reject the API key in ANTHROPIC_API_KEY (ending " + key[len(key)-4:] + "): remove it from customApiKeyResponses.rejected in ~/.claude.json to use it"
			logf("%s", notice)
		case len(res.Changed) > 0:
			logf("set %s in ~/.claude.json", strings.Join(res.Changed, ", "))
		}
	}
	if ag.Setup == "codex" {
		dir := plan.Dir
		if dir == "" {
			dir = e.Home
		}
		// Codex asks "Trust this folder?" in a git repository; a setting
		// on its command line answers for this process only (nothing is
		// written to the user's ~/.codex/config.toml). Measured with
		// 0.171.0: the dotted form projects."DIR".trust_level keeps the
		// quotes in the key and does not answer; an inline table does.
		plan.Argv = slices.Insert(plan.Argv, 1, "-c", CodexTrust(dir))
	}
	if ag.Setup == "opencode" {
		// Each switch unless the session's environment sets it (a host
		// that wants OpenCode's models list sets the variable to false).
		for _, kv := range OpenCodeOffline {
			k, _, _ := strings.Cut(kv, "=")
			if _, set := lookup(plan.Env, k); !set {
				plan.Env = append(plan.Env, kv)
			}
		}
	}
	if len(ag.ResumeArgs) == 0 && len(ag.PromptArgs) == 0 {
		return logs
	}
	var d conversation.Decision
	var prompt string
	err := conversation.Update(ctx, e.ConversationsDir(), name, func(r *conversation.Record) error {
		newID := func() string { return "" }
		if len(ag.NewArgs) > 0 {
			newID = conversation.NewID
		}
		gone := conversation.TranscriptGone
		if ag.Setup == "opencode" {
			gone = func(id, db string) string { return openCodeGone(ctx, id, db, logf) }
		}
		if len(ag.ResumeArgs) == 0 {
			r.ID = "" // nothing to resume: every spawn is new
		}
		d = conversation.Decide(r, gone, newID, now)
		prompt = r.Prompt
		if len(ag.ResumeArgs) == 0 {
			r.Prompt = "" // the first spawn only: it cannot be resumed
			r.Fresh = nil
		}
		r.Notice = notice
		return nil
	})
	if err != nil {
		logf("conversation file: %v (the agent starts without resuming)", err)
		return logs
	}
	switch {
	case d.Resume:
		plan.Argv = append(plan.Argv, agents.Fill(ag.ResumeArgs, d.ID, "")...)
		logf("resuming conversation %s", d.ID)
	default:
		if d.ID != "" {
			plan.Argv = append(plan.Argv, agents.Fill(ag.NewArgs, d.ID, "")...)
		}
		if d.Reason != "" && len(ag.ResumeArgs) > 0 {
			logf("started a new conversation %s: %s", d.ID, d.Reason)
		}
	}
	if d.Prompt && len(ag.PromptArgs) > 0 {
		plan.Argv = append(plan.Argv, agents.Fill(ag.PromptArgs, "", prompt)...)
		logf("gave the kickoff prompt (%d bytes)", len(prompt))
	}
	return logs
}

// OpenCodeOffline are OpenCode's switches for what it would fetch from the
// network on its own (measured with 1.18.33 in a fresh home: the models
// list from models.dev, the update check, its default plugins from the npm
// registry; LSP servers and sharing on demand). What they leave: until its
// plugin SDK is installed into ~/.config/opencode (from the npm registry,
// once), every start tries that install (docs/runtime-contract.md,
// "OpenCode").
var OpenCodeOffline = []string{
	"OPENCODE_DISABLE_AUTOUPDATE=1",
	"OPENCODE_DISABLE_MODELS_FETCH=1",
	"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
	"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
	"OPENCODE_DISABLE_SHARE=1",
}

// openCodeGone is Decide's gone for OpenCode, whose conversations are rows
// of its database db (package opencodestate): "" while db holds session
// id, else why not. When the lookup fails (no sqlite3 on PATH), the
// database file alone decides, and the failure is logged.
func openCodeGone(ctx context.Context, id, db string, logf func(string, ...any)) string {
	bin, err := exec.LookPath("sqlite3")
	if err == nil {
		var ok bool
		if ok, err = opencodestate.Has(ctx, bin, db, id); err == nil {
			if ok {
				return ""
			}
			return fmt.Sprintf("OpenCode's database %s no longer holds session %s", escape.Quote(db, 200), escape.Quote(id, 64))
		}
	}
	logf("cannot tell whether OpenCode still holds session %s (%v): resuming while %s exists", escape.Quote(id, 64), err, escape.Quote(db, 200))
	return conversation.TranscriptGone(id, db)
}

// CodexTrust is the value of Codex's -c option that trusts dir: the
// table projects with dir's entry, dir a TOML basic string.
func CodexTrust(dir string) string {
	return "projects={" + tomlString(dir) + `={trust_level="trusted"}}`
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// lookup returns the value of key in env ("KEY=VALUE" entries, the last
// one winning as in execve).
func lookup(env []string, key string) (string, bool) {
	v, ok := "", false
	for _, kv := range env {
		if k, val, found := strings.Cut(kv, "="); found && k == key {
			v, ok = val, true
		}
	}
	return v, ok
}
