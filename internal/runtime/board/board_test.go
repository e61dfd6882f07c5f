package board

import (
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/contract"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// TestAReportReplacesTheUsersStatesAndSaysWhatIsNew: the first report
// says nothing is fresh (the service cannot tell what it said before it
// started); a later one names the entries new in an inbox state, keeps
// the time of those unchanged, and wakes the streams only on a change.
func TestAReportReplacesTheUsersStatesAndSaysWhatIsNew(t *testing.T) {
	w := NewWakeup()
	b := New(w)
	wake := w.Wait()
	bell := attention.Entry{Session: "main", State: attention.NeedsYou, Reason: "bell"}
	work := attention.Entry{Session: "cx", State: attention.Working}
	first, fresh := b.Set("alice", []attention.Entry{work}, t0)
	if !first || len(fresh) != 0 {
		t.Fatalf("first report: first %v, fresh %v", first, fresh)
	}
	select {
	case <-wake:
	default:
		t.Fatal("a first report did not wake the streams")
	}
	wake = w.Wait()
	first, fresh = b.Set("alice", []attention.Entry{work, bell}, t0.Add(time.Minute))
	if first || len(fresh) != 1 || fresh[0].Entry != bell || !fresh[0].Since.Equal(t0.Add(time.Minute)) {
		t.Fatalf("second report: first %v, fresh %+v; want the bell, since now", first, fresh)
	}
	<-wake
	wake = w.Wait()
	if _, fresh = b.Set("alice", []attention.Entry{work, bell}, t0.Add(2*time.Minute)); len(fresh) != 0 {
		t.Errorf("the same report again: fresh %+v", fresh)
	}
	select {
	case <-wake:
		t.Error("an unchanged report woke the streams")
	default:
	}
	l := b.Listing("alice", t0.Add(2*time.Minute))
	if len(l) != 2 || !l[0].Since.Equal(t0) || !l[1].Since.Equal(t0.Add(time.Minute)) {
		t.Errorf("listing: %+v; want each entry since it was first seen", l)
	}
	if b.Listing("alice", t0.Add(2*time.Minute).Add(StaleAfter)) != nil {
		t.Error("a report older than StaleAfter is still listed")
	}
	if b.Listing("bob", t0) != nil || b.States("bob") != nil {
		t.Error("a user without a report has states")
	}
}

// TestALimitedSessionsNextTryIsAChangeButNothingNew: a limited session
// that waits for its next try keeps its entry's time and is not fresh
// again (one notification when it is parked, not one per try), while the
// new try wakes the streams (the inbox shows it).
func TestALimitedSessionsNextTryIsAChangeButNothingNew(t *testing.T) {
	w := NewWakeup()
	b := New(w)
	b.Set("alice", nil, t0)
	try1 := attention.Entry{Session: "main", State: attention.Limited, Reason: "limit", Until: t0.Add(30 * time.Minute), Try: 1}
	if _, fresh := b.Set("alice", []attention.Entry{try1}, t0.Add(time.Minute)); len(fresh) != 1 {
		t.Fatalf("a session newly limited: fresh %+v, want it", fresh)
	}
	for i, e := range []attention.Entry{
		{Session: "main", State: attention.Limited, Reason: "limit", Try: 1},                               // resumed
		{Session: "main", State: attention.Limited, Reason: "limit", Until: t0.Add(2 * time.Hour), Try: 2}, // limited again
	} {
		wake, at := w.Wait(), t0.Add(time.Duration(i+2)*time.Minute)
		if _, fresh := b.Set("alice", []attention.Entry{e}, at); len(fresh) != 0 {
			t.Errorf("try %+v: fresh %+v, want none", e, fresh)
		}
		select {
		case <-wake:
		default:
			t.Errorf("try %+v did not wake the streams", e)
		}
		if l := b.Listing("alice", at); len(l) != 1 || l[0].Entry != e || !l[0].Since.Equal(t0.Add(time.Minute)) {
			t.Errorf("listing %+v; want %+v since it was first limited", l, e)
		}
	}
}

// TestReportsAreRateLimitedPerUser: Burst at once, then PerSecond.
func TestReportsAreRateLimitedPerUser(t *testing.T) {
	lim := contract.Attention.Report
	b := New(NewWakeup())
	for i := range lim.Burst {
		if !b.Take("alice", t0) {
			t.Fatalf("report %d of the burst refused", i+1)
		}
	}
	if b.Take("alice", t0) {
		t.Fatal("a report beyond the burst taken")
	}
	if !b.Take("bob", t0) {
		t.Fatal("alice's reports took bob's")
	}
	if !b.Take("alice", t0.Add(time.Second/time.Duration(lim.PerSecond))) {
		t.Error("no token back after 1/PerSecond")
	}
}

// TestAStreamBeyondTheMostEndsTheOldest: Open evicts a login's oldest
// stream beyond max; Close forgets one.
func TestAStreamBeyondTheMostEndsTheOldest(t *testing.T) {
	ss := NewStreams()
	a := ss.Open("ops", 2)
	b := ss.Open("ops", 2)
	ss.Open("other", 2)
	c := ss.Open("ops", 2)
	select {
	case <-a.Evicted:
	default:
		t.Fatal("the oldest stream was not evicted")
	}
	select {
	case <-b.Evicted:
		t.Fatal("a newer stream was evicted")
	default:
	}
	if ss.Count("ops") != 2 {
		t.Errorf("count %d, want 2", ss.Count("ops"))
	}
	ss.Close("ops", b)
	ss.Close("ops", c)
	ss.Close("ops", a) // already gone: nothing
	if ss.Count("ops") != 0 || ss.Count("other") != 1 {
		t.Errorf("counts ops %d other %d", ss.Count("ops"), ss.Count("other"))
	}
}
