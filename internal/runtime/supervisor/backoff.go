package supervisor

import "time"

// policy is the restart policy. A death within QuickWindow of the launch is
// "quick"; consecutive quick deaths back off: the first restart is
// immediate, then Base, 2*Base, 4*Base, ... capped at Max. A session that
// stayed up for HealthyAfter resets the count. Deaths after QuickWindow
// restart immediately without growing the count.
type policy struct {
	QuickWindow  time.Duration
	HealthyAfter time.Duration
	Base         time.Duration
	Max          time.Duration
}

// defaultPolicy is the contract's policy: 10 s, 60 s, 1 s doubling, 60 s cap.
func defaultPolicy() policy {
	return policy{QuickWindow: 10 * time.Second, HealthyAfter: 60 * time.Second, Base: time.Second, Max: 60 * time.Second}
}

// next returns the delay before restarting a session that died after running
// for uptime, given quick consecutive quick deaths before this one, and the
// new count.
func (p policy) next(quick int, uptime time.Duration) (delay time.Duration, newQuick int) {
	if uptime >= p.HealthyAfter {
		quick = 0
	}
	if uptime >= p.QuickWindow {
		return 0, quick
	}
	quick++
	if quick == 1 {
		return 0, quick
	}
	delay = p.Base
	for i := 2; i < quick; i++ {
		delay *= 2
		if delay >= p.Max {
			return p.Max, quick
		}
	}
	if delay > p.Max {
		delay = p.Max
	}
	return delay, quick
}

// clock is the supervisor's view of time, replaced in tests.
type clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}
