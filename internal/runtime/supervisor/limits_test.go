package supervisor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/control"
	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/agent-box/agent-box/internal/runtime/journal"
	"github.com/agent-box/agent-box/internal/runtime/observe"
	"github.com/agent-box/agent-box/internal/runtime/registry"
)

// limitSup is testSup with a claude-like agent "c" (it resumes a
// conversation with a prompt), its log kept, and a registry listing
// sessions names of it.
func limitSup(t *testing.T, names ...string) (*sup, *fakeClock, *bytes.Buffer) {
	t.Helper()
	s, clock := testSup(t)
	var log bytes.Buffer
	s.log = journal.New(&log, "agent-box")
	s.cfg.Agents["c"] = agents.Agent{Command: "/bin/claude", ResumeArgs: []string{"--resume", "{id}"}, PromptArgs: []string{"--", "{prompt}"}, Setup: "claude"}
	os.MkdirAll(s.cfg.Env.ConfigDir, 0o700)
	os.MkdirAll(s.cfg.Env.ConversationsDir(), 0o700)
	if err := registry.Update(context.Background(), s.cfg.Env.Registry(), func(r *registry.Registry) error {
		for _, n := range names {
			if err := r.Add(registry.Session{Name: n, Agent: "c", Cwd: "/"}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return s, clock, &log
}

func (s *sup) say(t *testing.T, r control.Request) {
	t.Helper()
	b := r.Format()
	s.handleMessage(context.Background(), datagram{data: b, size: len(b)})
}

// fire runs the clock's timer i and handles the tries it makes due.
func (s *sup) fire(clock *fakeClock, i int) {
	clock.fns[i]()
	for {
		select {
		case m := <-s.limitCh:
			s.limitDue(context.Background(), m)
		case name := <-s.turnCh:
			s.turnDue(name)
		default:
			return
		}
	}
}

func status(t *testing.T, s *sup, name string) attention.Status {
	t.Helper()
	obs, err := observe.Load(s.cfg.Env.ObservationsDir(), name)
	if err != nil || obs.Attention == nil {
		t.Fatalf("observations of %s: %+v, %v", name, obs.Attention, err)
	}
	return *obs.Attention
}

func resumePrompt(t *testing.T, s *sup, name string) string {
	t.Helper()
	r, err := conversation.Load(s.cfg.Env.ConversationsDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	return r.Resume
}

// TestALimitedSessionWaitsResumesAndWaitsLongerEachTry drives one
// session through a usage limit with a fake clock: the first try after
// the first wait, the resume prompt given to its conversation, the
// resume's own work keeping it limited, a limit again waiting twice as
// long, a person's prompt ending the wait (and the stale timer then doing
// nothing), and a reset the agent named.
func TestALimitedSessionWaitsResumesAndWaitsLongerEachTry(t *testing.T) {
	s, clock, log := limitSup(t, "x")
	s.report, s.attn = &reporter{latest: make(chan []byte, 1)}, map[string]attention.Status{}
	// report is the newest report to the auth service.
	report := func() string {
		select {
		case r := <-s.report.latest:
			return string(r)
		default:
			return "(none)"
		}
	}
	e := registry.Session{Name: "x", Agent: "c", Cwd: "/"}
	t0 := clock.now
	s.started(s.get(e), "x", os.Getpid(), false)

	s.say(t, control.AttendLimit("x", "limit", time.Time{}))
	st := status(t, s, "x")
	if st.State != attention.Limited || st.Try != 1 || !st.Until.Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("after the limit: %+v, want limited, try 1, until the first wait (30m)", st)
	}
	if r, want := report(), fmt.Sprintf("x limited limit %d 1\n", t0.Add(30*time.Minute).Unix()); r != want {
		t.Errorf("the report to the auth service is %q, want %q (the try, for the inbox)", r, want)
	}
	first := len(clock.fns) - 1
	if clock.delays[first] != 30*time.Minute {
		t.Fatalf("the try's timer waits %s", clock.delays[first])
	}
	s.say(t, control.AttendLimit("x", "limit", time.Time{}))
	if again := status(t, s, "x"); again != st || len(clock.fns) != first+1 {
		t.Fatalf("a second report while it waits changed it: %+v (timers %d)", again, len(clock.fns))
	}

	clock.now = t0.Add(30 * time.Minute)
	s.fire(clock, first)
	if st := status(t, s, "x"); st.State != attention.Limited || !st.Until.IsZero() || st.Try != 1 {
		t.Fatalf("after the try: %+v, want limited and resumed (try 1)", st)
	}
	if p := resumePrompt(t, s, "x"); p != "continue" {
		t.Fatalf("the conversation's resume prompt is %q, want the contract's \"continue\"", p)
	}
	if r := report(); r != "x limited limit 0 1\n" {
		t.Errorf("the report after the try is %q, want the session resumed (try 1)", r)
	}
	if !strings.Contains(log.String(), `session "x": resuming its conversation after the usage limit (try 1, 0s after its time)`) {
		t.Errorf("log:\n%s", log)
	}

	s.say(t, control.Attend("x", attention.Working, ""))
	if st := status(t, s, "x"); st.State != attention.Limited {
		t.Fatalf("the resume prompt's work ended the limit: %+v", st)
	}
	s.say(t, control.AttendLimit("x", "limit", time.Time{}))
	st = status(t, s, "x")
	if st.Try != 2 || !st.Until.Equal(clock.now.Add(time.Hour)) {
		t.Fatalf("a limit again: %+v, want try 2 an hour later", st)
	}
	second := len(clock.fns) - 1

	// A person's prompt while it waits ends it; the timer then does nothing.
	conversation.Update(context.Background(), s.cfg.Env.ConversationsDir(), "x", func(r *conversation.Record) error { r.Resume = ""; return nil })
	s.say(t, control.Attend("x", attention.Working, ""))
	if st := status(t, s, "x"); st.State != attention.Working || st.Try != 0 {
		t.Fatalf("a person's prompt: %+v, want working", st)
	}
	clock.now = clock.now.Add(time.Hour)
	s.fire(clock, second)
	if p := resumePrompt(t, s, "x"); p != "" {
		t.Fatalf("a cancelled try gave the resume prompt %q", p)
	}

	// A reset the agent named is the next try (plus the jitter drawn).
	s.draw = func(max time.Duration) time.Duration { return max / 2 }
	reset := clock.now.Add(3*time.Hour + 5*time.Minute).Truncate(time.Second)
	s.say(t, control.AttendLimit("x", "limit", reset))
	if st := status(t, s, "x"); st.Try != 1 || !st.Until.Equal(reset.Add(15*time.Second)) {
		t.Fatalf("a named reset: %+v, want try 1 at the reset plus 15 s", st)
	}
}

// TestTheScheduleOutlivesTheSupervisor: a new supervisor (a restart of
// its unit or of the machine) finds the limit in the observations and
// arms the same try; one already due goes at once.
func TestTheScheduleOutlivesTheSupervisor(t *testing.T) {
	s, clock, _ := limitSup(t, "x")
	e := registry.Session{Name: "x", Agent: "c", Cwd: "/"}
	s.started(s.get(e), "x", os.Getpid(), false)
	s.say(t, control.AttendLimit("x", "limit", time.Time{}))
	until := status(t, s, "x").Until

	// the next supervisor, 10 minutes later, on the same home
	s2, clock2 := testSup(t)
	var log2 bytes.Buffer
	s2.log = journal.New(&log2, "agent-box")
	s2.cfg.Env, s2.cfg.Agents = s.cfg.Env, s.cfg.Agents
	clock2.now = clock.now.Add(10 * time.Minute)
	s2.get(e)
	if len(clock2.delays) != 1 || clock2.delays[0] != 20*time.Minute {
		t.Fatalf("the next supervisor armed %v, want one try in 20 minutes", clock2.delays)
	}
	if st := status(t, s2, "x"); !st.Until.Equal(until) || st.Try != 1 {
		t.Fatalf("the schedule moved: %+v", st)
	}
	if want := `session "x": ` + status(t, s2, "x").String() + `, kept from before the supervisor started (the try at 2026-01-01T00:30:00.000Z)`; !strings.Contains(log2.String(), want) {
		t.Errorf("the next supervisor's log does not say it kept the try:\n%s\nwant %s", log2.String(), want)
	}

	// one a day later: the try is due, and goes at once
	s3, clock3 := testSup(t)
	s3.cfg.Env, s3.cfg.Agents = s.cfg.Env, s.cfg.Agents
	clock3.now = clock.now.Add(24 * time.Hour)
	s3.get(e)
	if len(clock3.delays) != 1 || clock3.delays[0] != 0 {
		t.Fatalf("a due try: armed %v, want at once", clock3.delays)
	}
	s3.fire(clock3, 0)
	if p := resumePrompt(t, s3, "x"); p != "continue" {
		t.Errorf("the due try gave %q", p)
	}
}

// TestTenLimitedSessionsResumeWithinTheCap: ten sessions limited at the
// same moment get tries at least a minute / perMinute apart.
func TestTenLimitedSessionsResumeWithinTheCap(t *testing.T) {
	names := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"}
	s, clock, _ := limitSup(t, names...)
	for _, n := range names {
		s.started(s.get(registry.Session{Name: n, Agent: "c", Cwd: "/"}), n, os.Getpid(), false)
		s.say(t, control.AttendLimit(n, "limit", time.Time{}))
	}
	gap := time.Minute / 4 // contract usageLimits.perMinute
	for i, n := range names {
		want := clock.now.Add(30*time.Minute + time.Duration(i)*gap)
		if st := status(t, s, n); !st.Until.Equal(want) {
			t.Errorf("%s: until %s, want %s", n, st.Until, want)
		}
	}
}

// TestAnAgentThatCannotResumeWaitsForAPerson: without resume and prompt
// arguments, the limit is said and nothing is scheduled.
func TestAnAgentThatCannotResumeWaitsForAPerson(t *testing.T) {
	s, clock, log := limitSup(t)
	e := registry.Session{Name: "x", Agent: "a", Cwd: "/"}
	s.started(s.get(e), "x", os.Getpid(), false)
	n := len(clock.fns)
	s.say(t, control.AttendLimit("x", "limit", time.Time{}))
	if st := status(t, s, "x"); st.State != attention.Limited || st.Try != 0 || !st.Until.IsZero() || len(clock.fns) != n {
		t.Fatalf("%+v, %d timers: want limited with no schedule", st, len(clock.fns)-n)
	}
	if !strings.Contains(log.String(), "cannot resume a conversation with a prompt, so it waits for a person") {
		t.Errorf("log:\n%s", log)
	}
}

// TestLimitsFromEnvReadsTheSettingsTheUnitSets: unset is the contract's;
// each setting overrides its own; a bad value or a schedule that cannot
// work is an error naming the variable.
func TestLimitsFromEnvReadsTheSettingsTheUnitSets(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	got, err := LimitsFromEnv(env(nil))
	if err != nil || got != DefaultLimits() {
		t.Fatalf("unset: %+v, %v; want the contract's", got, err)
	}
	got, err = LimitsFromEnv(env(map[string]string{
		"AGENT_BOX_RESUME_PROMPT": "go on where you stopped", "AGENT_BOX_LIMIT_FIRST_WAIT": "5h",
		"AGENT_BOX_LIMIT_GROWTH": "1", "AGENT_BOX_LIMIT_MAX_WAIT": "5h", "AGENT_BOX_LIMIT_PER_MINUTE": "1",
	}))
	want := DefaultLimits()
	want.Prompt = "go on where you stopped"
	want.Policy.FirstWait, want.Policy.Growth, want.Policy.MaxWait, want.Policy.PerMinute = 5*time.Hour, 1, 5*time.Hour, 1
	if err != nil || got != want {
		t.Fatalf("set: %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []map[string]string{
		{"AGENT_BOX_LIMIT_FIRST_WAIT": "soon"},
		{"AGENT_BOX_LIMIT_GROWTH": "2.5"},
		{"AGENT_BOX_LIMIT_PER_MINUTE": "0"},
		{"AGENT_BOX_LIMIT_FIRST_WAIT": "3h"}, // longer than the longest wait, 2h
		{"AGENT_BOX_RESUME_PROMPT": "a\x00b"},
	} {
		if _, err := LimitsFromEnv(env(bad)); err == nil || !strings.Contains(err.Error(), "AGENT_BOX_") {
			t.Errorf("%v: %v, want an error naming the variable", bad, err)
		}
	}
}
