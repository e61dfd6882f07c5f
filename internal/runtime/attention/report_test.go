package attention

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/google/go-cmp/cmp"
)

// TestAReportRoundTripsSortedWithoutStatelessSessions: what EncodeReport
// writes, ParseReport reads back, sorted by name; a session without a
// state is not in it; no sessions is an empty report.
func TestAReportRoundTripsSortedWithoutStatelessSessions(t *testing.T) {
	until := time.Date(2026, 12, 5, 15, 4, 0, 0, time.UTC)
	e := func(n string, st State, r string) Entry { return Entry{Session: n, State: st, Reason: r} }
	es := []Entry{e("zed", Finished, "turn"), e("a-1", NeedsYou, "permission"), e("none", "", ""), e("main", Working, ""),
		{Session: "lim", State: Limited, Reason: "limit", Until: until, Try: 2}, {Session: "lim2", State: Limited, Reason: "limit", Try: 1},
		e("lim3", Limited, "limit")}
	data := EncodeReport(es)
	if want := "a-1 needs-you permission\nlim limited limit 1796483040 2\nlim2 limited limit 0 1\nlim3 limited limit\nmain working\nzed finished turn\n"; string(data) != want {
		t.Fatalf("EncodeReport = %q, want %q", data, want)
	}
	got, err := ParseReport(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{e("a-1", NeedsYou, "permission"), {Session: "lim", State: Limited, Reason: "limit", Until: until, Try: 2},
		{Session: "lim2", State: Limited, Reason: "limit", Try: 1}, e("lim3", Limited, "limit"), e("main", Working, ""), e("zed", Finished, "turn")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseReport (-want +got):\n%s", diff)
	}
	if got, err := ParseReport(EncodeReport(nil)); err != nil || len(got) != 0 {
		t.Errorf("the empty report: %v, %v", got, err)
	}
}

// TestParseReportRefusesAnythingButTheContractsNames: one case per way a
// report can be wrong; the error names the line.
func TestParseReportRefusesAnythingButTheContractsNames(t *testing.T) {
	lim := contract.Attention.Report
	var many strings.Builder
	for i := range lim.MaxSessions + 1 {
		fmt.Fprintf(&many, "s%d working\n", i)
	}
	for name, c := range map[string]struct{ data, err string }{
		"no final newline":        {"main working", "newline"},
		"one field":               {"main\n", "line 1"},
		"four fields":             {"main needs-you permission x\n", "line 1"},
		"a try of another state":  {"main needs-you permission 1796483040 1\n", "not a limited session's try"},
		"a try of zero":           {"main limited limit 1796483040 0\n", "not a limited session's try"},
		"a negative time":         {"main limited limit -1 1\n", "not a limited session's try"},
		"a time past 9999":        {"main limited limit 253402300800 1\n", "not a limited session's try"},
		"a time with a sign":      {"main limited limit +1796483040 1\n", "not a limited session's try"},
		"a try with zeros":        {"main limited limit 1796483040 01\n", "not a limited session's try"},
		"a try too high":          {fmt.Sprintf("main limited limit 1796483040 %d\n", lim.MaxTry+1), "not a limited session's try"},
		"six fields":              {"main limited limit 1796483040 1 x\n", "line 1"},
		"a name with a slash":     {"a/b working\n", "not a session name"},
		"a name too long":         {strings.Repeat("n", 65) + " working\n", "not a session name"},
		"an unknown state":        {"main sleeping\n", "not a state"},
		"a hook's text as reason": {"main needs-you Claude-needs-your-permission\n", "not a reason"},
		"a session twice":         {"main working\nmain finished turn\n", "line 2"},
		"an empty line":           {"main working\n\n", "line 2"},
		"an escape in a name":     {"ma\x1bin working\n", `ma\x1bin`},
		"too many sessions":       {many.String(), "more than"},
		"too many bytes":          {strings.Repeat("x", lim.MaxBytes+1), "bytes"},
	} {
		got, err := ParseReport([]byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: ParseReport = %v, %v; want an error with %q", name, got, err, c.err)
		}
	}
	full := strings.Repeat("x", 0)
	for i := range lim.MaxSessions {
		full += fmt.Sprintf("%s limited limit 253402300799 %d\n", fmt.Sprintf("%064d", i), lim.MaxTry)
	}
	if len(full) > lim.MaxBytes {
		t.Errorf("maxSessions sessions of the longest name take %d bytes, more than maxBytes %d", len(full), lim.MaxBytes)
	}
}
