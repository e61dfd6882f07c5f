package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestLoginToTerminal walks the whole flow: the login form, a login, the
// list, the hand-over to alice's origin, a verified request.
func TestLoginToTerminal(t *testing.T) {
	w := newTW(t)
	rec := w.pages(rq{method: "GET", host: "box.test", target: "/"})
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `action="/auth/login"`) {
		t.Fatalf("GET / without a cookie: %d\n%s", rec.Code, rec.Body)
	}
	box := w.login("ops")
	rec = w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{box}})
	body := rec.Body.String()
	for _, u := range []string{"alice", "bob"} {
		if !strings.Contains(body, `<input type="hidden" name="user" value="`+u+`">`) {
			t.Errorf("the list lacks %s:\n%s", u, body)
		}
	}
	if !strings.Contains(body, `action="/auth/open"`) || !strings.Contains(body, `action="/auth/logout"`) {
		t.Errorf("the list lacks the open or logout forms:\n%s", body)
	}
	// al may open alice only
	rec = w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{w.login("al")}})
	if strings.Contains(rec.Body.String(), `value="bob"`) {
		t.Errorf("al's list offers bob:\n%s", rec.Body)
	}

	rec = w.pages(rq{method: "POST", host: "box.test", target: "/auth/open", cookies: []string{box},
		form: url.Values{"user": {"alice"}, "next": {"/term/?arg=s1"}}})
	loc, _ := url.Parse(rec.Header().Get("Location"))
	if rec.Code != 303 || loc.Scheme != "https" || loc.Host != "alice.box.test" || loc.Path != "/auth/handover" || loc.Query().Get("next") != "/term/?arg=s1" {
		t.Fatalf("open: %d %q", rec.Code, loc)
	}
	if sc := rec.Header().Values("Set-Cookie"); len(sc) != 0 {
		t.Errorf("open set cookies %q: the origin binds the code itself", sc)
	}
	// the origin binds the pending code to this browser, the box binds it
	// for this box session and sends the browser back
	bind := w.bindFor(box, "alice", loc.Query().Get("code"))
	rec = w.pages(rq{method: "GET", host: "alice.box.test", target: loc.RequestURI()})
	body = rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, `<form id="handover" method="post" action="/auth/handover">`) ||
		!strings.Contains(body, `value="`+loc.Query().Get("code")+`"`) || !strings.Contains(body, `<button>Continue to alice</button>`) {
		t.Fatalf("hand-over page: %d\n%s", rec.Code, body)
	}
	rec = w.pages(rq{method: "POST", host: "alice.box.test", target: "/auth/handover",
		form: url.Values{"code": {loc.Query().Get("code")}, "next": {loc.Query().Get("next")}},
		more: []*http.Cookie{{Name: bindCookie, Value: bind}}})
	if rec.Code != 303 || rec.Header().Get("Location") != "/term/?arg=s1" {
		t.Fatalf("hand-over: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	child := cookieOf(t, rec)
	if idOf(child) == idOf(box) {
		t.Error("the child reuses the box session's id")
	}
	if c := w.verifyCode("alice", child); c != 204 {
		t.Errorf("verify with the child cookie: %d", c)
	}
}

// TestCookies: the exact attributes on both origins, and the clearing one.
func TestCookies(t *testing.T) {
	w := newTW(t)
	valueRE := `[0-9a-f]{32}\.[A-Za-z0-9_-]{43}`
	rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/login",
		form: url.Values{"login": {"ops"}, "password": {testPasswords["ops"]}}})
	want := regexp.MustCompile(`^__Host-agentbox=` + valueRE + `; Path=/; Expires=Tue, 01 Dec 2026 12:00:00 GMT; Max-Age=7200; HttpOnly; Secure; SameSite=Lax$`)
	if sc := rec.Header().Values("Set-Cookie"); len(sc) != 1 || !want.MatchString(sc[0]) {
		t.Errorf("box cookie %q, want %s", sc, want)
	}
	box := cookieOf(t, rec)
	w.clock.Advance(30 * time.Minute)
	rec = w.pages(rq{method: "POST", host: "box.test", target: "/auth/open", cookies: []string{box},
		form: url.Values{"user": {"alice"}, "next": {"/"}}})
	if sc := rec.Header().Values("Set-Cookie"); len(sc) != 0 {
		t.Errorf("open set %q: no cookie for another origin", sc)
	}
	code := codeRE.FindStringSubmatch(rec.Header().Get("Location"))[1]
	// the binding cookie: the user origin's own (__Host-: no Domain,
	// Path=/), the code's 60 s
	page := w.pages(rq{method: "GET", host: "alice.box.test", target: "/auth/handover?code=" + code})
	want = regexp.MustCompile(`^__Host-agentbox-bind=[A-Za-z0-9_-]{43}; Path=/; Max-Age=60; HttpOnly; Secure; SameSite=Lax$`)
	if sc := page.Header().Values("Set-Cookie"); len(sc) != 1 || !want.MatchString(sc[0]) {
		t.Errorf("binding cookie %q, want %s", sc, want)
	}
	w.binds[code] = w.bindFor(box, "alice", code)
	rec = w.handover("alice", code)
	// the child ends with its box session: 90 minutes left; the binding
	// cookie is spent
	want = regexp.MustCompile(`^__Host-agentbox=` + valueRE + `; Path=/; Expires=Tue, 01 Dec 2026 12:00:00 GMT; Max-Age=5400; HttpOnly; Secure; SameSite=Lax$`)
	if sc := rec.Header().Values("Set-Cookie"); len(sc) != 2 || !want.MatchString(sc[0]) ||
		sc[1] != "__Host-agentbox-bind=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax" {
		t.Errorf("child cookie %q, want %s and the binding cookie cleared", sc, want)
	}
	rec = w.pages(rq{method: "POST", host: "box.test", target: "/auth/logout", cookies: []string{box}})
	if sc := rec.Header().Values("Set-Cookie"); len(sc) != 1 || sc[0] != "__Host-agentbox=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax" {
		t.Errorf("logout cookie %q", sc)
	}
}

func TestLoginWithAUserGoesStraightToTheHandover(t *testing.T) {
	for _, tc := range []struct{ name, login, user, next, wantHost, wantNext string }{
		{"a user the login may open", "ops", "bob", "/term/?arg=x", "bob.box.test", "/term/?arg=x"},
		{"a user the login may not open", "al", "bob", "/x", "", ""},
		{"an unconfigured user", "ops", "carol", "/x", "", ""},
		{"a foreign next", "ops", "alice", "https://evil.example/", "alice.box.test", "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTW(t)
			rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/login",
				form: url.Values{"login": {tc.login}, "password": {testPasswords[tc.login]}, "user": {tc.user}, "next": {tc.next}}})
			loc, _ := url.Parse(rec.Header().Get("Location"))
			if rec.Code != 303 {
				t.Fatalf("%d", rec.Code)
			}
			if tc.wantHost == "" {
				if loc.String() != "/" {
					t.Errorf("Location %q, want /", loc)
				}
				return
			}
			if loc.Host != tc.wantHost || loc.Path != "/auth/handover" || loc.Query().Get("next") != tc.wantNext {
				t.Errorf("Location %q, want %s's hand-over with next %q", loc, tc.wantHost, tc.wantNext)
			}
			u := strings.Split(tc.wantHost, ".")[0]
			w.binds[loc.Query().Get("code")] = w.bindFor(cookieOf(t, rec), u, loc.Query().Get("code"))
			if r := w.handover(u, loc.Query().Get("code")); r.Code != 303 {
				t.Errorf("the hand-over of that code: %d", r.Code)
			}
		})
	}
}

func TestWrongPasswordShowsTheFormAgain(t *testing.T) {
	w := newTW(t)
	rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/login",
		form: url.Values{"login": {"ops"}, "password": {"nope"}, "user": {"alice"}, "next": {"/x"}}})
	body := rec.Body.String()
	if rec.Code != 401 || !strings.Contains(body, "Wrong login or password") || !strings.Contains(body, `name="login" value="ops"`) ||
		!strings.Contains(body, `name="user" value="alice"`) || !strings.Contains(body, `name="next" value="/x"`) {
		t.Errorf("%d\n%s", rec.Code, body)
	}
	if len(rec.Header().Values("Set-Cookie")) != 0 {
		t.Error("a failed login sets a cookie")
	}
}

func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{
		"/":                             "/",
		"/term/?arg=s1":                 "/term/?arg=s1",
		"/a/b?c=d#e":                    "/a/b?c=d#e",
		"/%2F/evil.example":             "/%2F/evil.example",
		"/ok?next=//x":                  "/ok?next=//x",
		"":                              "/",
		"term":                          "/",
		"//evil.example/":               "/",
		"///evil.example/":              "/",
		"/\\evil.example/":              "/",
		"\\\\evil.example":              "/",
		"/a\\b":                         "/",
		"https://evil.example/":         "/",
		"javascript:alert(1)":           "/",
		"/\t/evil.example":              "/",
		"/\n/evil.example":              "/",
		"/a b":                          "/",
		"/é":                            "/",
		"/\x7f":                         "/",
		"/" + strings.Repeat("a", 2048): "/",
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestNextIsSanitisedEverywhere: every place a next enters.
func TestNextIsSanitisedEverywhere(t *testing.T) {
	w := newTW(t)
	box := w.login("ops")
	evil := "//evil.example/"
	rec := w.pages(rq{method: "GET", host: "box.test", target: "/auth/login?user=alice&next=" + url.QueryEscape(evil)})
	if strings.Contains(rec.Body.String(), "evil") || !strings.Contains(rec.Body.String(), `name="next" value="/"`) {
		t.Errorf("login form:\n%s", rec.Body)
	}
	rec = w.pages(rq{method: "GET", host: "alice.box.test", target: "/auth/login?next=" + url.QueryEscape(evil)})
	if loc := rec.Header().Get("Location"); rec.Code != 302 || loc != "https://box.test/auth/login?next=%2F&user=alice" {
		t.Errorf("user origin login: %d %q", rec.Code, loc)
	}
	rec = w.pages(rq{method: "POST", host: "box.test", target: "/auth/open", cookies: []string{box}, form: url.Values{"user": {"alice"}, "next": {evil}}})
	if loc := rec.Header().Get("Location"); !strings.HasSuffix(loc, "&next=%2F") {
		t.Errorf("open: %q", loc)
	}
	rec = w.pages(rq{method: "GET", host: "alice.box.test", target: "/auth/handover?code=" + w.code(box, "alice") + "&next=" + url.QueryEscape(evil)})
	if strings.Contains(rec.Body.String(), "evil") {
		t.Errorf("hand-over page:\n%s", rec.Body)
	}
	c := w.code(box, "alice")
	rec = w.pages(rq{method: "POST", host: "alice.box.test", target: "/auth/handover", form: url.Values{"code": {c}, "next": {evil}},
		more: []*http.Cookie{{Name: bindCookie, Value: w.binds[c]}}})
	if loc := rec.Header().Get("Location"); rec.Code != 303 || loc != "/" {
		t.Errorf("hand-over: %d %q", rec.Code, loc)
	}
}

func TestUserOriginLoginGoesToTheBox(t *testing.T) {
	w := newTW(t)
	rec := w.pages(rq{method: "GET", host: "alice.box.test", target: "/auth/login?next=%2Fterm%2F%3Farg%3Ds1"})
	if loc := rec.Header().Get("Location"); rec.Code != 302 || loc != "https://box.test/auth/login?next=%2Fterm%2F%3Farg%3Ds1&user=alice" {
		t.Errorf("%d %q", rec.Code, loc)
	}
	if rec := w.pages(rq{method: "POST", host: "alice.box.test", target: "/auth/login", form: url.Values{"login": {"ops"}, "password": {testPasswords["ops"]}}}); rec.Code != 405 || w.calls.Load() != 0 {
		t.Errorf("a password posted on a user origin: %d, %d hashes", rec.Code, w.calls.Load())
	}
}

// TestLoginPageWithALiveBoxSession offers one button instead of the
// password form: a GET cannot hand over by itself.
func TestLoginPageWithALiveBoxSession(t *testing.T) {
	w := newTW(t)
	rec := w.pages(rq{method: "GET", host: "box.test", target: "/auth/login?user=bob&next=%2Fx", cookies: []string{w.login("ops")}})
	body := rec.Body.String()
	if !strings.Contains(body, `action="/auth/open"`) || !strings.Contains(body, `name="user" value="bob"`) || !strings.Contains(body, `name="next" value="/x"`) || strings.Contains(body, `type="password"`) {
		t.Errorf("ops:\n%s", body)
	}
	rec = w.pages(rq{method: "GET", host: "box.test", target: "/auth/login?user=bob", cookies: []string{w.login("al")}})
	if body := rec.Body.String(); strings.Contains(body, `action="/auth/open"`) || !strings.Contains(body, "may not open bob") {
		t.Errorf("al:\n%s", body)
	}
}

func TestOpenRules(t *testing.T) {
	w := newTW(t)
	al := w.login("al")
	rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/open", cookies: []string{al}, form: url.Values{"user": {"bob"}}})
	if rec.Code != 403 {
		t.Errorf("al opens bob: %d", rec.Code)
	}
	rec = w.pages(rq{method: "POST", host: "box.test", target: "/auth/open", form: url.Values{"user": {"alice"}, "next": {"/x"}}})
	if loc := rec.Header().Get("Location"); rec.Code != 303 || loc != "/auth/login?next=%2Fx&user=alice" {
		t.Errorf("open without a session: %d %q", rec.Code, loc)
	}
	rec = w.pages(rq{method: "POST", host: "box.test", target: "/auth/open", cookies: []string{w.child(w.login("ops"), "alice")}, form: url.Values{"user": {"alice"}}})
	if loc := rec.Header().Get("Location"); rec.Code != 303 || !strings.HasPrefix(loc, "/auth/login") {
		t.Errorf("open with a child cookie: %d %q", rec.Code, loc)
	}
}

// TestOneTimeCodes: single use, 60 s, bound to the user and the box session.
func TestOneTimeCodes(t *testing.T) {
	t.Run("replay", func(t *testing.T) {
		w := newTW(t)
		c := w.code(w.login("ops"), "alice")
		if rec := w.handover("alice", c); rec.Code != 303 {
			t.Fatalf("first use: %d", rec.Code)
		}
		if rec := w.handover("alice", c); rec.Code != 403 || len(rec.Header().Values("Set-Cookie")) != 0 {
			t.Errorf("second use: %d %q", rec.Code, rec.Header().Values("Set-Cookie"))
		}
	})
	t.Run("expiry", func(t *testing.T) {
		w := newTW(t)
		box := w.login("ops")
		c1, c2 := w.code(box, "alice"), w.code(box, "alice")
		w.clock.Advance(59 * time.Second)
		if rec := w.handover("alice", c1); rec.Code != 303 {
			t.Errorf("after 59 s: %d", rec.Code)
		}
		w.clock.Advance(time.Second)
		if rec := w.handover("alice", c2); rec.Code != 403 {
			t.Errorf("after 60 s: %d", rec.Code)
		}
	})
	t.Run("another origin", func(t *testing.T) {
		w := newTW(t)
		c := w.code(w.login("ops"), "alice")
		if rec := w.handover("bob", c); rec.Code != 403 {
			t.Errorf("alice's code on bob's origin: %d", rec.Code)
		}
		if rec := w.handover("alice", c); rec.Code != 403 {
			t.Errorf("after being shown to bob's origin, on alice's: %d (want it burnt)", rec.Code)
		}
		box := w.login("ops")
		c = w.code(box, "alice")
		if rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/handover", form: url.Values{"code": {c}}}); rec.Code != 404 {
			t.Errorf("a code posted on the box origin: %d", rec.Code)
		}
	})
	t.Run("the box session ended", func(t *testing.T) {
		w := newTW(t)
		box := w.login("ops")
		c := w.code(box, "alice")
		w.pages(rq{method: "POST", host: "box.test", target: "/auth/logout", cookies: []string{box}})
		if rec := w.handover("alice", c); rec.Code != 403 {
			t.Errorf("a code of a logged-out box session: %d", rec.Code)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		w := newTW(t)
		for _, c := range []string{"", "x", randomText(32), strings.Repeat("A", 500)} {
			if rec := w.handover("alice", c); rec.Code != 403 {
				t.Errorf("POST code %q: %d", c, rec.Code)
			}
		}
		if rec := w.pages(rq{method: "GET", host: "alice.box.test", target: "/auth/handover?code=x"}); rec.Code != 403 {
			t.Errorf("GET with a malformed code: %d", rec.Code)
		}
	})
	t.Run("pending codes of one box session are capped", func(t *testing.T) {
		w := newTW(t)
		box := w.login("ops")
		first := w.code(box, "alice")
		for i := 0; i < maxCodesPerBox; i++ {
			w.code(box, "alice")
		}
		if rec := w.handover("alice", first); rec.Code != 403 {
			t.Errorf("the oldest of %d pending codes: %d, want it replaced", maxCodesPerBox+1, rec.Code)
		}
	})
}

// TestLogoutEndsTheWholeBoxSession from either origin; another login's
// sessions stay.
func TestLogoutEndsTheWholeBoxSession(t *testing.T) {
	for _, origin := range []string{"box.test", "alice.box.test", "bob.box.test"} {
		t.Run(origin, func(t *testing.T) {
			w := newTW(t)
			f := w.family()
			other := w.family()
			cookie := map[string]string{"box.test": f.box, "alice.box.test": f.alice, "bob.box.test": f.bob}[origin]
			rec := w.pages(rq{method: "POST", host: origin, target: "/auth/logout", cookies: []string{cookie}})
			wantLoc := "https://box.test/"
			if origin == "box.test" {
				wantLoc = "/"
			}
			if rec.Code != 303 || rec.Header().Get("Location") != wantLoc {
				t.Errorf("logout: %d %q", rec.Code, rec.Header().Get("Location"))
			}
			if c := w.verifyCode("alice", f.alice); c != 401 {
				t.Errorf("alice's child after logout: %d", c)
			}
			if c := w.verifyCode("bob", f.bob); c != 401 {
				t.Errorf("bob's child after logout: %d", c)
			}
			rec = w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{f.box}})
			if strings.Contains(rec.Body.String(), "Logged in") {
				t.Error("the box session survived its logout")
			}
			if w.verifyCode("alice", other.alice) != 204 || w.verifyCode("bob", other.bob) != 204 {
				t.Error("another box session ended too")
			}
			if st := w.readState(); len(st.Sessions) != 3 {
				t.Errorf("%d sessions on disk, want the other family's 3", len(st.Sessions))
			}
		})
	}
}

// TestCrossOriginPostsAreRefused by CrossOriginProtection, before anything
// is hashed or changed.
func TestCrossOriginPostsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"cross-site", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site (another user's origin)", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"an old browser from a foreign Origin", map[string]string{"Sec-Fetch-Site": "", "Origin": "https://evil.example"}, 403},
		{"same-origin", map[string]string{"Sec-Fetch-Site": "same-origin"}, 0},
		{"no browser headers (not a browser)", map[string]string{"Sec-Fetch-Site": ""}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTW(t)
			f := w.family()
			c := w.code(f.box, "alice")
			calls := w.calls.Load()
			w.log.Reset()
			codes := map[string]int{
				"login": w.pages(rq{method: "POST", host: "box.test", target: "/auth/login", header: tc.header,
					form: url.Values{"login": {"ops"}, "password": {"wrong"}}}).Code,
				"open": w.pages(rq{method: "POST", host: "box.test", target: "/auth/open", header: tc.header, cookies: []string{f.box},
					form: url.Values{"user": {"alice"}}}).Code,
				"handover": w.pages(rq{method: "POST", host: "alice.box.test", target: "/auth/handover", header: tc.header,
					form: url.Values{"code": {c}}, more: []*http.Cookie{{Name: bindCookie, Value: w.binds[c]}}}).Code,
				"logout": w.pages(rq{method: "POST", host: "bob.box.test", target: "/auth/logout", header: tc.header, cookies: []string{f.bob}}).Code,
			}
			for what, code := range codes {
				if tc.want == 403 && code != 403 || tc.want == 0 && code == 403 {
					t.Errorf("%s: %d", what, code)
				}
			}
			if tc.want == 403 {
				if w.calls.Load() != calls || w.log.String() != "" {
					t.Errorf("a refused login hashed (%d) or logged %q", w.calls.Load()-calls, w.log.String())
				}
				if w.verifyCode("bob", f.bob) != 204 {
					t.Error("a refused logout ended the session")
				}
			}
		})
	}
}

// TestGetChangesNothing: logout, open and the hand-over need POST.
func TestGetChangesNothing(t *testing.T) {
	w := newTW(t)
	f := w.family()
	for _, r := range []rq{
		{method: "GET", host: "box.test", target: "/auth/logout", cookies: []string{f.box}},
		{method: "GET", host: "alice.box.test", target: "/auth/logout", cookies: []string{f.alice}},
		{method: "GET", host: "box.test", target: "/auth/open?user=alice", cookies: []string{f.box}},
		{method: "GET", host: "box.test", target: "/auth/login?login=ops&password=" + testPasswords["ops"]},
	} {
		rec := w.pages(r)
		if rec.Code != 405 && rec.Code != 200 || len(rec.Header().Values("Set-Cookie")) != 0 || strings.Contains(rec.Header().Get("Location"), "handover") {
			t.Errorf("GET %s%s: %d %q", r.host, r.target, rec.Code, rec.Header())
		}
	}
	if w.calls.Load() != 1 { // the login of w.family
		t.Errorf("%d hashes: a GET hashed a password", w.calls.Load())
	}
	if w.verifyCode("alice", f.alice) != 204 {
		t.Error("a GET ended the session")
	}
	c := w.code(f.box, "alice")
	w.pages(rq{method: "GET", host: "alice.box.test", target: "/auth/handover?code=" + c})
	if rec := w.handover("alice", c); rec.Code != 303 {
		t.Errorf("GET of the hand-over page consumed the code: %d", rec.Code)
	}
}

// TestPageHeaders: every pages response carries the CSP of its origin,
// X-Frame-Options and Cache-Control.
func TestPageHeaders(t *testing.T) {
	w := newTW(t)
	f := w.family()
	handover := onlyScriptHash(t, w.pages(rq{method: "GET", host: "alice.box.test", target: "/auth/handover?code=" + w.code(f.box, "alice")}).Body.String())
	inbox := onlyScriptHash(t, w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{f.box}}).Body.String())
	boxCSP := "default-src 'none'; form-action 'self' https://alice.box.test https://bob.box.test; style-src 'self'; img-src 'self'; manifest-src 'self'; script-src " + handover + " " + inbox + "; connect-src 'self'"
	userCSP := "default-src 'none'; form-action 'self' https://box.test; style-src 'self'; img-src 'self'; script-src " + handover
	for _, r := range []rq{
		{method: "GET", host: "box.test", target: "/"},
		{method: "GET", host: "box.test", target: "/", cookies: []string{f.box}},
		{method: "GET", host: "box.test", target: "/auth/login?user=alice"},
		{method: "POST", host: "box.test", target: "/auth/login", form: url.Values{"login": {"x"}}},
		{method: "POST", host: "box.test", target: "/auth/logout", header: map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{method: "GET", host: "box.test", target: "/auth/style.css"},
		{method: "GET", host: "box.test", target: "/nothing"},
		{method: "GET", host: "alice.box.test", target: "/auth/handover?code=" + w.code(f.box, "alice")},
		{method: "POST", host: "alice.box.test", target: "/auth/handover"},
		{method: "GET", host: "alice.box.test", target: "/auth/login"},
		{method: "GET", host: "evil.example", target: "/"},
	} {
		rec := w.pages(r)
		want := userCSP
		if r.host == "box.test" {
			want = boxCSP
		}
		h := rec.Header()
		if h.Get("Content-Security-Policy") != want || h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s%s: CSP %q, X-Frame-Options %q, Cache-Control %q", r.method, r.host, r.target,
				h.Get("Content-Security-Policy"), h.Get("X-Frame-Options"), h.Get("Cache-Control"))
		}
	}
}

var (
	scriptRE = regexp.MustCompile(`(?s)<script>(.*?)</script>`)
	onAttr   = regexp.MustCompile(` on[a-z]+=`) // an inline event handler
)

// onlyScriptHash is the CSP source of the one inline script in body.
func onlyScriptHash(t *testing.T, body string) string {
	t.Helper()
	scripts := scriptRE.FindAllStringSubmatch(body, -1)
	if len(scripts) != 1 {
		t.Fatalf("%d scripts in the page, want 1:\n%s", len(scripts), body)
	}
	sum := sha256.Sum256([]byte(scripts[0][1]))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// TestEachOriginsCSPAllowsExactlyItsPagesScripts: a user origin's header
// has the sha256 of the bytes its hand-over page carries; the box
// origin's has that and the inbox's (the logged-in page's one script); no
// other page has a script or an inline handler.
func TestEachOriginsCSPAllowsExactlyItsPagesScripts(t *testing.T) {
	w := newTW(t)
	f := w.family()
	rec := w.pages(rq{method: "GET", host: "alice.box.test", target: "/auth/handover?code=" + w.code(f.box, "alice")})
	want := "script-src " + onlyScriptHash(t, rec.Body.String())
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.HasSuffix(csp, want) {
		t.Errorf("user origin CSP %q, want it to end with %q", csp, want)
	}
	rec = w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{f.box}})
	inbox := onlyScriptHash(t, rec.Body.String())
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, want+" "+inbox+";") {
		t.Errorf("box origin CSP %q, want the hand-over's and %s", csp, inbox)
	}
	if onAttr.MatchString(rec.Body.String()) {
		t.Errorf("the box page has an inline handler:\n%s", rec.Body)
	}
	for _, r := range []rq{
		{method: "GET", host: "box.test", target: "/"},
		{method: "GET", host: "box.test", target: "/auth/login?user=alice", cookies: []string{f.box}},
		{method: "GET", host: "box.test", target: "/auth/password", cookies: []string{f.box}},
		{method: "GET", host: "box.test", target: "/nothing"},
	} {
		if body := w.pages(r).Body.String(); strings.Contains(body, "<script") || onAttr.MatchString(body) {
			t.Errorf("%s%s has a script:\n%s", r.host, r.target, body)
		}
	}
}

func TestHostRouting(t *testing.T) {
	w := newTW(t)
	for _, tc := range []struct {
		host, target string
		want         int
	}{
		{"box.test", "/", 200},
		{"BOX.test", "/", 200},
		{"box.test", "/auth/style.css", 200},
		{"alice.box.test", "/auth/style.css", 200},
		{"box.test", "/auth/favicon.svg", 200},
		{"alice.box.test", "/auth/favicon.svg", 200},
		{"box.test:8443", "/", 404},
		{"box.test.", "/", 404},
		{"evil.example", "/", 404},
		{"alice.box.test", "/", 404},
		{"carol.box.test", "/auth/login", 404},
		{"x.alice.box.test", "/auth/login", 404},
		{".box.test", "/auth/login", 404},
		{"box.test", "/auth/handover", 404},
		{"box.test", "/verify?user=alice", 404},
		{"alice.box.test", "/verify?user=alice", 404},
		{"alice.box.test", "/auth/open", 404},
	} {
		if rec := w.pages(rq{method: "GET", host: tc.host, target: tc.target}); rec.Code != tc.want {
			t.Errorf("GET %s%s: %d, want %d", tc.host, tc.target, rec.Code, tc.want)
		}
	}
}

func TestTemplatesEscape(t *testing.T) {
	w := newTW(t)
	rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/login",
		form: url.Values{"login": {`"><script>alert(1)</script>`}, "password": {"x"}}})
	if body := rec.Body.String(); strings.Contains(body, "<script>alert") || !strings.Contains(body, "&#34;&gt;&lt;script&gt;") {
		t.Errorf("the login echoed unescaped:\n%s", body)
	}
	if rec.Header().Get("Content-Type") != "text/html; charset=utf-8" || http.StatusUnauthorized != rec.Code {
		t.Errorf("%d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
}

// TestAHandOverWorksOnlyInTheBrowserThatAskedForIt: fault 5 of the attack
// (issue 17). al mints a hand-over link for alice and sends it to the
// operator, whose browser lacks the code's binding cookie (or holds the
// one of its own code): the hand-over is refused, the code spent, and the
// operator's alice session stays its own.
func TestAHandOverWorksOnlyInTheBrowserThatAskedForIt(t *testing.T) {
	w := newTW(t)
	ops := w.family()
	alBox := w.login("al")
	minted := w.code(alBox, "alice")
	opsCode := w.code(ops.box, "alice") // the operator's browser holds this one's binding
	for _, tc := range []struct {
		name    string
		cookies []*http.Cookie
	}{
		{"no binding cookie", nil},
		{"the binding of another code", []*http.Cookie{{Name: bindCookie, Value: w.binds[opsCode]}}},
		{"the code's binding under the name a sibling origin could set", []*http.Cookie{{Name: "__Secure-agentbox-handover-alice", Value: w.binds[minted]}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := w.code(alBox, "alice")
			rec := w.pages(rq{method: "POST", host: "alice.box.test", target: "/auth/handover",
				form: url.Values{"code": {code}, "next": {"/"}}, more: tc.cookies})
			if rec.Code != 403 || len(rec.Result().Cookies()) != 0 {
				t.Fatalf("%d, cookies %q; want 403 and no cookie", rec.Code, rec.Header().Values("Set-Cookie"))
			}
			if r := w.handover("alice", code); r.Code != 403 {
				t.Errorf("the code after the refused hand-over, with its own binding: %d, want 403 (spent)", r.Code)
			}
		})
	}
	if c := w.verifyCode("alice", ops.alice); c != 204 {
		t.Errorf("the operator's own alice session: %d", c)
	}
	if r := w.handover("alice", minted); r.Code != 303 {
		t.Errorf("al's own browser, with the code's binding: %d, want 303", r.Code)
	}
}

// TestALogoutTheStoreCannotRecordFailsVisibly: the session ends in memory,
// the cookie is cleared, and the answer says the logout was not saved.
func TestALogoutTheStoreCannotRecordFailsVisibly(t *testing.T) {
	w := newTW(t)
	box := w.login("ops")
	p := filepath.Join(w.dir, "sessions.json")
	// a directory in place of the file: the atomic rename over it fails
	// (the tests may run as root, whom permissions do not stop)
	if err := os.Rename(p, p+".kept"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(p, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/logout", cookies: []string{box}})
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), "could not record") {
		t.Errorf("%d\n%s", rec.Code, rec.Body)
	}
	if sc := rec.Header().Values("Set-Cookie"); len(sc) != 1 || !strings.HasPrefix(sc[0], cookieName+"=; ") {
		t.Errorf("the cookie is not cleared: %q", sc)
	}
	if rec := w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{box}}); strings.Contains(rec.Body.String(), "Logged in as") {
		t.Error("the session still works")
	}
}

// TestAMisplantedSessionCookieCannotHideTheRealOne: a script on another
// origin of the box cannot set this origin's host-only cookie, but a
// browser may still send look-alikes of its name (nameless cookies whose
// value looks like one, other paths); the real one is found among as many
// as a browser holds.
func TestAMisplantedSessionCookieCannotHideTheRealOne(t *testing.T) {
	w := newTW(t)
	f := w.family()
	var bogus []string
	for i := 0; i < 180; i++ {
		bogus = append(bogus, fmt.Sprintf("%032x.bogus", i))
	}
	r := rq{method: "GET", host: "alice.box.test", target: "/verify?user=alice", cookies: append(bogus, f.alice)}
	if c := w.verifyH(r).Code; c != 204 {
		t.Errorf("the real cookie after 180 look-alikes: %d, want 204", c)
	}
}

// TestALinkAnotherLoginAskedForCannotBeBoundInThisBrowser: issue 42,
// fault 6. al asks for a hand-over to alice and sends the link (its code
// still pending) to the operator: the operator's browser gets a binding
// cookie of alice's origin and goes to the box's /auth/bind, which refuses
// it, since the code is not the operator's box session's; the operator's
// browser ends up with no session of al's. No cookie a sibling origin can
// set (a Domain cookie of the box's domain) takes part any more.
func TestALinkAnotherLoginAskedForCannotBeBoundInThisBrowser(t *testing.T) {
	w := newTW(t)
	ops := w.login("ops")
	alBox := w.login("al")
	rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/open", cookies: []string{alBox},
		form: url.Values{"user": {"alice"}, "next": {"/"}}})
	link, _ := url.Parse(rec.Header().Get("Location"))
	c := link.Query().Get("code")
	// the operator's browser follows the link
	page := w.pages(rq{method: "GET", host: "alice.box.test", target: link.RequestURI()})
	bind := bindOf(t, page)
	to, _ := url.Parse(page.Header().Get("Location"))
	if page.Code != 302 || to.Host != "box.test" || to.Path != "/auth/bind" {
		t.Fatalf("the link's page: %d %q, want 302 to the box's /auth/bind", page.Code, to)
	}
	for _, tc := range []struct{ name, cookie string }{
		{"the operator's box session", ops},
		{"no box session", ""},
	} {
		r := rq{method: "GET", host: "box.test", target: to.RequestURI()}
		if tc.cookie != "" {
			r.cookies = []string{tc.cookie}
		}
		if got := w.pages(r); got.Code != 403 {
			t.Errorf("bind with %s: %d %q, want 403", tc.name, got.Code, got.Header().Get("Location"))
		}
	}
	if got := w.pages(rq{method: "POST", host: "alice.box.test", target: "/auth/handover",
		form: url.Values{"code": {c}, "next": {"/"}}, more: []*http.Cookie{{Name: bindCookie, Value: bind}}}); got.Code != 403 {
		t.Errorf("the hand-over in the operator's browser: %d, want 403", got.Code)
	}
	// and a binding hash that is not one, or a code never issued
	for _, target := range []string{"/auth/bind?code=" + c + "&h=short", "/auth/bind?code=nope&h=" + bindHash("x")} {
		if got := w.pages(rq{method: "GET", host: "box.test", target: target, cookies: []string{alBox}}); got.Code != 403 {
			t.Errorf("GET %s: %d, want 403", target, got.Code)
		}
	}
}
