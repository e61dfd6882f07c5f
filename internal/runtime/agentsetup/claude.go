package agentsetup

import (
	"context"
	"strings"

	"github.com/agent-box/agent-box/internal/runtime/claudestate"
)

// Claude Code (docs/runtime-contract.md, "Claude Code"): before each spawn
// the few keys that let it start headless are merged into ~/.claude.json
// (package claudestate: onboarding done, the session's folder trusted, the
// API key in the environment approved unless the user rejected it); its
// SessionStart hook reports the transcript file it resumes from.
func init() { Register("claude", claude{}) }

type claude struct{ transcriptFile }

func (claude) Prepare(_ context.Context, s *Spawn) (notice string, logs []string) {
	key, _ := lookup(s.Env, "ANTHROPIC_API_KEY")
	res, err := claudestate.Merge(s.Home, claudestate.Needs{Cwd: s.Dir, APIKey: key})
	switch {
	case err != nil:
		notice = "~/.claude.json left alone: " + err.Error()
		return notice, []string{notice + " (Claude may stop at its first-run dialogs)"}
	case res.KeyRejected:
		notice = "Claude was told to reject the API key in ANTHROPIC_API_KEY (ending " + key[len(key)-4:] + "): remove it from customApiKeyResponses.rejected in ~/.claude.json to use it"
		return notice, []string{notice}
	case len(res.Changed) > 0:
		return "", []string{"set " + strings.Join(res.Changed, ", ") + " in ~/.claude.json"}
	}
	return "", nil
}
