package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// One-time codes hand a box session over to a user's or an app's origin:
// bound to the box session, the origin and the browser that completes the
// hand-over (a binding secret in that origin's own cookie, checked at the
// hand-over; the box origin keeps only its hash: an app's origin sets it
// before the login, a user's origin when the code arrives, and the box
// binds that pending code only for the box session that asked for it),
// valid 60 s, used at most once. They live in memory only.
const (
	codeLifetime   = 60 * time.Second
	maxCodes       = 4096 // pending codes in all
	maxCodesPerBox = 16   // pending codes of one box session; a new one replaces the oldest
)

type code struct {
	box     string // box session id
	origin  string // the origin's key (origin.key)
	bind    string // bindHash of the binding cookie's value
	expires time.Time
	seq     uint64 // issue order
}

type codes struct {
	mu  sync.Mutex
	m   map[string]code
	seq uint64
}

func newCodes() *codes { return &codes{m: map[string]code{}} }

// bindHash is the text a code keeps of its binding secret: base64url of
// its sha256 (what an app's origin sends the box origin).
func bindHash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// validBindHash reports whether h has bindHash's form.
func validBindHash(h string) bool {
	if len(h) != secretLen {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(h)
	return err == nil && len(b) == sha256.Size
}

// issue returns a fresh code for (box, origin key) bound to the secret
// whose bindHash is bind, or "" when too many are pending.
func (c *codes) issue(box, origin, bind string, now time.Time) string {
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
	c.m[k] = code{box: box, origin: origin, bind: bind, expires: now.Add(codeLifetime), seq: c.seq}
	return k
}

// pending reports whether k is a live code for origin still waiting for
// its binding.
func (c *codes) pending(k, origin string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, found := c.m[k]
	return found && now.Before(v.expires) && v.origin == origin && v.bind == ""
}

// bindTo binds pending code k to the binding secret whose hash is h, if
// box asked for it; it returns the code's origin key. A code of another
// box session is left as it is.
func (c *codes) bindTo(k, box, h string, now time.Time) (origin string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, found := c.m[k]
	if !found || !now.Before(v.expires) || v.box != box || v.bind != "" {
		return "", false
	}
	v.bind = h
	c.m[k] = v
	return v.origin, true
}

// take consumes k: whatever happens next, it cannot be used again. ok is
// false for an unknown, used or expired code, for one of another origin,
// and for one whose binding secret is none of binds (the cookies the
// browser sent): such a code is consumed too, since it was seen where it
// does not belong.
func (c *codes) take(k, origin string, binds []string, now time.Time) (box string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, found := c.m[k]
	if !found {
		return "", false
	}
	delete(c.m, k)
	if !now.Before(v.expires) || v.origin != origin {
		return "", false
	}
	for _, b := range binds {
		if subtle.ConstantTimeCompare([]byte(bindHash(b)), []byte(v.bind)) == 1 {
			return v.box, true
		}
	}
	return "", false
}
