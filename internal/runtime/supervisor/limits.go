package supervisor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/agent-box/agent-box/internal/runtime/usagelimit"
)

// A session whose agent reached its account's usage limit is limited
// (package attention) and waits for its next try (package usagelimit);
// then the supervisor restarts it in its conversation with the resume
// prompt (the spawn gives it, package conversation), and the state holds
// until the agent ends a turn, needs a person or reports the limit again
// (the next try, waiting longer). The schedule is the observation file's
// (Status.Until and Try): a restart of the supervisor, of the sessions
// unit or of the machine keeps it.

// limitMsg is a limited session's next try that is due.
type limitMsg struct {
	name  string
	until time.Time
}

// Limits is the usage limits' schedule and resume prompt.
type Limits struct {
	Policy usagelimit.Policy
	Prompt string
}

// DefaultLimits is the contract's schedule (contract usageLimits).
func DefaultLimits() Limits {
	u := contract.UsageLimits
	return Limits{
		Prompt: u.ResumePrompt,
		Policy: usagelimit.Policy{
			FirstWait: contract.Duration(u.FirstWait), Growth: u.Growth, MaxWait: contract.Duration(u.MaxWait),
			Jitter: contract.Duration(u.Jitter), MaxReset: contract.Duration(u.MaxReset), PerMinute: u.PerMinute,
		},
	}
}

// LimitsFromEnv is DefaultLimits with the settings of
// services.agent-box.usageLimits that getenv has (the supervisor's unit sets
// only those that differ from the contract's); a value that is not one, or
// a schedule that cannot work, is an error naming the variable.
func LimitsFromEnv(getenv func(string) string) (Limits, error) {
	l := DefaultLimits()
	v := contract.Env
	if p := getenv(v.ResumePrompt.Name); p != "" {
		if err := conversation.CheckPrompt(p); err != nil {
			return l, fmt.Errorf("%s: %w", v.ResumePrompt.Name, err)
		}
		l.Prompt = p
	}
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{{v.LimitFirstWait.Name, &l.Policy.FirstWait}, {v.LimitMaxWait.Name, &l.Policy.MaxWait}} {
		if s := getenv(d.name); s != "" {
			t, err := contract.ParseDuration(s)
			if err != nil {
				return l, fmt.Errorf("%s: %w", d.name, err)
			}
			*d.to = t
		}
	}
	for _, n := range []struct {
		name string
		to   *int
	}{{v.LimitGrowth.Name, &l.Policy.Growth}, {v.LimitPerMinute.Name, &l.Policy.PerMinute}} {
		if s := getenv(n.name); s != "" {
			i, err := strconv.Atoi(s)
			if err != nil {
				return l, fmt.Errorf("%s=%q: not a whole number", n.name, s)
			}
			*n.to = i
		}
	}
	if err := l.Policy.Check(); err != nil {
		return l, fmt.Errorf("services.agent-box.usageLimits (%s and the others): %w", v.LimitFirstWait.Name, err)
	}
	return l, nil
}

// tryTime is how the log gives a try's time: exact to the millisecond (a
// session's state says only the minute), so that the spacing of tries can
// be read from the journal.
const tryTime = "2006-01-02T15:04:05.000Z07:00"

// jitter draws a duration in [0, max].
func jitter(max time.Duration) time.Duration { return rand.N(max + 1) }

// limited schedules ss's next try after its agent reported the usage
// limit (ev.Until: the reset it named). A report while a try waits
// changes nothing; one after a resume is the next try.
func (s *sup) limited(ss *session, ev attention.Event) {
	a := ss.obs.Attention
	if a == nil || a.State != attention.Limited || !a.Until.IsZero() {
		return
	}
	if !s.canResume(ss) {
		s.logf("session %s: reached its usage limit; its agent %s cannot resume a conversation with a prompt, so it waits for a person", quote(ss.name), quote(ss.entry.Agent))
		return
	}
	now := s.clock.Now()
	a.Try++
	a.Until = s.slots.Take(s.cfg.Limits.Policy.At(now, a.Try, ev.Until, s.draw), now).UTC()
	named := "no reset named"
	if !ev.Until.IsZero() {
		named = "the agent named " + ev.Until.UTC().Format(time.RFC3339)
	}
	s.logf("session %s: %s (%s; the try at %s)", quote(ss.name), a, named, a.Until.Format(tryTime))
	s.scheduled(ss)
	s.armLimit(ss)
}

// scheduled keeps a change of ss's try: in its observation file and in
// the report to the auth service (whose inbox shows the try).
func (s *sup) scheduled(ss *session) {
	s.saveObs(ss)
	s.noteAttention(ss.name, ss.obs.Attention)
}

// canResume: ss's agent can be restarted in its conversation with a prompt.
func (s *sup) canResume(ss *session) bool {
	ag, ok := s.cfg.Agents[ss.entry.Agent]
	return ok && len(ag.ResumeArgs) > 0 && len(ag.PromptArgs) > 0
}

// armLimit sets the timer of ss's waiting try (a new one replaces it).
func (s *sup) armLimit(ss *session) {
	if ss.limitStop != nil {
		ss.limitStop()
	}
	m := limitMsg{name: ss.name, until: ss.obs.Attention.Until}
	ss.limitStop = s.clock.AfterFunc(max(m.until.Sub(s.clock.Now()), 0), func() {
		select {
		case s.limitCh <- m:
		case <-s.done:
		}
	})
}

// rearmLimit takes up the schedule of a session the supervisor finds
// limited in its observations (after a restart of the supervisor or of
// the machine): a try that is due goes at once, within the cap.
func (s *sup) rearmLimit(ss *session) {
	a := ss.obs.Attention
	if a == nil || a.State != attention.Limited || a.Until.IsZero() {
		return
	}
	now := s.clock.Now()
	at := a.Until
	if at.Before(now) {
		at = now
	}
	if t := s.slots.Take(at, now); !t.Equal(a.Until) {
		a.Until = t.UTC()
		s.scheduled(ss)
	}
	s.logf("session %s: %s, kept from before the supervisor started (the try at %s)", quote(ss.name), a, a.Until.Format(tryTime))
	s.armLimit(ss)
}

// unlimit drops the schedule of a session that is no longer limited.
func (s *sup) unlimit(ss *session, was attention.Status) {
	if ss.limitStop != nil {
		ss.limitStop()
		ss.limitStop = nil
	}
	if was.State == attention.Limited && !was.Until.IsZero() {
		s.slots.Release(was.Until)
	}
}

// limitDue resumes a limited session whose try has come: the resume
// prompt for its conversation, then a restart.
func (s *sup) limitDue(ctx context.Context, m limitMsg) {
	ss := s.sessions[m.name]
	if ss == nil {
		return
	}
	a := ss.obs.Attention
	if a == nil || a.State != attention.Limited || !a.Until.Equal(m.until) {
		return // it ended or moved meanwhile
	}
	ss.limitStop = nil
	prompt := s.cfg.Limits.Prompt
	if err := conversation.Update(ctx, s.cfg.Env.ConversationsDir(), ss.name, func(r *conversation.Record) error {
		r.Resume = prompt
		return nil
	}); err != nil {
		s.logf("session %s: cannot give the resume prompt: %s (restarting it without)", quote(ss.name), errText(err))
	}
	late := s.clock.Now().Sub(m.until).Round(time.Millisecond)
	a.Until = time.Time{}
	s.logf("session %s: resuming its conversation after the usage limit (try %d, %s after its time)", quote(ss.name), a.Try, late)
	s.scheduled(ss)
	s.restart(ctx, ss.name)
}
