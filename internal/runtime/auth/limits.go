package auth

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// Login limits (docs/web-contract.md, "Logins").
const (
	hashSlots     = 2                // hashes at once
	bucketSize    = 5                // attempts per client address...
	bucketRefill  = 12 * time.Second // ...and one more this often
	backoffFirst  = time.Second      // after a login's first failure
	backoffMax    = 5 * time.Minute
	maxBuckets    = 1 << 16 // addresses tracked; beyond, the full buckets are forgotten
	overflowKey   = "overflow"
	unknownClient = "-"
)

// limiter holds the per-address token buckets and the per-login backoff.
// Only configured logins get a backoff entry, so its size is bounded.
type limiter struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	logins  map[string]*backoff
}

type bucket struct {
	tokens float64
	at     time.Time
}

type backoff struct {
	failures int
	until    time.Time
	inFlight bool // an attempt of this login is being checked
}

func newLimiter() *limiter {
	return &limiter{buckets: map[string]*bucket{}, logins: map[string]*backoff{}}
}

// clientKey is the bucket of a client address: the address itself, its /64
// for IPv6 (one host usually holds a whole /64), or "-" when the address
// did not parse.
func clientKey(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil || addr == unknownClient {
		return unknownClient
	}
	if a.Is6() && !a.Is4In6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.Unmap().String()
}

func (b *bucket) refill(now time.Time) {
	if el := now.Sub(b.at); el > 0 {
		b.tokens = min(bucketSize, b.tokens+float64(el)/float64(bucketRefill))
	}
	b.at = now
}

// admit decides whether an attempt from key for login (known: a configured
// login) may be checked now. When it may not, wait is the Retry-After.
// An admitted attempt of a known login must be followed by done.
func (l *limiter) admit(key, login string, known bool, now time.Time) (wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.forgetFullLocked(now)
		}
		if len(l.buckets) >= maxBuckets {
			key = overflowKey
			b = l.buckets[key]
		}
		if b == nil {
			b = &bucket{tokens: bucketSize, at: now}
			l.buckets[key] = b
		}
	}
	b.refill(now)
	if b.tokens < 1 {
		return time.Duration((1 - b.tokens) * float64(bucketRefill)), false
	}
	if known {
		bo := l.logins[login]
		if bo == nil {
			bo = &backoff{}
			l.logins[login] = bo
		}
		if bo.inFlight {
			return time.Second, false
		}
		if now.Before(bo.until) {
			return bo.until.Sub(now), false
		}
		bo.inFlight = true
	}
	b.tokens--
	return 0, true
}

// done ends an admitted attempt of a known login: a success resets its
// backoff, a failure doubles it (1 s, 2 s, 4 s ... 5 min).
func (l *limiter) done(login string, success bool, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	bo := l.logins[login]
	if bo == nil {
		return
	}
	bo.inFlight = false
	if success {
		delete(l.logins, login)
		return
	}
	bo.failures++
	d := backoffMax
	if bo.failures <= 20 {
		d = min(backoffMax, backoffFirst<<(bo.failures-1))
	}
	bo.until = now.Add(d)
}

// cancel ends an admitted attempt that was never checked.
func (l *limiter) cancel(login string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if bo := l.logins[login]; bo != nil {
		bo.inFlight = false
	}
}

func (l *limiter) forgetFullLocked(now time.Time) {
	for k, b := range l.buckets {
		b.refill(now)
		if b.tokens >= bucketSize {
			delete(l.buckets, k)
		}
	}
}

// semaphore bounds the hashes running at once.
type semaphore chan struct{}

func (s semaphore) acquire(ctx context.Context) error {
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s semaphore) release() { <-s }
