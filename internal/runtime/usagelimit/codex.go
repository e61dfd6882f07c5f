package usagelimit

import (
	"bytes"
	"encoding/json"
	"time"
)

// CodexEnd is how a Codex turn ended, as its rollout file says.
type CodexEnd int

const (
	// CodexOpen: no end of a turn in what was read (it still works).
	CodexOpen CodexEnd = iota
	// CodexDone: the turn ended without an error (its Stop hook says so).
	CodexDone
	// CodexFailed: the turn ended with an error that is no usage limit.
	CodexFailed
	// CodexLimited: the turn was refused at the account's usage limit.
	CodexLimited
)

// CodexTurn reads appended, the lines Codex appended to its rollout file
// since a turn began (JSON lines; a last line still being written is left
// for the next read: used is how many bytes were whole lines), for how the
// turn ended. Measured with Codex 0.171.0, which reports a failed turn to
// no hook and no notify: the turn's end is an event_msg task_complete
// whose payload has an error when it failed, its codex_error_info
// "usage_limit_exceeded" at the account's usage limit (a 429
// usage_limit_reached) and {"response_too_many_failed_attempts":
// {"http_status_code":429}} for a 429 its retries did not get past. The
// reset, when the provider sent it (its x-codex-primary-reset-at and
// -secondary- headers), is in the token_count event before: the
// rate_limits window at 100 % used, its resets_at in Unix seconds.
func CodexTurn(appended []byte) (end CodexEnd, reset time.Time, used int) {
	for {
		i := bytes.IndexByte(appended[used:], '\n')
		if i < 0 {
			return end, reset, used
		}
		line := appended[used : used+i]
		used += i + 1
		if end != CodexOpen {
			continue // the turn's end is the first; later lines are the next turn's
		}
		var r struct {
			Type    string `json:"type"`
			Payload struct {
				Type       string `json:"type"`
				RateLimits *struct {
					Primary, Secondary *struct {
						UsedPercent float64 `json:"used_percent"`
						ResetsAt    int64   `json:"resets_at"`
					}
				} `json:"rate_limits"`
				Error *struct {
					Info json.RawMessage `json:"codex_error_info"`
				} `json:"error"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &r) != nil || r.Type != "event_msg" {
			continue
		}
		switch p := r.Payload; {
		case p.Type == "token_count" && p.RateLimits != nil:
			reset = time.Time{}
			for _, w := range []*struct {
				UsedPercent float64 `json:"used_percent"`
				ResetsAt    int64   `json:"resets_at"`
			}{p.RateLimits.Primary, p.RateLimits.Secondary} {
				if w != nil && w.UsedPercent >= 100 && w.ResetsAt > 0 && w.ResetsAt <= maxUnix {
					if t := time.Unix(w.ResetsAt, 0).UTC(); t.After(reset) {
						reset = t // the later window decides
					}
				}
			}
		case p.Type == "task_complete" && p.Error == nil:
			end = CodexDone
		case p.Type == "task_complete":
			end = CodexFailed
			if codexLimit(p.Error.Info) {
				end = CodexLimited
			}
		}
	}
}

// CodexTurnID is the turn_id of the line line starts with (a task_started
// event's), or "".
func CodexTurnID(line []byte) string {
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	var r struct {
		Payload struct {
			TurnID string `json:"turn_id"`
		} `json:"payload"`
	}
	if json.Unmarshal(line, &r) != nil {
		return ""
	}
	return r.Payload.TurnID
}

// codexLimit: a task_complete error's codex_error_info is the usage limit.
func codexLimit(info json.RawMessage) bool {
	var name string
	if json.Unmarshal(info, &name) == nil {
		return name == "usage_limit_exceeded"
	}
	var attempts struct {
		Failed *struct {
			Status int `json:"http_status_code"`
		} `json:"response_too_many_failed_attempts"`
	}
	return json.Unmarshal(info, &attempts) == nil && attempts.Failed != nil && attempts.Failed.Status == 429
}

// maxUnix is the end of year 9999 in Unix seconds.
const maxUnix = 253402300799
