package auth

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// family is one logged-in browser: the box cookie of login ops and its
// children on alice's and bob's origins.
type family struct{ box, alice, bob string }

func (w *tw) family() family {
	box := w.login("ops")
	return family{box: box, alice: w.child(box, "alice"), bob: w.child(box, "bob")}
}

// TestVerify: /verify?user=alice, in the contract's order: the user and
// Host, the Origin, the cookie, then a redirect for a navigation or 401.
func TestVerify(t *testing.T) {
	navigate := map[string]string{"Sec-Fetch-Mode": "navigate", "X-Forwarded-Method": "GET", "X-Forwarded-Uri": "/term/?arg=s1"}
	for _, tc := range []struct {
		name     string
		host     string // default alice.box.test
		target   string // default /verify?user=alice
		cookies  func(family) []string
		header   map[string]string
		method   string
		want     int
		location string
	}{
		{name: "valid child cookie", cookies: func(f family) []string { return []string{f.alice} }, want: 204},
		{name: "no cookie, a fetch", want: 401},
		{name: "no cookie, a navigation", header: navigate, want: 302,
			location: "https://box.test/auth/login?next=%2Fterm%2F%3Farg%3Ds1&user=alice"},
		{name: "no cookie, a navigation to a non-local path", want: 302,
			header:   map[string]string{"Sec-Fetch-Mode": "navigate", "X-Forwarded-Method": "GET", "X-Forwarded-Uri": "//evil.example/x"},
			location: "https://box.test/auth/login?next=%2F&user=alice"},
		{name: "no cookie, a navigating POST", want: 401,
			header: map[string]string{"Sec-Fetch-Mode": "navigate", "X-Forwarded-Method": "POST"}},
		{name: "no cookie, a WebSocket", header: map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Origin": "https://alice.box.test"}, want: 401},
		{name: "forged cookie", cookies: func(family) []string { return []string{randomHex(16) + "." + randomText(32)} }, want: 401},
		{name: "right id, wrong secret", cookies: func(f family) []string { return []string{idOf(f.alice) + "." + randomText(32)} }, want: 401},
		{name: "malformed cookie", cookies: func(f family) []string { return []string{f.alice + "x", "", idOf(f.alice)} }, want: 401},
		{name: "bob's child on alice's origin", cookies: func(f family) []string { return []string{f.bob} }, want: 401},
		{name: "the box cookie on a user origin", cookies: func(f family) []string { return []string{f.box} }, want: 401},
		{name: "a bad cookie before the good one", cookies: func(f family) []string { return []string{f.bob, f.alice} }, want: 204},
		{name: "forged identity headers, no cookie", want: 401,
			header: map[string]string{userHeader: "alice", sessionHeader: randomHex(16)}},
		{name: "forged identity headers, a valid cookie", cookies: func(f family) []string { return []string{f.alice} }, want: 204,
			header: map[string]string{userHeader: "bob", sessionHeader: "forged"}},
		{name: "WebSocket from a foreign origin", cookies: func(f family) []string { return []string{f.alice} }, want: 403,
			header: map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Origin": "https://evil.example"}},
		{name: "WebSocket from bob's origin", cookies: func(f family) []string { return []string{f.alice} }, want: 403,
			header: map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Origin": "https://bob.box.test"}},
		{name: "WebSocket from the box origin", cookies: func(f family) []string { return []string{f.alice} }, want: 403,
			header: map[string]string{"Origin": "https://box.test"}},
		{name: "WebSocket from plain http", cookies: func(f family) []string { return []string{f.alice} }, want: 403,
			header: map[string]string{"Origin": "http://alice.box.test"}},
		{name: "Origin null", cookies: func(f family) []string { return []string{f.alice} }, want: 403,
			header: map[string]string{"Origin": "null"}},
		// a form POST from a no-referrer page of alice's origin, as Chrome sends it
		{name: "Origin null from a same-origin form", cookies: func(f family) []string { return []string{f.alice} }, want: 204,
			header: map[string]string{"Origin": "null", "Sec-Fetch-Site": "same-origin"}},
		{name: "Origin null from a same-site page (bob's origin)", cookies: func(f family) []string { return []string{f.alice} }, want: 403,
			header: map[string]string{"Origin": "null", "Sec-Fetch-Site": "same-site"}},
		{name: "Origin null from another site", cookies: func(f family) []string { return []string{f.alice} }, want: 403,
			header: map[string]string{"Origin": "null", "Sec-Fetch-Site": "cross-site"}},
		{name: "WebSocket from alice's origin", cookies: func(f family) []string { return []string{f.alice} }, want: 204,
			header: map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Origin": "https://alice.box.test"}},
		{name: "Host of another user", host: "bob.box.test", cookies: func(f family) []string { return []string{f.alice} }, want: 403},
		{name: "Host of the box", host: "box.test", cookies: func(f family) []string { return []string{f.alice} }, want: 403},
		{name: "Host with another port", host: "alice.box.test:8443", cookies: func(f family) []string { return []string{f.alice} }, want: 403},
		{name: "an unconfigured user", host: "carol.box.test", target: "/verify?user=carol", want: 403},
		{name: "no user", target: "/verify", cookies: func(f family) []string { return []string{f.alice} }, want: 403},
		{name: "two users", target: "/verify?user=alice&user=bob", cookies: func(f family) []string { return []string{f.alice} }, want: 403},
		{name: "another path", target: "/auth/login?user=alice", want: 404},
		{name: "a path below", target: "/verify/x?user=alice", want: 404},
		{name: "POST", method: "POST", cookies: func(f family) []string { return []string{f.alice} }, want: 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTW(t)
			f := w.family()
			r := rq{method: "GET", host: "alice.box.test", target: "/verify?user=alice", header: tc.header}
			if tc.host != "" {
				r.host = tc.host
			}
			if tc.target != "" {
				r.target = tc.target
			}
			if tc.method != "" {
				r.method = tc.method
			}
			if tc.cookies != nil {
				r.cookies = tc.cookies(f)
			}
			rec := w.verifyH(r)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d (%s)", rec.Code, tc.want, rec.Body)
			}
			if got := rec.Header().Get("Location"); got != tc.location {
				t.Errorf("Location %q, want %q", got, tc.location)
			}
			users, sessions := rec.Header().Values(userHeader), rec.Header().Values(sessionHeader)
			if tc.want == 204 {
				if len(users) != 1 || users[0] != "alice" || len(sessions) != 1 || sessions[0] != idOf(f.alice) {
					t.Errorf("identity headers %q %q, want alice and %s", users, sessions, idOf(f.alice))
				}
			} else if len(users)+len(sessions) != 0 {
				t.Errorf("a refusal carries identity headers %q %q", users, sessions)
			}
		})
	}
}

// TestLifetimes: absolute expiry and idle timeout (2 h and 1 h in the test
// configuration), and what keeps a session from going idle.
func TestLifetimes(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		w := newTW(t)
		f := w.family()
		w.clock.Advance(time.Hour - time.Second)
		if c := w.verifyCode("alice", f.alice); c != 204 {
			t.Fatalf("59:59 after the hand-over: %d", c)
		}
		w.clock.Advance(time.Hour) // 119:59, before the absolute expiry
		if c := w.verifyCode("alice", f.alice); c != 401 {
			t.Errorf("an hour after the last request: %d, want 401", c)
		}
	})
	t.Run("expired", func(t *testing.T) {
		w := newTW(t)
		f := w.family()
		for i := 0; i < 2; i++ {
			w.clock.Advance(50 * time.Minute)
			if c := w.verifyCode("alice", f.alice); c != 204 {
				t.Fatalf("at %d min: %d", 50*(i+1), c)
			}
		}
		w.clock.Advance(20*time.Minute - time.Second)
		if c := w.verifyCode("alice", f.alice); c != 204 {
			t.Fatalf("a second before the expiry: %d", c)
		}
		w.clock.Advance(time.Second)
		if c := w.verifyCode("alice", f.alice); c != 401 {
			t.Errorf("at the expiry, though active: %d, want 401", c)
		}
	})
	t.Run("a child's activity keeps its box session alive", func(t *testing.T) {
		w := newTW(t)
		f := w.family()
		w.clock.Advance(50 * time.Minute)
		w.verifyCode("alice", f.alice)
		w.clock.Advance(50 * time.Minute)
		// the box session saw no request of its own for 100 minutes
		if c := w.verifyCode("bob", f.bob); c != 401 {
			t.Errorf("bob's child, idle for 100 min: %d, want 401", c)
		}
		if c := w.verifyCode("alice", f.alice); c != 204 {
			t.Errorf("alice's child: %d, want 204", c)
		}
		rec := w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{f.box}})
		if !strings.Contains(rec.Body.String(), "Logged in as ops") {
			t.Errorf("the box session ended with its child active:\n%s", rec.Body)
		}
	})
	t.Run("a child ends with its box session's expiry", func(t *testing.T) {
		w := newTW(t)
		box := w.login("ops")
		w.clock.Advance(50 * time.Minute)
		alice := w.child(box, "alice") // made 50 min into the box session's 2 h
		w.clock.Advance(50 * time.Minute)
		w.verifyCode("alice", alice)
		w.clock.Advance(20 * time.Minute)
		if c := w.verifyCode("alice", alice); c != 401 {
			t.Errorf("a child outlived its box session: %d", c)
		}
	})
}

func TestVerifyMarksResponsesUncacheable(t *testing.T) {
	w := newTW(t)
	f := w.family()
	rec := w.verifyH(rq{method: "GET", host: "alice.box.test", target: "/verify?user=alice", cookies: []string{f.alice}})
	if rec.Header().Get("Cache-Control") != "no-store" || rec.Code != http.StatusNoContent {
		t.Errorf("%d, Cache-Control %q", rec.Code, rec.Header().Get("Cache-Control"))
	}
}

func TestUsingTheBoxOriginIsActivity(t *testing.T) {
	w := newTW(t)
	box := w.login("ops")
	w.clock.Advance(50 * time.Minute)
	w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{box}})
	w.clock.Advance(50 * time.Minute)
	rec := w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{box}})
	if !strings.Contains(rec.Body.String(), "Logged in as ops") {
		t.Error("the box session went idle though its page was used")
	}
}
