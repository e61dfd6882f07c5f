package usagelimit

import (
	"bytes"
	"encoding/json"
	"time"
)

// TurnEnd is how an agent's turn ended, as its own log says (for an agent
// whose failed turn no hook tells: Codex's rollout file).
type TurnEnd int

const (
	// TurnOpen: no end of a turn in what was read (it still works).
	TurnOpen TurnEnd = iota
	// TurnDone: the turn ended without an error (its Stop hook says so).
	TurnDone
	// TurnFailed: the turn ended with an error that is no usage limit.
	TurnFailed
	// TurnLimited: the turn was refused at the account's usage limit.
	TurnLimited
)

// CodexLastTurn reads the end of a Codex rollout file (JSON lines; tail
// is the whole file when fromStart, else its end, whose first line may be
// cut and is skipped; a last line still being written is left out) for its
// newest turn: the turn's id and how it ended. Measured with Codex 0.171.0,
// which reports a failed turn to no hook and no notify: a turn begins with
// an event_msg task_started and ends with a task_complete (both carry its
// turn_id) whose payload has an error when it failed, its codex_error_info
// "usage_limit_exceeded" at the account's usage limit (a 429
// usage_limit_reached) and {"response_too_many_failed_attempts":
// {"http_status_code":429}} for a 429 its retries did not get past. The
// reset, when the provider sent it (its x-codex-primary-reset-at and
// -secondary- headers), is in the turn's token_count events: the
// rate_limits window at 100 % used, its resets_at in Unix seconds. A long
// turn's start may be out of the tail: its end still counts.
func CodexLastTurn(tail []byte, fromStart bool) (turn string, end TurnEnd, reset time.Time) {
	if !fromStart {
		i := bytes.IndexByte(tail, '\n')
		if i < 0 {
			return "", TurnOpen, time.Time{}
		}
		tail = tail[i+1:]
	}
	for {
		i := bytes.IndexByte(tail, '\n')
		if i < 0 {
			return turn, end, reset
		}
		line := tail[:i]
		tail = tail[i+1:]
		var r struct {
			Type    string `json:"type"`
			Payload struct {
				Type       string `json:"type"`
				TurnID     string `json:"turn_id"`
				RateLimits *struct {
					Primary, Secondary *window
				} `json:"rate_limits"`
				Error *struct {
					Info json.RawMessage `json:"codex_error_info"`
				} `json:"error"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &r) != nil || r.Type != "event_msg" {
			continue
		}
		p := r.Payload
		id := p.TurnID
		if len(id) > maxTurnID {
			id = ""
		}
		switch {
		case p.Type == "task_started":
			turn, end, reset = id, TurnOpen, time.Time{}
		case p.Type == "token_count" && p.RateLimits != nil && end == TurnOpen:
			reset = time.Time{}
			for _, w := range []*window{p.RateLimits.Primary, p.RateLimits.Secondary} {
				if w != nil && w.UsedPercent >= 100 && w.ResetsAt > 0 && w.ResetsAt <= maxUnix {
					if t := time.Unix(w.ResetsAt, 0).UTC(); t.After(reset) {
						reset = t // the later window decides
					}
				}
			}
		case p.Type == "task_complete":
			if id != "" {
				turn = id
			}
			end = TurnDone
			if p.Error != nil {
				end = TurnFailed
				if codexLimit(p.Error.Info) {
					end = TurnLimited
				}
			}
		}
	}
}

// window is one of a token_count's rate-limit windows.
type window struct {
	UsedPercent float64 `json:"used_percent"`
	ResetsAt    int64   `json:"resets_at"`
}

// maxTurnID bounds a turn id kept (Codex's are UUIDs).
const maxTurnID = 128

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
