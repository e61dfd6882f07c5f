package agentsetup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/claudestate"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/usagelimit"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// Claude Code (docs/runtime-contract.md, "Claude Code"): before each spawn
// the few keys that let it start headless are merged into ~/.claude.json
// (package claudestate: onboarding done, the session's folder trusted, the
// API key in the environment approved unless the user rejected it); its
// SessionStart hook reports the transcript file it resumes from, and its
// transcript says when an account's usage limit resets (LimitReset).
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

// LimitReset reads when the usage limit a StopFailure reported resets,
// from the end of the transcript its input names (package usagelimit,
// ClaudeReset: only the account's own limit carries one). The transcript
// is the user's file, read as the user, at most its last
// usagelimit.ClaudeTail bytes.
func (claude) LimitReset(input []byte, _ time.Time) (time.Time, error) {
	var in struct {
		Transcript string `json:"transcript_path"`
	}
	if err := json.Unmarshal(input, &in); err != nil || !filepath.IsAbs(in.Transcript) {
		return time.Time{}, errors.New("the StopFailure input names no transcript")
	}
	f, err := userfile.Open(in.Transcript, -1)
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}, err
	}
	tail, err := io.ReadAll(io.NewSectionReader(f, max(fi.Size()-usagelimit.ClaudeTail, 0), usagelimit.ClaudeTail))
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the transcript %s: %w", escape.Quote(in.Transcript, 128), err)
	}
	reset, _ := usagelimit.ClaudeReset(tail)
	return reset, nil
}
