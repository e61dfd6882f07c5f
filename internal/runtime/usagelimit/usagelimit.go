// Package usagelimit decides when a session whose agent reached its account's usage limit tries again: at the reset the agent named, else after a wait that grows with each try, plus jitter, and never more resumes a minute than the cap.
//
// It is pure (no clock, no I/O: the caller passes the time and the
// random draw), so the supervisor's schedule can be proven with a fake
// clock (the defaults: docs/runtime-contract.md, "Limits").
package usagelimit

import (
	"fmt"
	"slices"
	"time"
)

// Policy is the schedule of tries.
type Policy struct {
	// FirstWait is the wait before the first try when the agent named
	// no reset; each try after waits Growth times longer, up to MaxWait.
	FirstWait time.Duration
	Growth    int
	MaxWait   time.Duration
	// Jitter: at most this much is added to every try, drawn anew.
	Jitter time.Duration
	// MaxReset: a reset the agent names further ahead than this is not
	// believed (the schedule's wait is used).
	MaxReset time.Duration
	// PerMinute caps the resumes of one supervisor in any minute.
	PerMinute int
}

// Check says what is wrong with p, if anything.
func (p Policy) Check() error {
	switch {
	case p.FirstWait <= 0:
		return fmt.Errorf("the first wait %s is not positive", p.FirstWait)
	case p.Growth < 1:
		return fmt.Errorf("the growth %d is less than 1", p.Growth)
	case p.MaxWait < p.FirstWait:
		return fmt.Errorf("the longest wait %s is shorter than the first, %s", p.MaxWait, p.FirstWait)
	case p.Jitter < 0 || p.MaxReset <= 0:
		return fmt.Errorf("the jitter %s or the longest reset %s is out of range", p.Jitter, p.MaxReset)
	case p.PerMinute < 1:
		return fmt.Errorf("the cap of %d resumes a minute is less than 1", p.PerMinute)
	}
	return nil
}

// Wait is the schedule's wait before try n (1 is the first): FirstWait,
// growing Growth times each try, at most MaxWait.
func (p Policy) Wait(n int) time.Duration {
	d := p.FirstWait
	for i := 1; i < n && d < p.MaxWait && p.Growth > 1; i++ {
		if d > p.MaxWait/time.Duration(p.Growth) {
			return p.MaxWait // the product would pass it (or overflow)
		}
		d *= time.Duration(p.Growth)
	}
	return min(d, p.MaxWait)
}

// At is when try n starts, reported at now: at reset (what the agent
// said; zero: nothing) when it lies after now and within MaxReset of it,
// else after the schedule's Wait(n); plus a jitter of draw(Jitter) (draw
// returns a duration in [0, its argument]).
func (p Policy) At(now time.Time, n int, reset time.Time, draw func(time.Duration) time.Duration) time.Time {
	at := now.Add(p.Wait(n))
	if reset.After(now) && reset.Sub(now) <= p.MaxReset {
		at = reset
	}
	if p.Jitter > 0 {
		at = at.Add(draw(p.Jitter))
	}
	return at
}

// Slots spaces one supervisor's resumes at least a minute / PerMinute
// apart, so that no minute holds more than PerMinute of them, whatever
// order they are asked for in.
type Slots struct {
	gap   time.Duration
	taken []time.Time // sorted
}

// NewSlots makes the slots of at most perMinute resumes a minute.
func NewSlots(perMinute int) *Slots {
	return &Slots{gap: time.Minute / time.Duration(max(perMinute, 1))}
}

// Take books the earliest time at or after at that keeps the gap to
// every slot taken, and returns it. Slots before now (done) are dropped.
func (s *Slots) Take(at, now time.Time) time.Time {
	s.taken = slices.DeleteFunc(s.taken, func(t time.Time) bool { return t.Add(s.gap).Before(now) })
	t := at
	for _, o := range s.taken {
		if o.Add(s.gap).Compare(t) <= 0 {
			continue // far enough before
		}
		if t.Add(s.gap).Compare(o) <= 0 {
			break // far enough before o, and so before every later one
		}
		t = o.Add(s.gap)
	}
	i, _ := slices.BinarySearchFunc(s.taken, t, time.Time.Compare)
	s.taken = slices.Insert(s.taken, i, t)
	return t
}

// Release frees the slot at t (a try cancelled before it came).
func (s *Slots) Release(t time.Time) {
	if i, ok := slices.BinarySearchFunc(s.taken, t, time.Time.Compare); ok {
		s.taken = slices.Delete(s.taken, i, i+1)
	}
}
