package attention

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
)

// Entry is one session's state in a report; a limited one's schedule too
// (Status.Until and Try: Try 0 for every other state).
type Entry struct {
	Session string
	State   State
	Reason  string
	Until   time.Time
	Try     int
}

// Plain is e without its schedule: what stays while a limited session
// waits from try to try.
func (e Entry) Plain() Entry { return Entry{Session: e.Session, State: e.State, Reason: e.Reason} }

// A report is what a supervisor tells the auth service: every session of
// its user that has a state, one line each, "NAME STATE" or "NAME STATE
// REASON", and a limited session with tries "NAME limited REASON UNTIL
// TRY" (UNTIL in Unix seconds, 0 once resumed; TRY at most report.maxTry), sorted by name; at most
// the contract's report.maxSessions lines and report.maxBytes bytes. Only
// the contract's names and numbers can be in it: a session name of the
// contract's pattern, a state and a reason of the contract. The auth
// service replaces the user's states with it.

// maxUnix is the end of year 9999 in Unix seconds.
const maxUnix = 253402300799

// EncodeReport is the report of es (sorted by session; entries without a
// state are left out).
func EncodeReport(es []Entry) []byte {
	sorted := append([]Entry(nil), es...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Session < sorted[j].Session })
	var b bytes.Buffer
	for _, e := range sorted {
		if e.State == "" {
			continue
		}
		b.WriteString(e.Session + " " + string(e.State))
		if e.Reason != "" {
			b.WriteString(" " + e.Reason)
			if e.State == Limited && e.Try > 0 {
				until := int64(0)
				if !e.Until.IsZero() {
					until = e.Until.Unix()
				}
				fmt.Fprintf(&b, " %d %d", until, e.Try)
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// ParseReport reads a report; anything that is not one (a line of another
// shape, a name, state or reason the contract does not have, a session
// twice, too many lines or bytes) is an error naming its line.
func ParseReport(data []byte) ([]Entry, error) {
	lim := contract.Attention.Report
	if len(data) > lim.MaxBytes {
		return nil, fmt.Errorf("the report has %d bytes, more than %d", len(data), lim.MaxBytes)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return nil, fmt.Errorf("the report does not end with a newline")
	}
	var out []Entry
	seen := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" && len(data) == 0 {
			break
		}
		if len(out) == lim.MaxSessions {
			return nil, fmt.Errorf("the report has more than %d sessions", lim.MaxSessions)
		}
		f := strings.Split(line, " ")
		bad := func(what string) error {
			return fmt.Errorf("line %d: %s: %s", i+1, escape.Quote(line, 80), what)
		}
		if len(f) < 2 || len(f) > 5 || len(f) == 4 {
			return nil, bad(`want "NAME STATE", "NAME STATE REASON" or "NAME limited REASON UNTIL TRY"`)
		}
		e := Entry{Session: f[0], State: State(f[1])}
		if len(f) >= 3 {
			e.Reason = f[2]
		}
		if len(f) == 5 {
			until, err1 := strconv.ParseInt(f[3], 10, 64)
			try, err2 := strconv.Atoi(f[4])
			if e.State != Limited || err1 != nil || err2 != nil || until < 0 || until > maxUnix || try < 1 || try > lim.MaxTry ||
				strconv.FormatInt(until, 10) != f[3] || strconv.Itoa(try) != f[4] {
				return nil, bad("not a limited session's try")
			}
			if until > 0 {
				e.Until = time.Unix(until, 0).UTC()
			}
			e.Try = try
		}
		switch {
		case !contract.Names.Session.Match(e.Session):
			return nil, bad("not a session name")
		case !Known(e.State):
			return nil, bad("not a state")
		case len(f) >= 3 && !KnownReason(e.Reason):
			return nil, bad("not a reason")
		case seen[e.Session]:
			return nil, bad("the session twice")
		}
		seen[e.Session] = true
		out = append(out, e)
	}
	return out, nil
}
