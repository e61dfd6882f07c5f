package supervisor

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPolicyBacksOffOnlyForQuickDeaths(t *testing.T) {
	p := defaultPolicy()
	s := time.Second
	for _, tc := range []struct {
		name    string
		uptimes []time.Duration
		want    []time.Duration
	}{
		{"crash loop doubles from 1s after an immediate first restart, capped at 60s",
			[]time.Duration{0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			[]time.Duration{0, s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 60 * s, 60 * s, 60 * s}},
		{"deaths after 10s restart immediately and do not grow the backoff",
			[]time.Duration{11 * s, 30 * s, 59 * s, 0, 0},
			[]time.Duration{0, 0, 0, 0, s}},
		{"60s healthy resets the backoff",
			[]time.Duration{0, 0, 0, 60 * s, 0, 0},
			[]time.Duration{0, s, 2 * s, 0, 0, s}},
		{"a death between 10s and 60s keeps the count",
			[]time.Duration{0, 0, 20 * s, 0},
			[]time.Duration{0, s, 0, 2 * s}},
		{"just under the quick window counts as quick",
			[]time.Duration{9999 * time.Millisecond, 9999 * time.Millisecond},
			[]time.Duration{0, s}},
	} {
		quick := 0
		var got []time.Duration
		for _, up := range tc.uptimes {
			var d time.Duration
			d, quick = p.next(quick, up)
			got = append(got, d)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: delays (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestGateHonoursOneRequestPerGapAndFoldsTheRest(t *testing.T) {
	const gap = time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var g gate
	type step struct {
		at   time.Duration // since t0
		run  bool
		wait time.Duration
	}
	for i, st := range []step{
		{0, true, 0}, // first request: at once
		{100 * time.Millisecond, false, 900 * time.Millisecond}, // within the gap: one folded restart, due at t0+1s
		{200 * time.Millisecond, false, 0},                      // folded into it, nothing new to schedule
		{999 * time.Millisecond, false, 0},
	} {
		run, wait := g.ask(t0.Add(st.at), gap)
		if run != st.run || wait != st.wait {
			t.Errorf("request %d at +%s: run %v wait %s, want %v %s", i, st.at, run, wait, st.run, st.wait)
		}
	}
	if n := g.fire(t0.Add(gap)); n != 3 {
		t.Errorf("the folded restart stands for %d requests, want 3", n)
	}
	// the folded restart counts as the last one: the gap starts again
	if run, wait := g.ask(t0.Add(gap+500*time.Millisecond), gap); run || wait != 500*time.Millisecond {
		t.Errorf("request right after the folded restart: run %v wait %s, want a restart due in 500ms", run, wait)
	}
	g.fire(t0.Add(2 * gap))
	if run, _ := g.ask(t0.Add(5*gap), gap); !run {
		t.Errorf("a request long after the last restart waits")
	}
}

// An adopted session's start time, read back as wall time, becomes a
// reading of the monotonic clock, so the uptime of its next death follows
// no step of the wall clock; a start in the future (the clock stepped
// back) counts from now, never as a negative uptime.
func TestAnAdoptedStartIsMonotonicAndNeverInTheFuture(t *testing.T) {
	now := time.Now() // carries a monotonic reading
	last := now.Round(0).Add(-90 * time.Second)
	got := startedAt(last, now)
	if up := now.Sub(got); up != 90*time.Second {
		t.Errorf("uptime at adoption = %s, want 90s", up)
	}
	if got.Round(0) == got {
		t.Errorf("startedAt(%s) = %s has no monotonic reading", last, got)
	}
	later := now.Add(5 * time.Second)
	if up := later.Sub(got); up != 95*time.Second {
		t.Errorf("uptime 5s later = %s, want 95s", up)
	}
	if got := startedAt(now.Round(0).Add(24*time.Hour), now); now.Sub(got) != 0 {
		t.Errorf("a start 24h in the future gives uptime %s, want 0", now.Sub(got))
	}
	if !startedAt(time.Time{}, now).IsZero() {
		t.Errorf("no start time must stay none")
	}
}
