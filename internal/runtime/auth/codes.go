package auth

import (
	"sync"
	"time"
)

// One-time codes hand a box session over to a user origin: bound to the
// box session and the user, valid 60 s, used at most once. They live in
// memory only.
const (
	codeLifetime   = 60 * time.Second
	maxCodes       = 4096 // pending codes in all
	maxCodesPerBox = 16   // pending codes of one box session; a new one replaces the oldest
)

type code struct {
	box     string // box session id
	user    string
	expires time.Time
	seq     uint64 // issue order
}

type codes struct {
	mu  sync.Mutex
	m   map[string]code
	seq uint64
}

func newCodes() *codes { return &codes{m: map[string]code{}} }

// issue returns a fresh code for (box, user), or "" when too many are
// pending.
func (c *codes) issue(box, user string, now time.Time) string {
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
		return ""
	}
	k := randomText(32)
	c.seq++
	c.m[k] = code{box: box, user: user, expires: now.Add(codeLifetime), seq: c.seq}
	return k
}

// take consumes k: whatever happens next, it cannot be used again. ok is
// false for an unknown, used or expired code, and for one of another user
// (which is consumed too: it was seen where it does not belong).
func (c *codes) take(k, user string, now time.Time) (box string, ok bool) {
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
	return v.box, true
}
