package agentsetup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/opencodestate"
)

// OpenCode (docs/runtime-contract.md, "OpenCode"): what it would fetch on
// its own is turned off for each spawn, and a session is resumed only
// while its database holds it (package opencodestate); agent-box's plugin
// in its managed config reports the session it created.
func init() { Register("opencode", opencode{}) }

type opencode struct{}

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

// Prepare sets each switch unless the session's environment sets it (a
// host that wants OpenCode's models list sets the variable to false).
func (opencode) Prepare(_ context.Context, s *Spawn) (string, []string) {
	for _, kv := range OpenCodeOffline {
		k, _, _ := strings.Cut(kv, "=")
		if _, set := lookup(s.Env, k); !set {
			s.Env = append(s.Env, kv)
		}
	}
	return "", nil
}

// Gone: OpenCode's conversations are rows of its database db: "" while db
// holds session id, else why not. When the lookup fails (no sqlite3 on
// PATH), the database file alone decides, and the failure is logged.
func (opencode) Gone(ctx context.Context, id, db string, logf func(string, ...any)) string {
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

// LimitReset reads the plugin's report of a usage limit: OpenCode's retry
// (session.status retry; "next", when it tries again, in Unix
// milliseconds) waits for the reset itself, honouring the API's
// retry-after in full (measured with 1.18.33: 7200 s), so its next try is
// the reset; one sooner than the contract's usageLimits.agentRetry is a
// transient error that OpenCode retries within its own backoff (at most
// 5 tries, 2 s doubling, measured): ErrNotALimit. Its session.error with
// status 429 (its retries spent) names no reset.
func (opencode) LimitReset(input []byte, now time.Time) (time.Time, error) {
	var in struct {
		Status string `json:"status"`
		Next   *int64 `json:"next"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return time.Time{}, fmt.Errorf("the plugin's report is not a JSON object: %w", err)
	}
	if in.Status != "retry" {
		return time.Time{}, nil
	}
	if in.Next == nil || *in.Next <= 0 || *in.Next > maxUnixMilli {
		return time.Time{}, errors.New("OpenCode's retry names no time")
	}
	next := time.UnixMilli(*in.Next).UTC()
	if next.Sub(now) < contract.Duration(contract.UsageLimits.AgentRetry) {
		return time.Time{}, ErrNotALimit
	}
	return next, nil
}

// maxUnixMilli is the end of year 9999, in Unix milliseconds.
const maxUnixMilli = 253402300799999

// GivePrompt gives a resumed OpenCode conversation its prompt through
// agent-box's plugin (contract env agentPrompt: the session and the text,
// as JSON), which sends it to that session once OpenCode runs: its TUI
// 1.18.33 submits --prompt only on its home screen, which --session skips
// (measured: the resumed session showed nothing and the model got no
// request).
func (opencode) GivePrompt(s *Spawn, id, prompt string) {
	v, _ := json.Marshal(struct {
		Session string `json:"session"`
		Prompt  string `json:"prompt"`
	}{id, prompt})
	s.Env = append(s.Env, contract.Env.AgentPrompt.Name+"="+string(v))
}
