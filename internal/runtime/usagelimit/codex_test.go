package usagelimit

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"
)

// TestCodexTurnReadsHowTheTurnEndedFromTheRollout: the rollouts Codex
// 0.171.0 wrote for each refusal (testdata, measured): the account's
// usage limit with the x-codex reset headers (the 100 % window's
// resets_at is the reset), without them (no reset), a 429 its retries did
// not get past (a limit too), a 500 (failed, not a limit).
func TestCodexTurnReadsHowTheTurnEndedFromTheRollout(t *testing.T) {
	ar, err := txtar.ParseFile("testdata/codex-rollouts.txtar")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		end   CodexEnd
		reset time.Time
	}{
		"429-usage-hdr-json.jsonl":     {CodexLimited, time.Unix(1796468313, 0).UTC()},
		"429-usage-noreset-json.jsonl": {CodexLimited, time.Time{}},
		"429-rl-json.jsonl":            {CodexLimited, time.Time{}},
		"500-exec.jsonl":               {CodexFailed, time.Time{}},
	}
	if len(ar.Files) != len(want) {
		t.Fatalf("%d rollouts in testdata, %d expected", len(ar.Files), len(want))
	}
	for _, f := range ar.Files {
		w, ok := want[f.Name]
		if !ok {
			t.Fatalf("unexpected rollout %s", f.Name)
		}
		end, reset, used := CodexTurn(f.Data)
		if end != w.end || !reset.Equal(w.reset) || used != len(f.Data) {
			t.Errorf("%s: %v, %s, %d bytes used; want %v, %s, %d", f.Name, end, reset, used, w.end, w.reset, len(f.Data))
		}
	}
}

// TestCodexTurnTakesTheFirstEndAndWholeLinesOnly: a turn that ended well
// (crafted: the task_complete without an error), a turn still open, a
// line still being written (left for the next read), the turn's end
// before the next turn's lines, and lines that are not Codex's.
func TestCodexTurnTakesTheFirstEndAndWholeLinesOnly(t *testing.T) {
	done := `{"type":"event_msg","payload":{"type":"task_complete","turn_id":"a","last_agent_message":"done"}}` + "\n"
	limit := `{"type":"event_msg","payload":{"type":"task_complete","turn_id":"b","error":{"message":"x","codex_error_info":"usage_limit_exceeded"}}}` + "\n"
	started := `{"type":"event_msg","payload":{"type":"task_started","turn_id":"a"}}` + "\n"
	other := strings.Replace(limit, `"usage_limit_exceeded"`, `{"response_too_many_failed_attempts":{"http_status_code":503}}`, 1)
	full := `{"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":100.0,"resets_at":1796468313},"secondary":{"used_percent":100.0,"resets_at":1797000000}}}}` + "\n"
	for _, c := range []struct {
		name, data string
		end        CodexEnd
		reset      time.Time
		used       int
	}{
		{"a turn that ended well", started + done, CodexDone, time.Time{}, len(started + done)},
		{"a turn still open", started, CodexOpen, time.Time{}, len(started)},
		{"a line still being written", started + strings.TrimSuffix(limit, "\n"), CodexOpen, time.Time{}, len(started)},
		{"the first end decides", done + limit, CodexDone, time.Time{}, len(done + limit)},
		{"both windows full: the later reset", full + limit, CodexLimited, time.Unix(1797000000, 0).UTC(), len(full + limit)},
		{"not Codex's lines", "garbage\n{\"type\":\"response_item\"}\n" + limit, CodexLimited, time.Time{}, len("garbage\n{\"type\":\"response_item\"}\n" + limit)},
		{"retries spent on a 503", other, CodexFailed, time.Time{}, len(other)},
	} {
		end, reset, used := CodexTurn([]byte(c.data))
		if end != c.end || !reset.Equal(c.reset) || used != c.used {
			t.Errorf("%s: %v, %s, %d; want %v, %s, %d", c.name, end, reset, used, c.end, c.reset, c.used)
		}
	}
}
