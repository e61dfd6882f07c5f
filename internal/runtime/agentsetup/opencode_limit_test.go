package agentsetup

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// TestOpenCodesLongRetryIsTheResetAndAShortOneNoLimit: the plugin's report
// of OpenCode's retry names its next try as the reset when that is at
// least the contract's agentRetry away (OpenCode waits out the API's
// retry-after); a sooner one is OpenCode's own backoff, no limit; its
// session.error 429 names none; a retry without a time says so.
func TestOpenCodesLongRetryIsTheResetAndAShortOneNoLimit(t *testing.T) {
	r, ok := For("opencode").(LimitReporter)
	if !ok {
		t.Fatal("the opencode setup reads no limit reset")
	}
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	at := contract.Duration(contract.UsageLimits.AgentRetry)
	retry := func(d time.Duration) string {
		return `{"status":"retry","next":` + strconv.FormatInt(now.Add(d).UnixMilli(), 10) + `}`
	}
	for _, c := range []struct {
		name, input string
		want        time.Time
		err         error
		says        string
	}{
		{name: "an hour's retry-after", input: retry(time.Hour + 250*time.Millisecond), want: now.Add(time.Hour + 250*time.Millisecond)},
		{name: "exactly agentRetry", input: retry(at), want: now.Add(at)},
		{name: "just under agentRetry", input: retry(at - time.Millisecond), err: ErrNotALimit},
		{name: "a backoff of 2 s", input: retry(2 * time.Second), err: ErrNotALimit},
		{name: "its retries spent (session.error 429)", input: `{"httpStatus":"429"}`},
		{name: "a retry without a time", input: `{"status":"retry"}`, says: "names no time"},
		{name: "a retry beyond year 9999", input: `{"status":"retry","next":253402300800000}`, says: "names no time"},
		{name: "not JSON", input: `retry`, says: "not a JSON object"},
	} {
		got, err := r.LimitReset([]byte(c.input), now)
		switch {
		case c.says != "":
			if err == nil || errors.Is(err, ErrNotALimit) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%s: %v, want an error saying %q", c.name, err, c.says)
			}
		case !errors.Is(err, c.err) || !got.Equal(c.want):
			t.Errorf("%s: %s, %v; want %s, %v", c.name, got, err, c.want, c.err)
		}
	}
}

// TestOnlyCodexTellsAFailedTurnInItsLogAlone: the supervisor reads the log
// of an agent whose failed turn reaches no hook (Codex 0.171.0, measured);
// Claude's StopFailure and OpenCode's session.error need no reading.
func TestOnlyCodexTellsAFailedTurnInItsLogAlone(t *testing.T) {
	for setup, want := range map[string]bool{"codex": true, "claude": false, "opencode": false} {
		if _, ok := For(setup).(TurnReader); ok != want {
			t.Errorf("%s reads its log: %v, want %v", setup, ok, want)
		}
	}
}
