package pwhash

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var hashRE = regexp.MustCompile(`^\$pbkdf2-sha256\$i=600000\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)

// TestHashRoundTrip uses the real 600k-iteration PBKDF2.
func TestHashRoundTrip(t *testing.T) {
	h := NewHash("correct horse")
	s := h.String()
	if !hashRE.MatchString(s) {
		t.Fatalf("format: %q", s)
	}
	p, err := ParseHash(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.String() != s {
		t.Errorf("parse(format) = %q, want %q", p.String(), s)
	}
	if !p.Verify("correct horse") {
		t.Error("the password does not verify")
	}
	if p.Verify("correct horse ") || p.Verify("") {
		t.Error("another password verifies")
	}
	if NewHash("correct horse").String() == s {
		t.Error("two hashes of one password are equal: the salt is not random")
	}
}

// TestDeriveIsPBKDF2HMACSHA256 pins the function with RFC 7914's vector,
// the pausable way (the rounds a suspect's hash takes) included.
func TestDeriveIsPBKDF2HMACSHA256(t *testing.T) {
	for _, pause := range []func(){nil, func() {}} {
		got := hex.EncodeToString(Derive("passwd", []byte("salt"), 1, pause))
		if want := "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"; got != want {
			t.Errorf("derive = %s, want %s", got, want)
		}
	}
	// RFC 7914 section 11, c = 80000 (the pauses fall inside it)
	got := hex.EncodeToString(Derive("Password", []byte("NaCl"), 80000, func() {}))
	if want := "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56"; got != want {
		t.Errorf("80000 rounds, pausable: %s, want %s", got, want)
	}
}

// TestThePausableHashIsTheLibrarysHash: crypto/pbkdf2 and the hand-written
// rounds agree, and the rounds pause every PauseEvery iterations.
func TestThePausableHashIsTheLibrarysHash(t *testing.T) {
	for _, iter := range []int{1, 2, PauseEvery - 1, PauseEvery, PauseEvery + 1, 3*PauseEvery + 17} {
		salt := make([]byte, SaltLen)
		rand.Read(salt)
		pauses := 0
		a := Derive("pw-"+strconv.Itoa(iter), salt, iter, nil)
		b := Derive("pw-"+strconv.Itoa(iter), salt, iter, func() { pauses++ })
		if !bytes.Equal(a, b) {
			t.Errorf("%d iterations: library %x, rounds %x", iter, a, b)
		}
		if want := iter / PauseEvery; pauses != want {
			t.Errorf("%d iterations: %d pauses, want %d", iter, pauses, want)
		}
	}
}

func TestParseHashRefuses(t *testing.T) {
	good := NewHash("pw").String()
	parts := strings.Split(good, "$") // "", pbkdf2-sha256, i=600000, salt, key
	salt, key := parts[3], parts[4]
	for _, tc := range []struct{ name, s, want string }{
		{"the floor minus one", "$pbkdf2-sha256$i=599999$" + salt + "$" + key, "fewer than 600000"},
		{"a few iterations", "$pbkdf2-sha256$i=1000$" + salt + "$" + key, "fewer than 600000"},
		{"above the cap", "$pbkdf2-sha256$i=10000001$" + salt + "$" + key, "more than 10000000"},
		{"a leading zero", "$pbkdf2-sha256$i=0600000$" + salt + "$" + key, "not a positive decimal"},
		{"a sign", "$pbkdf2-sha256$i=+600000$" + salt + "$" + key, "not a positive decimal"},
		{"no iterations", "$pbkdf2-sha256$i=$" + salt + "$" + key, "not a positive decimal"},
		{"another algorithm", "$pbkdf2-sha512$i=600000$" + salt + "$" + key, "not a hash"},
		{"argon2", "$argon2id$v=19$m=65536,t=3,p=4$" + salt + "$" + key, "not a hash"},
		{"padded salt", "$pbkdf2-sha256$i=600000$" + salt + "==$" + key, "salt"},
		{"short salt", "$pbkdf2-sha256$i=600000$" + salt[:20] + "$" + key, "salt"},
		{"url alphabet", "$pbkdf2-sha256$i=600000$" + strings.Repeat("_", 22) + "$" + key, "salt"},
		{"short key", "$pbkdf2-sha256$i=600000$" + salt + "$" + key[:40], "key"},
		{"an extra field", good + "$x", "want"},
		{"a missing field", "$pbkdf2-sha256$i=600000$" + salt, "want"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseHash(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseHash(%q) = %v, want an error naming %q", tc.s, err, tc.want)
			}
		})
	}
	if _, err := ParseHash("$pbkdf2-sha256$i=600000$" + salt + "$" + key); err != nil {
		t.Errorf("the good hash: %v", err)
	}
}
