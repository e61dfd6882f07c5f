package control

import (
	"strings"
	"testing"

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
		Attend("main", attention.Working, ""), Attend(long, attention.NeedsYou, longest), Attend("a", attention.Finished, "turn")} {
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
		"attention main working bell", "attention main needs-you nap", "attention a/b finished", "attention main finished turn x"} {
		if r, ok := Parse([]byte(junk)); ok {
			t.Errorf("Parse(%q) = %+v: want no request", junk, r)
		}
	}
}
