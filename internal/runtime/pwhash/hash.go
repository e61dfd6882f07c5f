// Package pwhash is the web surface's password hashes: PBKDF2-HMAC-SHA256 in one string format, checked at a cost a login can pause, and a password read from a terminal without echo.
package pwhash

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Password hashes: $pbkdf2-sha256$i=<iterations>$<salt>$<key>, salt 16 and
// key 32 bytes in standard base64 without padding, PBKDF2-HMAC-SHA256.
const (
	MinIterations = 600_000    // fewer is refused when the service starts
	MaxIterations = 10_000_000 // more would make one login take over a second
	hashPrefix    = "$pbkdf2-sha256$i="
	SaltLen       = 16 // bytes of a hash's salt
	KeyLen        = 32 // bytes of a hash's key
)

var b64 = base64.RawStdEncoding.Strict()

// Hash is a parsed password hash.
type Hash struct {
	Iterations int
	Salt       []byte
	Key        []byte
}

// Derive is PBKDF2-HMAC-SHA256 with a 32-byte key: the one hash function
// of the web surface (the auth service counts its calls through its own
// field). It calls pause, when not nil, every PauseEvery iterations: a
// suspect's hash waits there while other logins hash (the auth service's
// hash queue), so it shares no CPU with them.
func Derive(password string, salt []byte, iter int, pause func()) []byte {
	if pause == nil {
		k, err := pbkdf2.Key(sha256.New, password, salt, iter, KeyLen)
		if err != nil {
			// only FIPS-only mode refuses, and never for these sizes
			panic(fmt.Sprintf("pbkdf2: %v", err))
		}
		return k
	}
	// RFC 8018's F for the one block a 32-byte key takes: U1 = PRF(salt ||
	// INT(1)), Ui = PRF(U(i-1)), T = U1 ^ ... ^ Uiter.
	prf := hmac.New(sha256.New, []byte(password))
	prf.Write(salt)
	prf.Write([]byte{0, 0, 0, 1})
	u := prf.Sum(nil)
	t := append([]byte(nil), u...)
	for n := 2; n <= iter; n++ {
		if n%PauseEvery == 0 {
			pause()
		}
		prf.Reset()
		prf.Write(u)
		u = prf.Sum(u[:0])
		subtle.XORBytes(t, t, u)
	}
	return t
}

// PauseEvery is how many iterations a pausable hash runs between pauses
// (about 1 ms here, 60 ms in an emulated machine).
const PauseEvery = 8192

// NewHash hashes password with a fresh random salt at MinIterations.
func NewHash(password string) Hash {
	salt := make([]byte, SaltLen)
	rand.Read(salt)
	return Hash{Iterations: MinIterations, Salt: salt, Key: Derive(password, salt, MinIterations, nil)}
}

// String formats h as $pbkdf2-sha256$i=<iterations>$<salt>$<key>.
func (h Hash) String() string {
	return hashPrefix + strconv.Itoa(h.Iterations) + "$" + b64.EncodeToString(h.Salt) + "$" + b64.EncodeToString(h.Key)
}

// ParseHash parses the format String writes and refuses fewer than
// MinIterations.
func ParseHash(s string) (Hash, error) {
	rest, ok := strings.CutPrefix(s, hashPrefix)
	if !ok {
		return Hash{}, errors.New(`not a hash of 'agent-box web hash-password' (want "$pbkdf2-sha256$i=<iterations>$<salt>$<key>")`)
	}
	parts := strings.Split(rest, "$")
	if len(parts) != 3 {
		return Hash{}, errors.New(`want "$pbkdf2-sha256$i=<iterations>$<salt>$<key>"`)
	}
	it := parts[0]
	n, err := strconv.Atoi(it)
	if err != nil || it == "" || it[0] < '1' || it[0] > '9' {
		return Hash{}, fmt.Errorf("iterations %q: not a positive decimal number", it)
	}
	if n < MinIterations {
		return Hash{}, fmt.Errorf("%d iterations, fewer than %d: hash the password again with 'agent-box web hash-password'", n, MinIterations)
	}
	if n > MaxIterations {
		return Hash{}, fmt.Errorf("%d iterations, more than %d", n, MaxIterations)
	}
	salt, err := b64.DecodeString(parts[1])
	if err != nil || len(salt) != SaltLen {
		return Hash{}, fmt.Errorf("the salt is not %d bytes of base64 without padding", SaltLen)
	}
	key, err := b64.DecodeString(parts[2])
	if err != nil || len(key) != KeyLen {
		return Hash{}, fmt.Errorf("the key is not %d bytes of base64 without padding", KeyLen)
	}
	return Hash{Iterations: n, Salt: salt, Key: key}, nil
}

// Verify reports whether password matches h (one PBKDF2 run).
func (h Hash) Verify(password string) bool { return h.Check(Derive, password, nil) }

// Check reports whether d derives h's key from password, in constant time;
// pause as Derive's.
func (h Hash) Check(d DeriveFunc, password string, pause func()) bool {
	return subtle.ConstantTimeCompare(d(password, h.Salt, h.Iterations, pause), h.Key) == 1
}

// DeriveFunc is Derive's signature (tests give the auth service a cheaper
// one).
type DeriveFunc func(password string, salt []byte, iter int, pause func()) []byte

// Dummy is what an unknown login is checked against: the same cost as
// the most expensive configured hash, a key nothing derives to.
func Dummy(hashes map[string]Hash) Hash {
	iter := MinIterations
	for _, h := range hashes {
		iter = max(iter, h.Iterations)
	}
	salt, key := make([]byte, SaltLen), make([]byte, KeyLen)
	rand.Read(salt)
	rand.Read(key)
	return Hash{Iterations: iter, Salt: salt, Key: key}
}
