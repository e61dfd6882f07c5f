// Package agentsetup is what differs between the agents agent-box prepares: one file per agent, each a Setup that exec-session calls before the agent starts.
//
// An agent's profile (command, conversation arguments, setup name) is the
// module's (modules/src/lib/agents/<agent>.nix); what the runtime does for
// it lives in this package's file of that agent (claude.go, codex.go,
// opencode.go), which registers its Setup under the contract's setup name
// (contract.Conversations.Setups). The generic work (the conversation
// file, the decision to resume, the arguments) is package spawn's and
// package conversation's, and branches on no agent's name.
package agentsetup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/agent-box/agent-box/internal/runtime/usagelimit"
)

// Spawn is what a Setup may change of a spawn before its agent starts.
type Spawn struct {
	Home string   // the user's home
	Dir  string   // the session's folder ("" is the home)
	Argv []string // the program (Argv[0]) and its arguments so far
	Env  []string // KEY=VALUE, the last one winning as in execve
}

// Setup is one agent's preparation, what differs between agents.
type Setup interface {
	// Prepare changes the spawn (the agent's own files, its arguments,
	// its environment) and returns what to log; notice, when not empty,
	// is also shown by `agent-box session ls` until the next spawn.
	// Nothing here may stop the spawn: a failure is a notice.
	Prepare(ctx context.Context, s *Spawn) (notice string, logs []string)
	// Gone says whether the agent can resume conversation id, whose
	// transcript (or database) its report named at path: "" when it can,
	// else why not. logf logs what it could not tell.
	Gone(ctx context.Context, id, path string, logf func(format string, a ...any)) string
}

// LimitReporter is a Setup whose agent's report of a usage limit (its
// hook's input, at now) can say when the limit resets: LimitReset returns
// the reset (zero: the report carries none), ErrNotALimit for a report
// that is no limit after all (a short retry the agent makes itself), or
// why it cannot tell.
type LimitReporter interface {
	LimitReset(input []byte, now time.Time) (time.Time, error)
}

// PromptGiver is a Setup whose agent takes a prompt for a resumed
// conversation another way than its promptArgs (OpenCode's TUI ignores
// --prompt beside --session): GivePrompt changes the spawn to give it.
type PromptGiver interface {
	GivePrompt(s *Spawn, id, prompt string)
}

// TurnReader is a Setup whose agent tells a failed turn to no hook, only
// to its log (the transcript its report named; Codex's rollout file):
// LastTurn reads that log's end (tail; the whole log when fromStart) for
// the newest turn, its id and how it ended. The supervisor reads it while
// the agent works (contract usageLimits.turnRead).
type TurnReader interface {
	LastTurn(tail []byte, fromStart bool) (turn string, end usagelimit.TurnEnd, reset time.Time)
}

// ErrNotALimit: the report is not a usage limit; nothing changes.
var ErrNotALimit = errors.New("not a usage limit")

var setups = map[string]Setup{}

// Register makes s the Setup of the agents whose setup is name: each
// agent's file registers its own in init (a test may register a toy).
func Register(name string, s Setup) {
	if _, dup := setups[name]; dup || name == "" {
		panic(fmt.Sprintf("agentsetup: setup %q registered twice or unnamed", name))
	}
	setups[name] = s
}

// For is the Setup of setup name; nil for "" (nothing to prepare) or a
// name nothing registered.
func For(name string) Setup { return setups[name] }

// Names are the registered setups, sorted.
func Names() []string {
	out := make([]string, 0, len(setups))
	for n := range setups {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// transcriptFile is the Gone of an agent whose report names its
// transcript file: resumable while the file is there.
type transcriptFile struct{}

func (transcriptFile) Gone(_ context.Context, id, path string, _ func(string, ...any)) string {
	return conversation.TranscriptGone(id, path)
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
