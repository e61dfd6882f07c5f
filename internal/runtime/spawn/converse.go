package spawn

import (
	"context"
	"fmt"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/agentsetup"
	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/paths"
)

// Converse prepares the conversation of session name before its agent
// starts: the agent's setup (package agentsetup: what differs between
// agents), then the decision on the session's conversation file (package
// conversation). It appends the agent's conversation arguments to
// plan.Argv and returns the lines to log. Nothing here stops the spawn: a
// failure is logged, and the agent starts as the table says, without
// conversation arguments.
func Converse(ctx context.Context, e paths.Env, ag agents.Agent, name string, plan *Plan, now time.Time) (logs []string) {
	logf := func(format string, a ...any) {
		logs = append(logs, fmt.Sprintf("session %s: ", escape.Quote(name, 64))+fmt.Sprintf(format, a...))
	}
	notice := ""
	setup := agentsetup.For(ag.Setup)
	if setup != nil {
		sp := agentsetup.Spawn{Home: e.Home, Dir: plan.Dir, Argv: plan.Argv, Env: plan.Env}
		var lines []string
		notice, lines = setup.Prepare(ctx, &sp)
		plan.Argv, plan.Env = sp.Argv, sp.Env
		for _, l := range lines {
			logf("%s", l)
		}
	}
	if len(ag.ResumeArgs) == 0 && len(ag.PromptArgs) == 0 {
		return logs
	}
	var d conversation.Decision
	var prompt, resume string
	err := conversation.Update(ctx, e.ConversationsDir(), name, func(r *conversation.Record) error {
		newID := func() string { return "" }
		if len(ag.NewArgs) > 0 {
			newID = conversation.NewID
		}
		gone := conversation.TranscriptGone
		if setup != nil {
			gone = func(id, path string) string { return setup.Gone(ctx, id, path, logf) }
		}
		if len(ag.ResumeArgs) == 0 {
			r.ID = "" // nothing to resume: every spawn is new
		}
		d = conversation.Decide(r, gone, newID, now)
		prompt, resume = r.Prompt, r.Resume
		r.Resume = ""
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
	switch {
	case d.Prompt && len(ag.PromptArgs) > 0:
		plan.Argv = append(plan.Argv, agents.Fill(ag.PromptArgs, "", prompt)...)
		logf("gave the kickoff prompt (%d bytes)", len(prompt))
		if resume != "" {
			logf("did not give the resume prompt: the conversation is a new one")
		}
	case resume != "" && d.Resume && len(ag.PromptArgs) > 0:
		if g, ok := setup.(agentsetup.PromptGiver); ok {
			sp := agentsetup.Spawn{Home: e.Home, Dir: plan.Dir, Argv: plan.Argv, Env: plan.Env}
			g.GivePrompt(&sp, d.ID, resume)
			plan.Argv, plan.Env = sp.Argv, sp.Env
		} else {
			plan.Argv = append(plan.Argv, agents.Fill(ag.PromptArgs, "", resume)...)
		}
		logf("gave the resume prompt (%d bytes)", len(resume))
	case resume != "":
		logf("did not give the resume prompt: the conversation is a new one")
	}
	return logs
}
