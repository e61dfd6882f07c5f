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
