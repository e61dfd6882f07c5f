package auth

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
	saltLen       = 16
	keyLen        = 32
)

var b64 = base64.RawStdEncoding.Strict()

// Hash is a parsed password hash.
type Hash struct {
	Iterations int
	Salt       []byte
	Key        []byte
}

// derive is PBKDF2-HMAC-SHA256 with a 32-byte key: the one hash function
// of this package (a Server counts its calls through its own field). It
// calls pause, when not nil, every pauseEvery iterations: a suspect's hash
// waits there while other logins hash (hashQueue.yield), so it shares no
// CPU with them.
func derive(password string, salt []byte, iter int, pause func()) []byte {
	if pause == nil {
		k, err := pbkdf2.Key(sha256.New, password, salt, iter, keyLen)
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
		if n%pauseEvery == 0 {
			pause()
		}
		prf.Reset()
		prf.Write(u)
		u = prf.Sum(u[:0])
		subtle.XORBytes(t, t, u)
	}
	return t
}

// pauseEvery is how many iterations a pausable hash runs between pauses
// (about 1 ms here, 60 ms in an emulated machine).
const pauseEvery = 8192

// NewHash hashes password with a fresh random salt at MinIterations.
func NewHash(password string) Hash {
	salt := make([]byte, saltLen)
	rand.Read(salt)
	return Hash{Iterations: MinIterations, Salt: salt, Key: derive(password, salt, MinIterations, nil)}
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
	if err != nil || len(salt) != saltLen {
		return Hash{}, fmt.Errorf("the salt is not %d bytes of base64 without padding", saltLen)
	}
	key, err := b64.DecodeString(parts[2])
	if err != nil || len(key) != keyLen {
		return Hash{}, fmt.Errorf("the key is not %d bytes of base64 without padding", keyLen)
	}
	return Hash{Iterations: n, Salt: salt, Key: key}, nil
}

// Verify reports whether password matches h (one PBKDF2 run).
func (h Hash) Verify(password string) bool { return h.check(derive, password, nil) }

func (h Hash) check(d deriveFunc, password string, pause func()) bool {
	return subtle.ConstantTimeCompare(d(password, h.Salt, h.Iterations, pause), h.Key) == 1
}

// deriveFunc is derive's signature (tests give a Server a cheaper one).
type deriveFunc func(password string, salt []byte, iter int, pause func()) []byte

// dummyHash is what an unknown login is checked against: the same cost as
// the most expensive configured hash, a key nothing derives to.
func dummyHash(hashes map[string]Hash) Hash {
	iter := MinIterations
	for _, h := range hashes {
		iter = max(iter, h.Iterations)
	}
	salt, key := make([]byte, saltLen), make([]byte, keyLen)
	rand.Read(salt)
	rand.Read(key)
	return Hash{Iterations: iter, Salt: salt, Key: key}
}
