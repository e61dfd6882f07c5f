package control

import (
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/google/go-cmp/cmp"
)

// TestParseReadsWhatFormatWrites: every request survives a round trip, the
// longest one fits a datagram, and nothing else is a request.
func TestParseReadsWhatFormatWrites(t *testing.T) {
	long := strings.Repeat("n", 64)
	longest := ""
	for _, r := range contract.Attention.Reasons {
		if len(r.Name) > len(longest) {
			longest = r.Name
		}
	}
	for _, r := range []Request{Restart(""), Restart("main"), Restart(long),
		Attend("main", attention.Working, ""), Attend(long, attention.NeedsYou, longest), Attend("a", attention.Finished, "turn"),
		Attend("a", attention.Limited, "limit"), AttendLimit("a", "limit", time.Time{}),
		AttendLimit("a", "limit", time.Date(2026, 12, 5, 15, 0, 0, 0, time.UTC)), AttendLimit(long, longest, time.Unix(maxUnix, 0))} {
		b := r.Format()
		if len(b) > MaxDatagram {
			t.Errorf("%q: %d bytes, more than MaxDatagram", b, len(b))
		}
		got, ok := Parse(b)
		if !ok || !cmp.Equal(got, r) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", b, got, ok, r)
		}
	}
	for _, junk := range []string{"", "restart", "restart a b", "restart " + long + "n", "restart a/b", "restart-all x", "RESTART main", "stop main",
		"attention", "attention main", "attention main sleeping", "attention main exited exit", "attention main crash-looping",
		"attention main working bell", "attention main needs-you nap", "attention a/b finished", "attention main finished turn x",
		"attention main limited limit x", "attention main limited limit -5", "attention main limited limit 0", "attention main limited limit 253402300800",
		"attention main needs-you error 1764946800", "attention main limited nap 1764946800", "attention main limited limit 1 2"} {
		if r, ok := Parse([]byte(junk)); ok {
			t.Errorf("Parse(%q) = %+v: want no request", junk, r)
		}
	}
}
