package usagelimit

import (
	"strings"
	"testing"
	"time"
)

// The records Claude Code 2.1.328 wrote for a subscription's 5-hour limit
// (a stand-in's 429 with its unified headers), cut to the fields read.
const (
	limitRecord = `{"parentUuid":"935e","type":"assistant","message":{"model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"You've hit your 5-hour limit · resets 10:39am (UTC)"}]},"apiError":"usage_limit_reached","apiErrorParams":{"rate_limit_info":{"status":"rejected","resetsAt":1796467187,"rateLimitType":"five_hour","isUsingOverage":false}},"quotaLimits":{"status":"rejected","resetsAt":1796467187},"error":"rate_limit","isApiErrorMessage":true,"apiErrorStatus":429,"apiErrorType":"rate_limit_error"}`
	notice      = `{"type":"system","subtype":"informational","content":"Usage limit reached · continuing automatically at 12:10pm · esc to cancel","level":"notice"}`
	apiKey429   = `{"type":"assistant","message":{"content":[{"type":"text","text":"API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later."}]},"error":"rate_limit","isApiErrorMessage":true,"apiErrorStatus":429,"apiErrorIsTransient":false}`
	userTurn    = `{"type":"user","message":{"role":"user","content":"hi"}}`
	tailRecords = `{"type":"last-prompt","lastPrompt":"hi"}` + "\n" + `{"type":"cost-state","totalCostUSD":0}`
)

func TestClaudeResetReadsTheNewestRefusalOfTheTranscript(t *testing.T) {
	at := time.Unix(1796467187, 0).UTC()
	for _, tc := range []struct {
		name string
		tail string
		want time.Time
	}{
		{"the account's limit, then Claude's notice and bookkeeping", userTurn + "\n" + limitRecord + "\n" + notice + "\n" + tailRecords + "\n", at},
		{"a tail that starts inside a line", limitRecord[40:] + "\n" + limitRecord + "\n", at},
		{"a 429 on an API key: no reset", limitRecord + "\n" + userTurn + "\n" + apiKey429 + "\n", time.Time{}},
		{"an answer after the limit: no limit now", limitRecord + "\n" + `{"type":"assistant","message":{"content":[]}}` + "\n", time.Time{}},
		{"a reset of 0", strings.Replace(limitRecord, "1796467187,", "0,", 1), time.Time{}},
		{"a reset past the year 9999", strings.Replace(limitRecord, "1796467187,", "253402300800,", 1), time.Time{}},
		{"nothing", "", time.Time{}},
		{"not JSON", "\x00\x01garbage\n{", time.Time{}},
	} {
		got, ok := ClaudeReset([]byte(tc.tail))
		if !got.Equal(tc.want) || ok != !tc.want.IsZero() {
			t.Errorf("%s: %s, %v; want %s", tc.name, got, ok, tc.want)
		}
	}
}
