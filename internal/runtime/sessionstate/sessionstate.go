// Package sessionstate computes what `agent-box session ls` shows of each
// registry entry: its state as tmux sees it and the supervisor's
// observations. The web daemon's session list uses it; it reads the
// registry, state.json, the observation files and tmux, and changes
// nothing.
package sessionstate

import (
	"strings"

	"context"
	"os"
	"sort"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/agent-box/agent-box/internal/runtime/observe"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/sessionsrv"
	"github.com/agent-box/agent-box/internal/runtime/state"
	"github.com/agent-box/agent-box/internal/runtime/tmux"
)

// States of an entry (docs/runtime-contract.md, `session ls`).
const (
	Running = "running" // a live pane
	Stopped = "stopped" // parked in the registry
	Dead    = "dead"    // the pane exists, its program has exited
	Absent  = "absent"  // the supervisor runs, tmux has no such session
	Unknown = "unknown" // no supervisor, no tmux, or tmux did not answer
)

// Entry is one registry session with what was observed of it.
type Entry struct {
	registry.Session
	State     string        `json:"state"`
	Restarts  int           `json:"restarts"`
	LastStart *time.Time    `json:"lastStart,omitempty"` // when the supervisor last launched it
	LastExit  *observe.Exit `json:"lastExit,omitempty"`
	// RestartToApply: the session was started with an older
	// configuration (agents table, environment, agent-box) than a
	// restart of it would start now.
	RestartToApply bool `json:"restartToApply"`
	// Conversation is the agent's conversation id as it last reported
	// it ("" for an agent that reports none); Note says why it is a new
	// one although one was recorded, or what the last spawn found (a
	// rejected API key, ~/.claude.json left alone).
	Conversation string `json:"conversation,omitempty"`
	Note         string `json:"note,omitempty"`
	// Attention is the session's attention state as the supervisor last
	// saw it (package attention): for a session that is not stopped, and
	// for one the agent's exit 0 stopped (exited).
	Attention *attention.Status `json:"attention,omitempty"`
}

// List returns every session of e's registry, sorted by name. The server
// is asked only after sessionsrv.Open's checks, with its own program
// (tmuxBin, the configured tmux, only if that cannot be named); without a
// supervisor or a checked server every session that is not stopped is
// Unknown. procEnv is the environment of the tmux client. A registry that
// cannot be read is the only error.
func List(ctx context.Context, e paths.Env, tmuxBin string, procEnv []string) ([]Entry, error) {
	reg, err := registry.Load(e.Registry())
	if err != nil {
		return nil, err
	}
	panes := map[string]tmux.Pane{}
	tmuxKnown := false
	st, stErr := state.Read(e.StateFile())
	if stErr == nil {
		if srv, err := sessionsrv.Open(e, tmuxBin, procEnv); err == nil {
			if ps, err := srv.ListPanes(ctx); err == nil {
				tmuxKnown = true
				for _, pn := range ps {
					if _, ok := panes[pn.Session]; !ok {
						panes[pn.Session] = pn
					}
				}
			}
		}
	}
	out := []Entry{}
	for _, s := range reg.Sessions {
		le := Entry{Session: s, State: Unknown}
		if s.Args == nil {
			le.Args = []string{}
		}
		if obs, err := observe.Load(e.ObservationsDir(), s.Name); err == nil {
			le.Restarts, le.LastExit = obs.Restarts, obs.LastExit
			if now, ok := st.Spawn[s.Agent]; ok && stErr == nil && obs.Spawn != "" && !s.Stopped {
				le.RestartToApply = obs.Spawn != now
			}
			if a := obs.Attention; a != nil && (!s.Stopped || a.State == attention.Exited) {
				le.Attention = a
			}
			if !obs.LastStart.IsZero() {
				t := obs.LastStart
				le.LastStart = &t
			}
		}
		if rec, err := conversation.Load(e.ConversationsDir(), s.Name); err == nil {
			le.Conversation = rec.ID
			le.Note = strings.TrimPrefix(strings.Join([]string{rec.FreshNote(), rec.Notice}, "; "), "; ")
			le.Note = strings.TrimSuffix(le.Note, "; ")
		}
		pn, live := panes[s.Name]
		switch {
		case s.Stopped:
			le.State = Stopped
		case !tmuxKnown:
		case live && !pn.Dead:
			le.State = Running
		case live:
			le.State = Dead
		default:
			le.State = Absent
		}
		out = append(out, le)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// TmuxWaiting reports, from state.json, the tmux program the server runs
// and the installed one when they differ (a newer tmux waits for the
// sessions unit's restart); ok is false when they are the same file or
// there is no supervisor.
func TmuxWaiting(e paths.Env) (running, installed string, ok bool) {
	st, err := state.Read(e.StateFile())
	if err != nil || st.Tmux == "" || st.TmuxInstalled == "" {
		return "", "", false
	}
	a, errA := os.Stat(st.Tmux)
	b, errB := os.Stat(st.TmuxInstalled)
	if errA == nil && errB == nil && os.SameFile(a, b) || st.Tmux == st.TmuxInstalled {
		return "", "", false
	}
	return st.Tmux, st.TmuxInstalled, true
}
