package attention

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

func agent(s State, reason string) Event { return Event{Kind: Agent, State: s, Reason: reason} }

func st(s State, reason string) Status { return Status{State: s, Reason: reason} }

// A limit that waits for its second try, and one whose second try started.
var (
	waiting = Status{State: Limited, Reason: "limit", Until: t0.Add(time.Hour), Try: 2}
	resumed = Status{State: Limited, Reason: "limit", Try: 2}
)

// TestTransitions: one row per behaviour of the contract's "Attention"
// table: the state before, what happened, the state after.
func TestTransitions(t *testing.T) {
	for _, c := range []struct {
		name string
		from Status
		ev   Event
		want Status
	}{
		{"a start is working", Status{}, Event{Kind: Started}, st(Working, "")},
		{"a start after exited is working", st(Exited, ReasonExit), Event{Kind: Started}, st(Working, "")},
		{"a start while crash-looping keeps crash-looping", st(CrashLooping, ReasonExit), Event{Kind: Started}, st(CrashLooping, ReasonExit)},
		{"a start that stays up ends crash-looping", st(CrashLooping, ReasonExit), Event{Kind: Healthy}, st(Working, "")},
		{"healthy changes nothing else", st(Finished, "turn"), Event{Kind: Healthy}, st(Finished, "turn")},
		{"a permission needs you", st(Working, ""), agent(NeedsYou, "permission"), st(NeedsYou, "permission")},
		{"a turn's end is finished", st(Working, ""), agent(Finished, "turn"), st(Finished, "turn")},
		{"an agent working again ends needs-you", st(NeedsYou, "permission"), agent(Working, ""), st(Working, "")},
		{"an agent working again ends finished", st(Finished, "turn"), agent(Working, ""), st(Working, "")},
		{"working has no reason", st(Finished, "turn"), agent(Working, "permission"), st(Working, "")},
		{"an agent's report ends crash-looping", st(CrashLooping, ReasonExit), agent(Working, ""), st(Working, "")},
		{"an agent cannot claim exited", st(Working, ""), agent(Exited, ReasonExit), st(Working, "")},
		{"an agent cannot claim crash-looping", st(Working, ""), agent(CrashLooping, ""), st(Working, "")},
		{"nothing runs after an exit to report", st(Exited, ReasonExit), agent(NeedsYou, "permission"), st(Exited, ReasonExit)},
		{"a session adopted without a state takes the agent's", Status{}, agent(NeedsYou, "permission"), st(NeedsYou, "permission")},
		{"a look at a session without a state is nothing", Status{}, Event{Kind: Seen}, Status{}},
		{"a person's look ends finished", st(Finished, "turn"), Event{Kind: Seen}, st(Working, "")},
		{"a person's look leaves the agent's needs-you", st(NeedsYou, "permission"), Event{Kind: Seen}, st(NeedsYou, "permission")},
		{"a person's look ends a bell", st(NeedsYou, ReasonBell), Event{Kind: Seen}, st(Working, "")},
		{"a person's look leaves crash-looping", st(CrashLooping, ReasonExit), Event{Kind: Seen}, st(CrashLooping, ReasonExit)},
		{"a bell needs you", st(Working, ""), Event{Kind: Bell}, st(NeedsYou, ReasonBell)},
		{"a bell after finishing needs you", st(Finished, "turn"), Event{Kind: Bell}, st(NeedsYou, ReasonBell)},
		{"a bell keeps the agent's reason", st(NeedsYou, "permission"), Event{Kind: Bell}, st(NeedsYou, "permission")},
		{"a bell of a dead program is nothing", st(CrashLooping, ReasonExit), Event{Kind: Bell}, st(CrashLooping, ReasonExit)},
		{"silence after work is finished", st(Working, ""), Event{Kind: Silence}, st(Finished, ReasonSilence)},
		{"silence leaves needs-you", st(NeedsYou, "permission"), Event{Kind: Silence}, st(NeedsYou, "permission")},
		{"exit 0 is exited", st(NeedsYou, "permission"), Event{Kind: ExitedOK}, st(Exited, ReasonExit)},
		{"a quick death again is crash-looping", st(Working, ""), Event{Kind: Crashing}, st(CrashLooping, ReasonExit)},
		{"a stop forgets the state", st(Finished, "turn"), Event{Kind: Stopped}, Status{}},
		{"an OOM kill needs you", st(Working, ""), Event{Kind: OutOfMemory}, st(NeedsYou, ReasonOutOfMemory)},
		{"the restart after an OOM kill keeps saying it", st(NeedsYou, ReasonOutOfMemory), Event{Kind: Started}, st(NeedsYou, ReasonOutOfMemory)},
		{"a person's look ends an OOM kill's needs-you", st(NeedsYou, ReasonOutOfMemory), Event{Kind: Seen}, st(Working, "")},
		{"the agent working again ends it", st(NeedsYou, ReasonOutOfMemory), agent(Working, ""), st(Working, "")},
		{"a quick death after an OOM kill is crash-looping", st(NeedsYou, ReasonOutOfMemory), Event{Kind: Crashing}, st(CrashLooping, ReasonExit)},
		{"a usage limit is limited", st(Working, ""), agent(Limited, "limit"), st(Limited, "limit")},
		{"a limit again stays limited (its schedule is the supervisor's)", waiting, agent(Limited, "limit"), waiting},
		{"a limit after a resume stays limited", resumed, agent(Limited, "limit"), resumed},
		{"while it waits, the agent working (a person's prompt) ends it", waiting, agent(Working, ""), st(Working, "")},
		{"once resumed, the agent working on the resume prompt keeps it", resumed, agent(Working, ""), resumed},
		{"once resumed, a turn's end ends it", resumed, agent(Finished, "turn"), st(Finished, "turn")},
		{"once resumed, a question ends it", resumed, agent(NeedsYou, "question"), st(NeedsYou, "question")},
		{"a limit holds across a restart", waiting, Event{Kind: Started}, waiting},
		{"a person's look leaves it", waiting, Event{Kind: Seen}, waiting},
		{"a bell leaves it", waiting, Event{Kind: Bell}, waiting},
		{"silence leaves it", resumed, Event{Kind: Silence}, resumed},
		{"an exit 0 ends it", waiting, Event{Kind: ExitedOK}, st(Exited, ReasonExit)},
		{"a stop ends it", waiting, Event{Kind: Stopped}, Status{}},
		{"a limit never scheduled (an agent that cannot resume) ends when the agent works", st(Limited, "limit"), agent(Working, ""), st(Working, "")},
	} {
		t.Run(c.name, func(t *testing.T) {
			from := c.from
			if from.State != "" {
				from.Since = t0
			}
			got, changed := Next(from, c.ev, t0.Add(time.Minute))
			if got.State != c.want.State || got.Reason != c.want.Reason {
				t.Fatalf("Next(%+v, %+v) = %+v, want %+v", c.from, c.ev, got, c.want)
			}
			moved := c.from.State != c.want.State || c.from.Reason != c.want.Reason
			if changed != moved {
				t.Errorf("changed = %v, want %v", changed, moved)
			}
			switch {
			case moved && c.want.State != "" && !got.Since.Equal(t0.Add(time.Minute)):
				t.Errorf("Since = %v, want the event's time", got.Since)
			case !moved && !got.Since.Equal(from.Since):
				t.Errorf("Since moved to %v without a change", got.Since)
			case !moved && (!got.Until.Equal(from.Until) || got.Try != from.Try):
				t.Errorf("a limit's schedule changed without a change: %+v", got)
			case moved && (!got.Until.IsZero() || got.Try != 0):
				t.Errorf("a new state kept a schedule: %+v", got)
			}
		})
	}
}

// TestEveryStateAndReasonIsTheContracts: the six states are distinct
// names; the reasons the code gives are the contract's.
func TestEveryStateAndReasonIsTheContracts(t *testing.T) {
	seen := map[State]bool{}
	for _, s := range []State{Working, NeedsYou, Finished, Exited, CrashLooping, Limited} {
		if s == "" || seen[s] || !Known(s) {
			t.Errorf("state %q: empty, twice or unknown", s)
		}
		seen[s] = true
	}
	for _, r := range []string{ReasonBell, ReasonSilence, ReasonExit} {
		if !KnownReason(r) {
			t.Errorf("reason %q is not in the contract", r)
		}
	}
	if Known("sleeping") || Known("") || KnownReason("nap") {
		t.Error("an unknown name is known")
	}
	if !AgentCan(NeedsYou) || !AgentCan(Limited) || AgentCan(Exited) || AgentCan(CrashLooping) {
		t.Error("AgentCan: an agent may report working, needs-you, finished and limited only")
	}
}

// TestSilenceAfterReadsTheSetting: unset is off; a duration in the
// contract's bounds, rounded up to whole seconds; anything else an error
// that names the variable.
func TestSilenceAfterReadsTheSetting(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 0, "30s": 30 * time.Second, "1s": time.Second, "1.5s": 2 * time.Second, "24h": 24 * time.Hour, "2m": 2 * time.Minute} {
		if got, err := SilenceAfter(v); err != nil || got != want {
			t.Errorf("SilenceAfter(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"0s", "500ms", "25h", "30", "-1s", "x"} {
		if got, err := SilenceAfter(v); err == nil || !strings.Contains(err.Error(), "AGENT_BOX_SILENCE_AFTER") {
			t.Errorf("SilenceAfter(%q) = %v, %v; want an error naming the variable", v, got, err)
		}
	}
}

// TestStatusStringIsWhatTheLogAndSessionLsShow: the state, and the reason
// in parentheses when there is one.
func TestStatusStringIsWhatTheLogAndSessionLsShow(t *testing.T) {
	if got := st(NeedsYou, "permission").String(); got != "needs-you (permission)" {
		t.Errorf("%q", got)
	}
	if got := st(Working, "").String(); got != "working" {
		t.Errorf("%q", got)
	}
	local := time.Local
	time.Local = time.FixedZone("CET", 3600)
	t.Cleanup(func() { time.Local = local })
	for _, c := range []struct {
		s    Status
		want string
	}{
		{Status{State: Limited, Reason: "limit", Since: t0, Until: t0.Add(5*time.Hour + 4*time.Minute), Try: 2}, "limited until 16:04 (try 2)"},
		{Status{State: Limited, Reason: "limit", Since: t0, Until: t0.Add(20 * time.Hour), Try: 1}, "limited until Dec 4 07:00 (try 1)"},
		{Status{State: Limited, Reason: "limit", Since: t0, Try: 3}, "limited, resumed (try 3)"},
		{Status{State: Limited, Reason: "limit", Since: t0}, "limited (limit)"},
	} {
		if got := c.s.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.s, got, c.want)
		}
	}
}

// The reasons the supervisor and tmux give are the contract's: the auth
// service refuses a report with any other, so a reason missing there would
// never reach the inbox.
func TestTheSupervisorsReasonsAreTheContracts(t *testing.T) {
	for _, r := range []string{ReasonBell, ReasonSilence, ReasonExit, ReasonOutOfMemory, ReasonError, ReasonLimit} {
		if !KnownReason(r) {
			t.Errorf("reason %q is not in the contract's attention.reasons", r)
		}
	}
}
