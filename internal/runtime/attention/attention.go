// Package attention is the state machine of a session's attention state
// (docs/runtime-contract.md, "Attention"): whether a session's agent works,
// needs a person, has finished, has exited or crash-loops. The supervisor
// alone feeds it, from three sources: the agent's own hooks (through
// `agent-box agent-hook SETUP event`, mapped by the contract's
// attention.agentEvents), tmux (the bell, silence after output, a client
// showing the session) and what the supervisor itself sees (starts,
// exits, backoff). Next is pure: no clock, no I/O.
//
// Invariants: a state is one of the contract's; an agent can only claim
// working, needs-you, finished or limited (never exited or crash-looping,
// which only the supervisor knows); a person's look (Seen) ends finished
// and a bell's needs-you, never an agent's needs-you, which ends when the
// agent works again; a limit holds across restarts, and once resumed, until
// the agent says anything but working (its work on the resume prompt).
package attention

import (
	"fmt"
	"slices"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// State is an attention state: one of the contract's attention.states.
type State string

// The states, named by the contract.
var (
	Working      = State(contract.Attention.States.Working.Name)
	NeedsYou     = State(contract.Attention.States.NeedsYou.Name)
	Finished     = State(contract.Attention.States.Finished.Name)
	Exited       = State(contract.Attention.States.Exited.Name)
	CrashLooping = State(contract.Attention.States.CrashLooping.Name)
	Limited      = State(contract.Attention.States.Limited.Name)
	states       = []State{Working, NeedsYou, Finished, Exited, CrashLooping, Limited}
)

// Reasons the supervisor and tmux give (the agents' come from the
// contract's attention.agentEvents).
const (
	ReasonBell        = "bell"
	ReasonSilence     = "silence"
	ReasonExit        = "exit"
	ReasonOutOfMemory = "memory"
	// the supervisor's reading of a Codex turn's end (no hook tells it)
	ReasonError = "error"
	ReasonLimit = "limit"
)

// Status is a session's attention state, why it was entered and when.
// The zero Status is "nothing known yet" (a session never started, or
// one adopted from an agent-box that kept no attention state).
type Status struct {
	State  State     `json:"state"`
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
	// Limited only: Try counts the tries of this limit (the next one,
	// while it waits); Until is when the next starts, zero once it has
	// started (the session was resumed and the limit holds until the
	// agent ends a turn, needs a person, or reports the limit again).
	Until time.Time `json:"until,omitzero"`
	Try   int       `json:"try,omitempty"`
}

// String is "STATE" or "STATE (REASON)", as the log and `session ls` show
// it; a limit says when its next try is, or that it was resumed: "limited
// until 15:04 (try 2)", "limited, resumed (try 2)" (in the process's local
// time; a try on another day gives its date).
func (s Status) String() string {
	if s.State == Limited && s.Try > 0 {
		if s.Until.IsZero() {
			return fmt.Sprintf("%s, resumed (try %d)", s.State, s.Try)
		}
		layout := "15:04"
		if u, since := s.Until.Local(), s.Since.Local(); u.YearDay() != since.YearDay() || u.Year() != since.Year() {
			layout = "Jan 2 15:04"
		}
		return fmt.Sprintf("%s until %s (try %d)", s.State, s.Until.Local().Format(layout), s.Try)
	}
	if s.Reason == "" {
		return string(s.State)
	}
	return string(s.State) + " (" + s.Reason + ")"
}

// Kind is what happened.
type Kind int

const (
	// Agent: the session's agent reported the state (and reason) in the
	// event (working, needs-you or finished).
	Agent Kind = iota + 1
	// Bell: the terminal rang while no client showed the session.
	Bell
	// Silence: no output for the configured time after output, while no
	// client showed the session.
	Silence
	// Seen: a client (a person) shows the session.
	Seen
	// Started: the supervisor started or restarted the program.
	Started
	// Healthy: a start stayed up for the quick window.
	Healthy
	// ExitedOK: the program exited 0 (the session is parked, stopped).
	ExitedOK
	// Crashing: the program died quickly again; its restart waits.
	Crashing
	// Stopped: the session was stopped or removed (nothing to say).
	Stopped
	// OutOfMemory: an OOM killer ended the program (its restart follows).
	OutOfMemory
)

// Event is one thing that happened to a session.
type Event struct {
	Kind   Kind
	State  State  // Agent only
	Reason string // Agent only
	// Until: Agent and Limited only, the reset the agent named (zero: it
	// named none); the supervisor's schedule reads it.
	Until time.Time
}

// AgentCan reports whether an agent may report state s.
func AgentCan(s State) bool { return s == Working || s == NeedsYou || s == Finished || s == Limited }

// Known reports whether s is one of the contract's states.
func Known(s State) bool { return s != "" && slices.Contains(states, s) }

// KnownReason reports whether r is one of the contract's reasons.
func KnownReason(r string) bool {
	for _, t := range contract.Attention.Reasons {
		if t.Name == r {
			return true
		}
	}
	return false
}

// SilenceAfter parses services.agent-box.attention.silenceAfter as the
// supervisor reads it (contract env silenceAfter): "" is 0 (not watched);
// else a Go duration of the contract's format within its bounds, rounded
// up to whole seconds (tmux's monitor-silence counts seconds).
func SilenceAfter(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	b := contract.Attention.SilenceAfter
	d, err := contract.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", contract.Env.SilenceAfter.Name, err)
	}
	if d < contract.Duration(b.Min) || d > contract.Duration(b.Max) {
		return 0, fmt.Errorf("%s=%q: want %s to %s", contract.Env.SilenceAfter.Name, v, b.Min, b.Max)
	}
	return (d + time.Second - 1).Truncate(time.Second), nil
}

// Next is the status after ev at now, and whether it changed (a new
// state or reason; Since moves only then).
func Next(cur Status, ev Event, now time.Time) (Status, bool) {
	to := cur
	switch ev.Kind {
	case Agent:
		if !AgentCan(ev.State) || cur.State == Exited {
			return cur, false // an agent cannot say it, or no program runs that could have
		}
		if cur.State == Limited && cur.Until.IsZero() && cur.Try > 0 && ev.State == Working {
			return cur, false // the resume prompt's own work: the limit holds until the turn ends
		}
		to = Status{State: ev.State, Reason: ev.Reason}
		if ev.State == Working {
			to.Reason = ""
		}
	case Bell:
		if cur.State == Working || cur.State == Finished {
			to = Status{State: NeedsYou, Reason: ReasonBell}
		}
	case Silence:
		if cur.State == Working {
			to = Status{State: Finished, Reason: ReasonSilence}
		}
	case Seen:
		if cur.State == Finished || cur.State == NeedsYou && (cur.Reason == ReasonBell || cur.Reason == ReasonOutOfMemory) {
			to = Status{State: Working}
		}
	case Started:
		// the restart after an OOM kill leaves it said until a person
		// looks; a limit holds across restarts (the resume is one)
		if cur.State != CrashLooping && cur.State != Limited && !(cur.State == NeedsYou && cur.Reason == ReasonOutOfMemory) {
			to = Status{State: Working}
		}
	case OutOfMemory:
		to = Status{State: NeedsYou, Reason: ReasonOutOfMemory}
	case Healthy:
		if cur.State == CrashLooping {
			to = Status{State: Working}
		}
	case ExitedOK:
		to = Status{State: Exited, Reason: ReasonExit}
	case Crashing:
		to = Status{State: CrashLooping, Reason: ReasonExit}
	case Stopped:
		to = Status{}
	}
	if to.State == cur.State && to.Reason == cur.Reason {
		return cur, false
	}
	if to.State != "" {
		to.Since = now.UTC()
	}
	return to, true
}
