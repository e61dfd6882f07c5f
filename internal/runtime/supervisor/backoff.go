package supervisor

import "time"

// policy is the restart policy. A death within QuickWindow of the launch is
// "quick"; consecutive quick deaths back off: the first restart is
// immediate, then Base, 2*Base, 4*Base, ... capped at Max. A session that
// stayed up for HealthyAfter resets the count. Deaths after QuickWindow
// restart immediately without growing the count. Requested restarts
// (`session restart`) of one session, and of all sessions, are at least
// RequestGap apart (see gate).
type policy struct {
	QuickWindow  time.Duration
	HealthyAfter time.Duration
	Base         time.Duration
	Max          time.Duration
	RequestGap   time.Duration
}

// defaultPolicy is the contract's policy: 10 s, 60 s, 1 s doubling, 60 s
// cap; requested restarts at least 1 s apart.
func defaultPolicy() policy {
	return policy{QuickWindow: 10 * time.Second, HealthyAfter: 60 * time.Second, Base: time.Second, Max: 60 * time.Second,
		RequestGap: time.Second}
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

// gate spaces out the requested restarts of one target (a session, or all
// sessions): a request is honoured at once if the last honoured one was at
// least gap ago; requests within the gap are folded into a single restart
// due gap after the last one, so a flood of requests costs at most one
// restart per gap and the last request is still followed by a restart.
type gate struct {
	last    time.Time // when the last honoured request ran (zero: never)
	pending bool      // a folded restart is scheduled
	folded  int       // requests folded into it
}

// ask records a request at now. run: restart now. wait > 0: the caller
// schedules the folded restart after wait and then calls fire.
func (g *gate) ask(now time.Time, gap time.Duration) (run bool, wait time.Duration) {
	switch {
	case g.pending:
		g.folded++
		return false, 0
	case g.last.IsZero() || now.Sub(g.last) >= gap:
		g.last = now
		return true, 0
	}
	g.pending, g.folded = true, 1
	return false, g.last.Add(gap).Sub(now)
}

// fire runs the folded restart at now and returns how many requests it
// stands for.
func (g *gate) fire(now time.Time) (folded int) {
	folded = g.folded
	g.last, g.pending, g.folded = now, false, 0
	return folded
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
