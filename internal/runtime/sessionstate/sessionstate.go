// Package sessionstate computes what `agent-box session ls` shows of each
// registry entry: its state as tmux sees it and the supervisor's
// observations. The web daemon's session list uses it; it reads the
// registry, state.json, the observation files and tmux, and changes
// nothing.
package sessionstate

import (
	"context"
	"sort"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/observe"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/registry"
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
}

// List returns every session of e's registry, sorted by name. tmuxBin is
// the absolute tmux to ask (never one state.json names); with "" every
// session that is not stopped is Unknown. procEnv is the environment of
// the tmux client. A registry that cannot be read is the only error.
func List(ctx context.Context, e paths.Env, tmuxBin string, procEnv []string) ([]Entry, error) {
	reg, err := registry.Load(e.Registry())
	if err != nil {
		return nil, err
	}
	panes := map[string]tmux.Pane{}
	tmuxKnown := false
	if _, err := state.Read(e.StateFile()); err == nil && tmuxBin != "" {
		srv := &tmux.Server{Bin: tmuxBin, Socket: e.TmuxSocket(), Env: procEnv}
		if srv.Alive() {
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
			if !obs.LastStart.IsZero() {
				t := obs.LastStart
				le.LastStart = &t
			}
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
