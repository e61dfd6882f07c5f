package usagelimit

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"
)

// TestCodexLastTurnReadsHowTheTurnEndedFromTheRollout: the rollouts Codex
// 0.171.0 wrote for each refusal (testdata, measured): the account's
// usage limit with the x-codex reset headers (the 100 % window's
// resets_at is the reset), without them (no reset), a 429 its retries did
// not get past (a limit too), a 500 (failed, not a limit); each with its
// turn's id.
func TestCodexLastTurnReadsHowTheTurnEndedFromTheRollout(t *testing.T) {
	ar, err := txtar.ParseFile("testdata/codex-rollouts.txtar")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		turn  string
		end   TurnEnd
		reset time.Time
	}{
		"429-usage-hdr-json.jsonl":     {"01a2456d-33cb-7f62-962b-356817cf2f00", TurnLimited, time.Unix(1796468313, 0).UTC()},
		"429-usage-noreset-json.jsonl": {"01a2456d-423b-7a03-94e0-2210896e7a30", TurnLimited, time.Time{}},
		"429-rl-json.jsonl":            {"01a2456d-788b-7b10-a03e-99d05aea649c", TurnLimited, time.Time{}},
		"500-exec.jsonl":               {"01a2456b-caaa-7f70-80b3-dc3b80e2b54a", TurnFailed, time.Time{}},
	}
	if len(ar.Files) != len(want) {
		t.Fatalf("%d rollouts in testdata, %d expected", len(ar.Files), len(want))
	}
	for _, f := range ar.Files {
		w, ok := want[f.Name]
		if !ok {
			t.Fatalf("unexpected rollout %s", f.Name)
		}
		turn, end, reset := CodexLastTurn(f.Data, true)
		if turn != w.turn || end != w.end || !reset.Equal(w.reset) {
			t.Errorf("%s: %q, %v, %s; want %q, %v, %s", f.Name, turn, end, reset, w.turn, w.end, w.reset)
		}
	}
}

// TestCodexLastTurnIsTheNewestWholeTurn: a turn that ended well (crafted:
// the task_complete without an error), a turn still open, a line still
// being written (left out), the newest of two turns, a long turn whose
// start is out of the tail (its end counts), a tail cut inside a line
// (that line skipped), both windows full, lines that are not Codex's.
func TestCodexLastTurnIsTheNewestWholeTurn(t *testing.T) {
	started := func(id string) string {
		return `{"type":"event_msg","payload":{"type":"task_started","turn_id":"` + id + `"}}` + "\n"
	}
	done := `{"type":"event_msg","payload":{"type":"task_complete","turn_id":"a","last_agent_message":"done"}}` + "\n"
	limit := `{"type":"event_msg","payload":{"type":"task_complete","turn_id":"b","error":{"message":"x","codex_error_info":"usage_limit_exceeded"}}}` + "\n"
	other := strings.Replace(limit, `"usage_limit_exceeded"`, `{"response_too_many_failed_attempts":{"http_status_code":503}}`, 1)
	full := `{"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":100.0,"resets_at":1796468313},"secondary":{"used_percent":100.0,"resets_at":1797000000}}}}` + "\n"
	for _, c := range []struct {
		name, tail string
		fromStart  bool
		turn       string
		end        TurnEnd
		reset      time.Time
	}{
		{"a turn that ended well", started("a") + done, true, "a", TurnDone, time.Time{}},
		{"a turn still open", started("a"), true, "a", TurnOpen, time.Time{}},
		{"a line still being written", started("b") + strings.TrimSuffix(limit, "\n"), true, "b", TurnOpen, time.Time{}},
		{"the newest of two turns", started("a") + done + started("b") + limit, true, "b", TurnLimited, time.Time{}},
		{"a new turn after a limited one", started("b") + limit + started("c"), true, "c", TurnOpen, time.Time{}},
		{"a long turn's start out of the tail", `{"type":"response_item"}` + "\n" + full + limit, false, "b", TurnLimited, time.Unix(1797000000, 0).UTC()},
		{"a tail cut inside a line", limit[20:] + started("c"), false, "c", TurnOpen, time.Time{}},
		{"retries spent on a 503", started("b") + other, true, "b", TurnFailed, time.Time{}},
		{"not Codex's lines", "garbage\n{\"type\":\"response_item\"}\n" + limit, true, "b", TurnLimited, time.Time{}},
		{"a turn id too long", strings.Replace(limit, `"turn_id":"b"`, `"turn_id":"`+strings.Repeat("x", 129)+`"`, 1), true, "", TurnLimited, time.Time{}},
	} {
		turn, end, reset := CodexLastTurn([]byte(c.tail), c.fromStart)
		if turn != c.turn || end != c.end || !reset.Equal(c.reset) {
			t.Errorf("%s: %q, %v, %s; want %q, %v, %s", c.name, turn, end, reset, c.turn, c.end, c.reset)
		}
	}
}
