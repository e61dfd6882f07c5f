package agentsetup

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/usagelimit"
)

// Codex (docs/runtime-contract.md, "Codex"): the session's folder is
// trusted on its command line, for that process only; its SessionStart
// hook reports the transcript file it resumes from, whose end says how a
// turn ended (LastTurn: no hook tells a failed one).
func init() { Register("codex", codex{}) }

type codex struct{ transcriptFile }

func (codex) Prepare(_ context.Context, s *Spawn) (string, []string) {
	dir := s.Dir
	if dir == "" {
		dir = s.Home
	}
	// Codex asks "Trust this folder?" in a git repository; a setting on
	// its command line answers for this process only (nothing is written
	// to the user's ~/.codex/config.toml). Measured with 0.171.0: the
	// dotted form projects."DIR".trust_level keeps the quotes in the key
	// and does not answer; an inline table does.
	s.Argv = slices.Insert(s.Argv, 1, "-c", CodexTrust(dir))
	return "", nil
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

// LastTurn reads the end of Codex's rollout file (usagelimit.CodexLastTurn).
func (codex) LastTurn(tail []byte, fromStart bool) (string, usagelimit.TurnEnd, time.Time) {
	return usagelimit.CodexLastTurn(tail, fromStart)
}
