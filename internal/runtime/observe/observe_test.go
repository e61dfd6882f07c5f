package observe

import (
	"testing"
	"time"
)

func TestStartedCountsRestartsKeepsRecentStartsAndSavesAtomically(t *testing.T) {
	dir := t.TempDir()
	s, err := Load(dir, "x")
	if err != nil || s.Name != "x" || s.Launches != 0 {
		t.Fatalf("Load of a missing file = %+v, %v", s, err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	next := t0
	s.NextStart = &next
	for i := 0; i < maxRecent+5; i++ {
		s.Started(t0.Add(time.Duration(i)*time.Second), i > 0)
	}
	if s.Launches != maxRecent+5 || s.Restarts != maxRecent+4 || len(s.RecentStarts) != maxRecent || s.NextStart != nil {
		t.Errorf("after %d launches: %+v", maxRecent+5, s)
	}
	if !s.RecentStarts[0].Equal(t0.Add(5 * time.Second)) {
		t.Errorf("oldest kept start %v, want t0+5s", s.RecentStarts[0])
	}
	if err := Save(dir, s); err != nil {
		t.Fatal(err)
	}
	back, err := Load(dir, "x")
	if err != nil || back.Launches != s.Launches || !back.LastStart.Equal(s.LastStart) {
		t.Errorf("Load after Save = %+v, %v", back, err)
	}
}
