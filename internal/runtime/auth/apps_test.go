package auth

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// appsConfig: alice's app records behind the login, on a domain of its own.
const appsConfig = `{
  "domain": "box.test",
  "appsDomain": "apps.test",
  "users": ["alice", "bob"],
  "apps": {"alice": ["records"], "bob": ["records"]},
  "logins": {"ops": {"users": ["alice", "bob"]}, "al": {"users": ["alice"]}},
  "sessionLifetime": "2h0m0s",
  "idleTimeout": "1h0m0s"
}`

const recordsHost = "records--alice.apps.test"

func newAppsTW(t *testing.T) *tw {
	t.Helper()
	w := newTW(t)
	w.restart(appsConfig)
	return w
}

// appBindOf returns the value of the app origin's binding cookie rec sets.
func appBindOf(t testing.TB, rec *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range rec.Result().Cookies() {
		if c.Name == bindCookie {
			return c
		}
	}
	t.Fatalf("no %s cookie in %q", bindCookie, rec.Header().Values("Set-Cookie"))
	return nil
}

// startApp is a browser's first visit of the app's origin: verify sends it
// to the origin's own /auth/login, which binds it and sends it on to the
// box origin. It returns the binding secret and the box login URL.
func (w *tw) startApp(host, app, next string) (bind string, login *url.URL) {
	w.t.Helper()
	v := w.verifyH(rq{method: "GET", host: host, target: "/verify?user=alice&app=" + app,
		header: map[string]string{"Sec-Fetch-Mode": "navigate", "X-Forwarded-Method": "GET", "X-Forwarded-Uri": next}})
	want := "https://" + host + "/auth/login?next=" + url.QueryEscape(next)
	if v.Code != http.StatusFound || v.Header().Get("Location") != want {
		w.t.Fatalf("verify of a navigation: %d %q, want 302 %q", v.Code, v.Header().Get("Location"), want)
	}
	rec := w.pages(rq{method: "GET", host: host, target: "/auth/login?next=" + url.QueryEscape(next)})
	if rec.Code != http.StatusFound {
		w.t.Fatalf("the app origin's login: %d %s", rec.Code, rec.Body)
	}
	c := appBindOf(w.t, rec)
	if !strings.HasPrefix(c.Name, "__Host-") || c.Path != "/" || c.Domain != "" || !c.Secure || !c.HttpOnly || c.MaxAge != int(appBindLifetime.Seconds()) {
		w.t.Errorf("binding cookie %+v: want __Host- (host-only, Path=/), Secure, HttpOnly, Max-Age %v", c, appBindLifetime)
	}
	u, err := url.Parse(rec.Header().Get("Location"))
	if err != nil || u.Host != "box.test" || u.Path != "/auth/login" {
		w.t.Fatalf("the app origin's login sends to %q, want the box origin's login", rec.Header().Get("Location"))
	}
	return c.Value, u
}

// TestAppOriginLogin: a browser's whole way into an app behind the login:
// the app's origin, the box origin's login, the hand-over back, then
// verify lets the child session through on that origin only.
func TestAppOriginLogin(t *testing.T) {
	w := newAppsTW(t)
	bind, login := w.startApp(recordsHost, "records", "/records/x?y=1")
	q := login.Query()
	if q.Get("user") != "alice" || q.Get("app") != "records" || q.Get("next") != "/records/x?y=1" || q.Get("bind") != bindHash(bind) {
		t.Fatalf("box login query %v: want alice, records, the next path and the binding secret's hash", q)
	}
	page := w.pages(rq{method: "GET", host: "box.test", target: login.RequestURI()})
	for _, s := range []string{`name="app" value="records"`, `name="bind" value="` + bindHash(bind) + `"`, "Then on to " + recordsHost + "."} {
		if !strings.Contains(page.Body.String(), s) {
			t.Errorf("the login form lacks %q:\n%s", s, page.Body)
		}
	}
	rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/login", form: url.Values{
		"login": {"al"}, "password": {testPasswords["al"]}, "user": {"alice"}, "app": {"records"}, "bind": {q.Get("bind")}, "next": {q.Get("next")}}})
	loc := rec.Header().Get("Location")
	if rec.Code != http.StatusSeeOther || !strings.HasPrefix(loc, "https://"+recordsHost+"/auth/handover?") {
		t.Fatalf("login: %d %q, want 303 to the app origin's hand-over", rec.Code, loc)
	}
	for _, c := range rec.Result().Cookies() {
		if c.Name != cookieName {
			t.Errorf("the box origin set %s for an app's hand-over (an origin sets its binding itself)", c.Name)
		}
	}
	code := codeRE.FindStringSubmatch(loc)[1]
	hv := w.pages(rq{method: "POST", host: recordsHost, target: "/auth/handover",
		form: url.Values{"code": {code}, "next": {"/records/x?y=1"}}, more: []*http.Cookie{{Name: bindCookie, Value: bind}}})
	if hv.Code != http.StatusSeeOther || hv.Header().Get("Location") != "/records/x?y=1" {
		t.Fatalf("hand-over: %d %q %s", hv.Code, hv.Header().Get("Location"), hv.Body)
	}
	if c := appBindOf(t, hv); c.MaxAge >= 0 {
		t.Errorf("the hand-over does not clear the binding cookie: %+v", c)
	}
	child := cookieOf(t, hv)
	ok := w.verifyH(rq{method: "GET", host: recordsHost, target: "/verify?user=alice&app=records", cookies: []string{child}})
	if ok.Code != http.StatusNoContent || ok.Header().Get(userHeader) != "alice" || ok.Header().Get(sessionHeader) != idOf(child) {
		t.Fatalf("verify with the child session: %d %v", ok.Code, ok.Header())
	}
	for _, tc := range []struct{ name, host, target string }{
		{"alice's user origin", "alice.box.test", "/verify?user=alice"},
		{"bob's app of the same name", "records--bob.apps.test", "/verify?user=bob&app=records"},
	} {
		if c := w.verifyH(rq{method: "GET", host: tc.host, target: tc.target, cookies: []string{child}}).Code; c != http.StatusUnauthorized {
			t.Errorf("the app's child session on %s: %d, want 401", tc.name, c)
		}
	}
	// and a user origin's child session does not open the app
	user := w.child(w.login("al"), "alice")
	if c := w.verifyH(rq{method: "GET", host: recordsHost, target: "/verify?user=alice&app=records", cookies: []string{user}}).Code; c != http.StatusUnauthorized {
		t.Errorf("alice's user-origin session on her app: %d, want 401", c)
	}
	// logout on the app's origin (which the app's own page can post)
	// ends that origin's session only: not the box session of the same
	// login, nor its other origins'
	box := cookieOf(t, rec) // the login on the box origin set it
	sibling := w.child(box, "alice")
	out := w.pages(rq{method: "POST", host: recordsHost, target: "/auth/logout", cookies: []string{child}})
	if out.Code != http.StatusSeeOther || out.Header().Get("Location") != "https://box.test/" {
		t.Fatalf("logout: %d %q", out.Code, out.Header().Get("Location"))
	}
	if c := w.verifyH(rq{method: "GET", host: recordsHost, target: "/verify?user=alice&app=records", cookies: []string{child}}).Code; c != http.StatusUnauthorized {
		t.Errorf("after logout: %d, want 401", c)
	}
	if c := w.verifyCode("alice", sibling); c != http.StatusNoContent {
		t.Errorf("alice's origin of the same box session after the app's logout: %d, want 204", c)
	}
	if home := w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{box}}); !strings.Contains(home.Body.String(), "Logged in as al") {
		t.Errorf("the box session after the app's logout: %d %s", home.Code, home.Body)
	}
}

// TestAppHandoverRules: the box origin opens an app only for its origin's
// binding hash, and the code works only in the browser that holds the
// secret, once, on that app's origin.
func TestAppHandoverRules(t *testing.T) {
	w := newAppsTW(t)
	box := w.login("ops")
	bind, _ := w.startApp(recordsHost, "records", "/")
	open := func(form url.Values) *httptest.ResponseRecorder {
		return w.pages(rq{method: "POST", host: "box.test", target: "/auth/open", cookies: []string{box}, form: form})
	}
	mint := func() string {
		rec := open(url.Values{"user": {"alice"}, "app": {"records"}, "bind": {bindHash(bind)}, "next": {"/"}})
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("open: %d %s", rec.Code, rec.Body)
		}
		return codeRE.FindStringSubmatch(rec.Header().Get("Location"))[1]
	}
	for _, tc := range []struct {
		name string
		form url.Values
	}{
		{"no binding hash", url.Values{"user": {"alice"}, "app": {"records"}}},
		{"a binding hash of another form", url.Values{"user": {"alice"}, "app": {"records"}, "bind": {"x"}}},
		{"an app not behind the login", url.Values{"user": {"alice"}, "app": {"site"}, "bind": {bindHash(bind)}}},
		{"a binding hash without an app", url.Values{"user": {"alice"}, "bind": {bindHash(bind)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if rec := open(tc.form); rec.Code != http.StatusForbidden {
				t.Errorf("open %v: %d, want 403", tc.form, rec.Code)
			}
		})
	}
	handover := func(host, code string, cookies ...*http.Cookie) int {
		return w.pages(rq{method: "POST", host: host, target: "/auth/handover", form: url.Values{"code": {code}, "next": {"/"}}, more: cookies}).Code
	}
	good := &http.Cookie{Name: bindCookie, Value: bind}
	t.Run("another browser", func(t *testing.T) {
		c := mint()
		if got := handover(recordsHost, c); got != http.StatusForbidden {
			t.Errorf("without the binding cookie: %d, want 403", got)
		}
		if got := handover(recordsHost, c, good); got != http.StatusForbidden {
			t.Errorf("the same code again, now with the cookie: %d, want 403 (spent)", got)
		}
	})
	t.Run("the secret in a cookie a sibling origin could set", func(t *testing.T) {
		// another app of the same site may set a __Secure- cookie with
		// Domain=<apps domain> in the person's browser; never __Host-
		tossed := &http.Cookie{Name: "__Secure-" + strings.TrimPrefix(bindCookie, "__Host-"), Value: bind}
		if got := handover(recordsHost, mint(), tossed); got != http.StatusForbidden {
			t.Errorf("the right secret under the name a sibling can toss: %d, want 403", got)
		}
	})
	t.Run("a wrong binding secret", func(t *testing.T) {
		if got := handover(recordsHost, mint(), &http.Cookie{Name: bindCookie, Value: bindHash(bind)}); got != http.StatusForbidden {
			t.Errorf("the hash as the secret: %d, want 403", got)
		}
	})
	t.Run("another app's origin", func(t *testing.T) {
		if got := handover("records--bob.apps.test", mint(), good); got != http.StatusForbidden {
			t.Errorf("on bob's app: %d, want 403", got)
		}
	})
	t.Run("the user's origin", func(t *testing.T) {
		c := mint()
		if got := handover("alice.box.test", c, good); got != http.StatusForbidden {
			t.Errorf("on alice's origin: %d, want 403", got)
		}
	})
	t.Run("its own browser", func(t *testing.T) {
		if got := handover(recordsHost, mint(), good); got != http.StatusSeeOther {
			t.Errorf("with the binding cookie: %d, want 303", got)
		}
	})
	t.Run("a login that may not open the user", func(t *testing.T) {
		w.restart(strings.Replace(appsConfig, `"al": {"users": ["alice"]}`, `"al": {"users": ["bob"]}`, 1))
		al := w.login("al")
		rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/open", cookies: []string{al},
			form: url.Values{"user": {"alice"}, "app": {"records"}, "bind": {bindHash(bind)}}})
		if rec.Code != http.StatusForbidden {
			t.Errorf("open: %d, want 403", rec.Code)
		}
	})
}

// TestAppVerifyRules: verify on an app's origin, in the contract's order.
func TestAppVerifyRules(t *testing.T) {
	w := newAppsTW(t)
	for _, tc := range []struct {
		name, host, target string
		header             map[string]string
	}{
		{"an app not behind the login", "site--alice.apps.test", "/verify?user=alice&app=site", nil},
		{"the app on the box's domain", "records--alice.box.test", "/verify?user=alice&app=records", nil},
		{"another app's host", "records--bob.apps.test", "/verify?user=alice&app=records", nil},
		{"two apps", recordsHost, "/verify?user=alice&app=records&app=records", nil},
		{"another parameter", recordsHost, "/verify?user=alice&app=records&x=1", nil},
		{"another origin", recordsHost, "/verify?user=alice&app=records", map[string]string{"Origin": "https://alice.box.test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c := w.verifyH(rq{method: "GET", host: tc.host, target: tc.target, header: tc.header}).Code; c != http.StatusForbidden {
				t.Errorf("%d, want 403", c)
			}
		})
	}
	t.Run("the app's own origin, not a navigation", func(t *testing.T) {
		r := rq{method: "GET", host: recordsHost, target: "/verify?user=alice&app=records", header: map[string]string{"Origin": "https://" + recordsHost}}
		if c := w.verifyH(r).Code; c != http.StatusUnauthorized {
			t.Errorf("%d, want 401", c)
		}
	})
}

// TestAppsOnTheBoxDomain: without appsDomain an app's origin is a sibling
// of the user origins, and the same flow holds.
func TestAppsOnTheBoxDomain(t *testing.T) {
	w := newTW(t)
	w.restart(strings.Replace(appsConfig, `"appsDomain": "apps.test",`, "", 1))
	bind, login := w.startApp("records--alice.box.test", "records", "/")
	rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/login", form: url.Values{
		"login": {"al"}, "password": {testPasswords["al"]}, "user": {"alice"}, "app": {"records"}, "bind": {login.Query().Get("bind")}, "next": {"/"}}})
	loc := rec.Header().Get("Location")
	if !strings.HasPrefix(loc, "https://records--alice.box.test/auth/handover?") {
		t.Fatalf("login: %d %q", rec.Code, loc)
	}
	hv := w.pages(rq{method: "POST", host: "records--alice.box.test", target: "/auth/handover",
		form: url.Values{"code": {codeRE.FindStringSubmatch(loc)[1]}, "next": {"/"}}, more: []*http.Cookie{{Name: bindCookie, Value: bind}}})
	if hv.Code != http.StatusSeeOther {
		t.Fatalf("hand-over: %d %s", hv.Code, hv.Body)
	}
	if c := w.verifyH(rq{method: "GET", host: "records--alice.box.test", target: "/verify?user=alice&app=records", cookies: []string{cookieOf(t, hv)}}).Code; c != http.StatusNoContent {
		t.Errorf("verify: %d, want 204", c)
	}
}

// TestRemovedAppEndsItsSessions: a restart without the app (or with it
// made public) ends its child sessions; the box session stays.
func TestRemovedAppEndsItsSessions(t *testing.T) {
	w := newAppsTW(t)
	bind, login := w.startApp(recordsHost, "records", "/")
	rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/login", form: url.Values{
		"login": {"al"}, "password": {testPasswords["al"]}, "user": {"alice"}, "app": {"records"}, "bind": {login.Query().Get("bind")}, "next": {"/"}}})
	box := cookieOf(t, rec)
	hv := w.pages(rq{method: "POST", host: recordsHost, target: "/auth/handover",
		form: url.Values{"code": {codeRE.FindStringSubmatch(rec.Header().Get("Location"))[1]}, "next": {"/"}}, more: []*http.Cookie{{Name: bindCookie, Value: bind}}})
	child := cookieOf(t, hv)
	if n := len(w.readState().Sessions); n != 2 {
		t.Fatalf("%d sessions stored, want the box session and the app's", n)
	}
	w.restart(strings.Replace(appsConfig, `"alice": ["records"], `, "", 1))
	if n := len(w.readState().Sessions); n != 1 {
		t.Errorf("%d sessions stored after the app left the configuration, want 1 (the box session)", n)
	}
	w.restart(appsConfig)
	if c := w.verifyH(rq{method: "GET", host: recordsHost, target: "/verify?user=alice&app=records", cookies: []string{child}}).Code; c != http.StatusUnauthorized {
		t.Errorf("the app's old child session after it came back: %d, want 401", c)
	}
	if home := w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{box}}); !strings.Contains(home.Body.String(), "Logged in as al") {
		t.Errorf("the box session did not survive")
	}
}
