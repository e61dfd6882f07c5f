// Package loginlimit is the login limits of the auth service: a token bucket per client, a backoff per (login, client), and the queue of password hashes that keeps guesses from delaying a person's login.
package loginlimit

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Login limits (docs/web-contract.md, "Logins"). Every limit is per client
// (clientaddr: an address, an IPv6 /64, the agents, the rest of loopback) or per (login,
// client), never per login alone: no client can hold back a login for
// another. Unknown login names are limited exactly like known ones, so a
// refusal never tells them apart.
const (
	HashSlots    = 2                // hashes at once
	bucketSize   = 5                // attempts per client...
	bucketRefill = 12 * time.Second // ...and one more this often
	backoffFirst = time.Second      // after a (login, client)'s first failure
	backoffMax   = 5 * time.Minute
	// decay: a (login, client)'s failure count drops by one for each
	// quiet period this long, and a client whose last failure or refusal
	// is older is no longer a suspect.
	decay      = 10 * time.Minute
	maxClients = 1 << 16 // clients tracked; beyond, idle ones are forgotten
	maxPairs   = 1 << 16 // (login, client) pairs tracked; likewise
	overflow   = "overflow"
)

// Hashing queue (Queue): suspects (clients with a failure or refusal
// in the last decay, or with another attempt already being checked) hash
// only on capacity no one else wants (while no other attempt holds or waits
// for a slot), on all slots but one, and wait in a short queue; other
// clients may use every slot and are served newest first, so neither a
// flood of guesses nor a burst of first guesses from fresh addresses can
// push a later login behind it or share the CPU with it for longer than
// the one guess already running. A full queue or a wait past QueueWait is
// refused at once.
const (
	QueueClean   = 8
	QueueSuspect = 4
	// QueueWait and a hash (seconds in an emulated machine) stay well
	// under the 30 s in which the service must answer.
	QueueWait = 10 * time.Second
)

// Limiter holds the per-client token buckets and the per-(login, client)
// backoff. Both maps are bounded.
type Limiter struct {
	mu      sync.Mutex
	clients map[string]*clientState
	pairs   map[pairKey]*backoff
}

type clientState struct {
	tokens   float64
	at       time.Time // when tokens was counted
	lastBad  time.Time // the client's last failure or refusal
	inFlight int       // its admitted attempts not yet done
}

type pairKey struct{ login, client string }

type backoff struct {
	failures    int
	lastFailure time.Time
	until       time.Time
	inFlight    bool // an attempt of this pair is being checked
}

func NewLimiter() *Limiter {
	return &Limiter{clients: map[string]*clientState{}, pairs: map[pairKey]*backoff{}}
}

func (c *clientState) refill(now time.Time) {
	if el := now.Sub(c.at); el > 0 {
		c.tokens = min(bucketSize, c.tokens+float64(el)/float64(bucketRefill))
	}
	c.at = now
}

// suspect: a failure or refusal within decay, or an attempt already in
// flight (a person types one password at a time).
func (c *clientState) suspect(now time.Time) bool {
	return c.inFlight > 0 || !c.lastBad.IsZero() && now.Sub(c.lastBad) < decay
}

// decayed drops one failure per quiet decay since the last one.
func (b *backoff) decayed(now time.Time) {
	if b.failures == 0 {
		return
	}
	n := int(now.Sub(b.lastFailure) / decay)
	if n <= 0 {
		return
	}
	if n >= b.failures {
		b.failures = 0
		return
	}
	b.failures -= n
	b.lastFailure = b.lastFailure.Add(time.Duration(n) * decay)
}

// Admission is the Limiter's answer to one attempt.
type Admission struct {
	OK      bool
	Wait    time.Duration // the Retry-After of a refusal
	Suspect bool          // the client had a failure or refusal within decay
}

// Admit decides whether an attempt of login from client may be checked
// now. An admitted attempt must be followed by Done or Cancel; a refused
// one counts against the client (it is a suspect for decay).
func (l *Limiter) Admit(client, login string, now time.Time) Admission {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.clientLocked(client, now)
	c.refill(now)
	b, full := l.pairLocked(pairKey{login, client}, now)
	var wait time.Duration
	switch {
	case full:
		wait = time.Second
	case b.inFlight:
		wait = time.Second
	case now.Before(b.until):
		wait = b.until.Sub(now)
	case c.tokens < 1:
		wait = time.Duration((1 - c.tokens) * float64(bucketRefill))
	default:
		suspect := c.suspect(now)
		c.tokens--
		c.inFlight++
		b.inFlight = true
		return Admission{OK: true, Suspect: suspect}
	}
	c.lastBad = now
	return Admission{Wait: max(wait, time.Nanosecond)}
}

// Done ends an admitted attempt: a success forgets the pair's backoff and
// the client's suspicion; a failure doubles the pair's backoff (1 s, 2 s,
// 4 s ... 5 min; fewer after quiet periods) and makes the client a suspect.
func (l *Limiter) Done(client, login string, success bool, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := pairKey{login, client}
	b := l.pairs[k]
	c := l.clientOfLocked(client)
	if c != nil && c.inFlight > 0 {
		c.inFlight--
	}
	if success {
		delete(l.pairs, k)
		if c != nil {
			c.lastBad = time.Time{}
		}
		return
	}
	if c != nil {
		c.lastBad = now
	}
	if b == nil {
		return
	}
	b.inFlight = false
	b.decayed(now)
	b.failures++
	b.lastFailure = now
	d := backoffMax
	if b.failures <= 20 {
		d = min(backoffMax, backoffFirst<<(b.failures-1))
	}
	b.until = now.Add(d)
}

// Cancel ends an admitted attempt that was never checked (the client went
// away, or the hashing queue refused it: then refused is true and the
// client counts as a suspect).
func (l *Limiter) Cancel(client, login string, refused bool, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.pairs[pairKey{login, client}]; b != nil {
		b.inFlight = false
	}
	if c := l.clientOfLocked(client); c != nil {
		if c.inFlight > 0 {
			c.inFlight--
		}
		if refused {
			c.lastBad = now
		}
	}
}

// clientLocked is client's state, created full; when maxClients are
// tracked, the idle ones (a full bucket, no suspicion) are forgotten, and
// if none is, every new client shares one overflow bucket.
func (l *Limiter) clientLocked(client string, now time.Time) *clientState {
	if c := l.clients[client]; c != nil {
		return c
	}
	if len(l.clients) >= maxClients {
		for k, c := range l.clients {
			c.refill(now)
			if c.tokens >= bucketSize && !c.suspect(now) && c.inFlight == 0 {
				delete(l.clients, k)
			}
		}
	}
	if len(l.clients) >= maxClients {
		client = overflow
		if c := l.clients[client]; c != nil {
			return c
		}
	}
	c := &clientState{tokens: bucketSize, at: now}
	l.clients[client] = c
	return c
}

// clientOfLocked is the state admit counted client's attempt in: its own,
// or the overflow bucket's.
func (l *Limiter) clientOfLocked(client string) *clientState {
	if c := l.clients[client]; c != nil {
		return c
	}
	return l.clients[overflow]
}

// pairLocked is k's backoff, created empty; when maxPairs are tracked,
// the ones whose backoff has passed are forgotten, and if none has, full
// is true (the attempt is refused: that many clients are in backoff).
func (l *Limiter) pairLocked(k pairKey, now time.Time) (b *backoff, full bool) {
	if b := l.pairs[k]; b != nil {
		return b, false
	}
	if len(l.pairs) >= maxPairs {
		for pk, b := range l.pairs {
			if !b.inFlight && !now.Before(b.until) {
				delete(l.pairs, pk)
			}
		}
	}
	if len(l.pairs) >= maxPairs {
		return &backoff{}, true
	}
	b = &backoff{}
	l.pairs[k] = b
	return b, false
}

// ErrBusy is an attempt the hashing queue refused: it is full, or the
// wait passed QueueWait.
var ErrBusy = errors.New("too many logins are being checked")

// Queue bounds the hashes running at once (slots) and the attempts
// waiting for one.
type Queue struct {
	mu       sync.Mutex
	idle     *sync.Cond // signalled when no other attempt hashes (cleans == 0)
	free     int        // slots free
	suspects int        // slots held by suspects
	clean    []*waiter
	suspect  []*waiter
	cleans   int // slots held by others

	slots, maxClean, maxSuspect int
	wait                        time.Duration
}

type waiter struct {
	ch      chan error // nil: a slot was handed over; ErrBusy: evicted
	suspect bool
}

// NewQueue is the auth service's queue: HashSlots at once, QueueClean and
// QueueSuspect waiting, for at most QueueWait.
func NewQueue() *Queue { return NewQueueSized(HashSlots, QueueClean, QueueSuspect, QueueWait) }

// NewQueueSized is a queue of slots hashes at once, clean and suspect
// attempts waiting for at most wait (tests size their own).
func NewQueueSized(slots, clean, suspect int, wait time.Duration) *Queue {
	return &Queue{free: slots, slots: slots, maxClean: clean, maxSuspect: suspect, wait: wait}
}

// Yield is the pause of a suspect's hash: it waits while another
// attempt's hash runs, so a login from a client without recent failures
// never shares the CPU with a guess for longer than one pause interval.
func (q *Queue) Yield() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.idle == nil {
		q.idle = sync.NewCond(&q.mu)
	}
	for q.cleans > 0 {
		q.idle.Wait()
	}
}

// Acquire takes a slot for one hash: at once if one is free (for a
// suspect, if another slot stays free of suspects), else after waiting in
// the queue. It returns ErrBusy when the queue is full (a newer clean
// attempt evicts the oldest clean waiter) or the wait passes, or ctx's
// error when the client goes away.
func (q *Queue) Acquire(ctx context.Context, suspect bool) error {
	q.mu.Lock()
	if q.free > 0 && (!suspect || q.suspectMay()) {
		q.take(suspect)
		q.mu.Unlock()
		return nil
	}
	w := &waiter{ch: make(chan error, 1), suspect: suspect}
	if suspect {
		if len(q.suspect) >= q.maxSuspect {
			q.mu.Unlock()
			return ErrBusy
		}
		q.suspect = append(q.suspect, w)
	} else {
		if q.maxClean == 0 {
			q.mu.Unlock()
			return ErrBusy
		}
		if len(q.clean) >= q.maxClean {
			oldest := q.clean[0]
			q.clean = q.clean[1:]
			oldest.ch <- ErrBusy
		}
		q.clean = append(q.clean, w)
	}
	q.mu.Unlock()

	t := time.NewTimer(q.wait)
	defer t.Stop()
	var err error
	select {
	case err = <-w.ch:
		return err
	case <-t.C:
		err = ErrBusy
	case <-ctx.Done():
		err = ctx.Err()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.remove(w) {
		return err
	}
	// Handed a slot (or evicted) just as it gave up: a slot is used
	// unless the client is gone.
	if got := <-w.ch; got != nil {
		return got
	}
	if ctx.Err() != nil {
		q.releaseLocked(suspect)
		return ctx.Err()
	}
	return nil
}

// suspectSlots is how many slots suspects may hold at once: all but one,
// so a client without recent failures always finds one soon.
func (q *Queue) suspectSlots() int { return max(1, q.slots-1) }

func (q *Queue) take(suspect bool) {
	q.free--
	if suspect {
		q.suspects++
	} else {
		q.cleans++
	}
}

// suspectMay: a suspect may take a free slot when it leaves one slot
// without suspects and no one else holds or waits for a slot.
func (q *Queue) suspectMay() bool {
	return q.suspects < q.suspectSlots() && q.cleans == 0 && len(q.clean) == 0
}

// remove takes w out of its queue; false when it was no longer there.
func (q *Queue) remove(w *waiter) bool {
	list := &q.clean
	if w.suspect {
		list = &q.suspect
	}
	for i, x := range *list {
		if x == w {
			*list = append((*list)[:i], (*list)[i+1:]...)
			return true
		}
	}
	return false
}

// Release frees a slot taken by Acquire.
func (q *Queue) Release(suspect bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.releaseLocked(suspect)
}

// releaseLocked hands the slot to the newest clean waiter, else to the
// oldest suspect if suspects may take it, else frees it.
func (q *Queue) releaseLocked(suspect bool) {
	q.free++
	if suspect {
		q.suspects--
	} else {
		q.cleans--
		if q.cleans == 0 && q.idle != nil {
			q.idle.Broadcast()
		}
	}
	if n := len(q.clean); n > 0 {
		w := q.clean[n-1]
		q.clean = q.clean[:n-1]
		q.take(false)
		w.ch <- nil
		return
	}
	if len(q.suspect) > 0 && q.suspectMay() {
		w := q.suspect[0]
		q.suspect = q.suspect[1:]
		q.take(true)
		w.ch <- nil
	}
}
