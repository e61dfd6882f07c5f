package attention

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
)

// Entry is one session's state in a report.
type Entry struct {
	Session string
	State   State
	Reason  string
}

// A report is what a supervisor tells the auth service: every session of
// its user that has a state, one line each, "NAME STATE" or "NAME STATE
// REASON", sorted by name; at most the contract's report.maxSessions lines
// and report.maxBytes bytes. Only the contract's names can be in it: a
// session name of the contract's pattern, a state and a reason of the
// contract. The auth service replaces the user's states with it.

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
		if len(f) < 2 || len(f) > 3 {
			return nil, bad(`want "NAME STATE" or "NAME STATE REASON"`)
		}
		e := Entry{Session: f[0], State: State(f[1])}
		if len(f) == 3 {
			e.Reason = f[2]
		}
		switch {
		case !contract.Names.Session.Match(e.Session):
			return nil, bad("not a session name")
		case !Known(e.State):
			return nil, bad("not a state")
		case len(f) == 3 && !KnownReason(e.Reason):
			return nil, bad("not a reason")
		case seen[e.Session]:
			return nil, bad("the session twice")
		}
		seen[e.Session] = true
		out = append(out, e)
	}
	return out, nil
}
