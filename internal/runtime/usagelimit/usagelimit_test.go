package usagelimit

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

var policy = Policy{FirstWait: 30 * time.Minute, Growth: 2, MaxWait: 2 * time.Hour, Jitter: 30 * time.Second, MaxReset: 169 * time.Hour, PerMinute: 4}

func none(time.Duration) time.Duration { return 0 }

func TestTheWaitGrowsEachTryUpToTheLongest(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, policy.Wait(n))
	}
	want := []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour, 2 * time.Hour, 2 * time.Hour, 2 * time.Hour}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	flat := policy
	flat.Growth = 1
	if w := flat.Wait(9); w != 30*time.Minute {
		t.Errorf("growth 1: try 9 waits %s, want the first wait", w)
	}
	steep := policy
	steep.Growth, steep.MaxWait = 1_000_000_000_000, 2562047*time.Hour // the option's ceiling: no overflow
	if w := steep.Wait(3); w != steep.MaxWait {
		t.Errorf("a growth whose product overflows: try 3 waits %s, want the longest wait", w)
	}
}

func TestAResetTheAgentNamesWinsWhenItIsAheadAndBelievable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reset time.Time
		want  time.Time
	}{
		{"no reset: the schedule", time.Time{}, t0.Add(30 * time.Minute)},
		{"a reset ahead", t0.Add(3*time.Hour + 5*time.Minute), t0.Add(3*time.Hour + 5*time.Minute)},
		{"a reset in the past: the schedule", t0.Add(-time.Minute), t0.Add(30 * time.Minute)},
		{"a reset now: the schedule", t0, t0.Add(30 * time.Minute)},
		{"a weekly reset", t0.Add(6 * 24 * time.Hour), t0.Add(6 * 24 * time.Hour)},
		{"a reset past MaxReset: the schedule", t0.Add(170 * time.Hour), t0.Add(30 * time.Minute)},
	} {
		if got := policy.At(t0, 1, tc.reset, none); !got.Equal(tc.want) {
			t.Errorf("%s: At = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestJitterIsDrawnWithinItsBoundEveryTry(t *testing.T) {
	var asked []time.Duration
	draw := func(max time.Duration) time.Duration { asked = append(asked, max); return max / 3 }
	if got := policy.At(t0, 2, time.Time{}, draw); !got.Equal(t0.Add(time.Hour + 10*time.Second)) {
		t.Errorf("At = %s, want the wait plus the drawn 10 s", got)
	}
	if got := policy.At(t0, 1, t0.Add(time.Hour), draw); !got.Equal(t0.Add(time.Hour + 10*time.Second)) {
		t.Errorf("At = %s, want the reset plus the drawn 10 s", got)
	}
	if diff := cmp.Diff([]time.Duration{30 * time.Second, 30 * time.Second}, asked); diff != "" {
		t.Errorf("draws (-want +got):\n%s", diff)
	}
	still := policy
	still.Jitter = 0
	if got := still.At(t0, 1, time.Time{}, func(time.Duration) time.Duration { t.Error("drew with no jitter"); return 0 }); !got.Equal(t0.Add(30 * time.Minute)) {
		t.Errorf("no jitter: At = %s", got)
	}
}

// TestNoMinuteHoldsMoreResumesThanTheCap: twenty sessions limited at one
// moment, booked in random order with random jitter, never put more than
// PerMinute resumes in any minute, and each starts as early as the gap
// allows.
func TestNoMinuteHoldsMoreResumesThanTheCap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 50; round++ {
		s := NewSlots(4)
		var got []time.Time
		for i := 0; i < 20; i++ {
			at := t0.Add(time.Duration(r.Int64N(int64(30 * time.Second))))
			got = append(got, s.Take(at, t0))
			if got[i].Before(at) {
				t.Fatalf("a slot %s before its time %s", got[i], at)
			}
		}
		for _, a := range got {
			n := 0
			for _, b := range got {
				if !b.Before(a) && b.Before(a.Add(time.Minute)) {
					n++
				}
			}
			if n > 4 {
				t.Fatalf("round %d: %d resumes in the minute from %s: %v", round, n, a, got)
			}
		}
	}
}

func TestSlotsKeepTheGapAndFillHoles(t *testing.T) {
	s := NewSlots(4) // 15 s apart
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	steps := []struct{ ask, want int }{
		{0, 0},
		{0, 15},  // right after the first
		{60, 60}, // free
		{20, 30}, // after 15
		{40, 45}, // 30 is 5 s before: after it; 60 is 15 s after: fits
		{44, 75}, // no room before 60: after it
		{100, 100},
	}
	for _, st := range steps {
		if got := s.Take(at(st.ask), t0); !got.Equal(at(st.want)) {
			t.Errorf("Take(%d s) = %s, want %d s", st.ask, got.Sub(t0), st.want)
		}
	}
	s.Release(at(45))
	if got := s.Take(at(44), t0); !got.Equal(at(45)) {
		t.Errorf("after a release, Take(44 s) = %s, want the freed 45 s", got.Sub(t0))
	}
	if got := s.Take(at(0), at(200)); !got.Equal(at(0)) || len(s.taken) != 1 {
		t.Errorf("slots before now are dropped: Take = %s, %d taken", got.Sub(t0), len(s.taken))
	}
}

func TestCheckRefusesASchedulesThatCannotWork(t *testing.T) {
	for _, p := range []Policy{
		{FirstWait: 0, Growth: 2, MaxWait: time.Hour, MaxReset: time.Hour, PerMinute: 1},
		{FirstWait: time.Hour, Growth: 0, MaxWait: time.Hour, MaxReset: time.Hour, PerMinute: 1},
		{FirstWait: time.Hour, Growth: 2, MaxWait: time.Minute, MaxReset: time.Hour, PerMinute: 1},
		{FirstWait: time.Hour, Growth: 2, MaxWait: time.Hour, MaxReset: time.Hour, PerMinute: 0},
		{FirstWait: time.Hour, Growth: 2, MaxWait: time.Hour, Jitter: -1, MaxReset: time.Hour, PerMinute: 1},
	} {
		if p.Check() == nil {
			t.Errorf("Check(%+v) = nil, want an error", p)
		}
	}
	if err := policy.Check(); err != nil {
		t.Errorf("Check(the defaults) = %v", err)
	}
}
