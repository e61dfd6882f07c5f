package auth

import (
	"crypto/subtle"
	"sync"
	"time"
)

// One-time codes hand a box session over to a user origin: bound to the
// box session, the user and the browser that asked for the code (a binding
// secret in a cookie the box origin sets with it, checked at the
// hand-over), valid 60 s, used at most once. They live in memory only.
const (
	codeLifetime   = 60 * time.Second
	maxCodes       = 4096 // pending codes in all
	maxCodesPerBox = 16   // pending codes of one box session; a new one replaces the oldest
)

type code struct {
	box     string // box session id
	user    string
	bind    string // the binding cookie's value
	expires time.Time
	seq     uint64 // issue order
}

type codes struct {
	mu  sync.Mutex
	m   map[string]code
	seq uint64
}

func newCodes() *codes { return &codes{m: map[string]code{}} }

// issue returns a fresh code for (box, user) and its binding secret, or
// "" when too many are pending.
func (c *codes) issue(box, user string, now time.Time) (k, bind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var mine []string
	for k, v := range c.m {
		switch {
		case !now.Before(v.expires):
			delete(c.m, k)
		case v.box == box:
			mine = append(mine, k)
		}
	}
	if len(mine) >= maxCodesPerBox {
		oldest := mine[0]
		for _, k := range mine[1:] {
			if c.m[k].seq < c.m[oldest].seq {
				oldest = k
			}
		}
		delete(c.m, oldest)
	}
	if len(c.m) >= maxCodes {
		return "", ""
	}
	k, bind = randomText(32), randomText(32)
	c.seq++
	c.m[k] = code{box: box, user: user, bind: bind, expires: now.Add(codeLifetime), seq: c.seq}
	return k, bind
}

// take consumes k: whatever happens next, it cannot be used again. ok is
// false for an unknown, used or expired code, for one of another user, and
// for one whose binding secret is none of binds (the cookies the browser
// sent): such a code is consumed too, since it was seen where it does not
// belong.
func (c *codes) take(k, user string, binds []string, now time.Time) (box string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, found := c.m[k]
	if !found {
		return "", false
	}
	delete(c.m, k)
	if !now.Before(v.expires) || v.user != user {
		return "", false
	}
	for _, b := range binds {
		if subtle.ConstantTimeCompare([]byte(b), []byte(v.bind)) == 1 {
			return v.box, true
		}
	}
	return "", false
}
