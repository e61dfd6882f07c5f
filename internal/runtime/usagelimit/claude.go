package usagelimit

import (
	"bytes"
	"encoding/json"
	"time"
)

// ClaudeTail is how much of the end of Claude Code's transcript
// ClaudeReset reads: the refusal is its newest assistant record, a few KiB
// with the informational record after it.
const ClaudeTail = 256 << 10

// ClaudeReset reads, from the end of Claude Code's transcript (JSON lines;
// tail may start inside a line), when the account's usage limit resets:
// the newest assistant record's apiErrorParams.rate_limit_info.resetsAt
// (unix seconds) when its apiError is usage_limit_reached. Measured with
// 2.1.328: Claude writes that record for the account's own limit (a
// subscription's 5-hour, weekly or model window); the other refusals that
// share StopFailure's error rate_limit (a 429 on an API key, a server's
// throttle) carry no reset, and then ok is false (the schedule's wait).
func ClaudeReset(tail []byte) (reset time.Time, ok bool) {
	lines := bytes.Split(tail, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		var r struct {
			Type           string `json:"type"`
			APIError       string `json:"apiError"`
			APIErrorParams struct {
				RateLimitInfo struct {
					ResetsAt int64 `json:"resetsAt"`
				} `json:"rate_limit_info"`
			} `json:"apiErrorParams"`
		}
		if json.Unmarshal(lines[i], &r) != nil || r.Type != "assistant" {
			continue
		}
		at := r.APIErrorParams.RateLimitInfo.ResetsAt
		if r.APIError != "usage_limit_reached" || at <= 0 || time.Unix(at, 0).UTC().Year() > 9999 {
			return time.Time{}, false // the newest answer: no limit with a reset
		}
		return time.Unix(at, 0).UTC(), true
	}
	return time.Time{}, false
}
