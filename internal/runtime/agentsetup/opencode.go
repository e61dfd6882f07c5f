package agentsetup

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

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
