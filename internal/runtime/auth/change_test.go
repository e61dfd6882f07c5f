package auth

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/pwhash"
)

// loginStatus is the status a login with password gets on the box origin.
func (w *tw) loginStatus(login, password string) int {
	w.t.Helper()
	w.clock.Advance(10 * time.Minute) // past any backoff
	return w.pages(rq{method: "POST", host: "box.test", target: "/auth/login",
		form: url.Values{"login": {login}, "password": {password}}}).Code
}

func (w *tw) changePassword(box, old, pw, repeat string, header map[string]string) *httptest.ResponseRecorder {
	w.t.Helper()
	w.clock.Advance(10 * time.Minute)
	return w.pages(rq{method: "POST", host: "box.test", target: "/auth/password", cookies: []string{box}, header: header,
		form: url.Values{"old": {old}, "new": {pw}, "repeat": {repeat}}})
}

const newPassword = "a-new-password-1"

func TestPasswordPageNeedsABoxSession(t *testing.T) {
	w := newTW(t)
	rec := w.pages(rq{method: "GET", host: "box.test", target: "/auth/password"})
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != "/auth/login?next=%2Fauth%2Fpassword" {
		t.Errorf("no session: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	// the login then comes back here
	rec = w.pages(rq{method: "POST", host: "box.test", target: "/auth/login",
		form: url.Values{"login": {"ops"}, "password": {testPasswords["ops"]}, "next": {"/auth/password"}}})
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/auth/password" {
		t.Errorf("login with next: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	box := cookieOf(t, rec)
	rec = w.pages(rq{method: "GET", host: "box.test", target: "/auth/password", cookies: []string{box}})
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `<form method="post" action="/auth/password">`) {
		t.Errorf("with a session: %d\n%s", rec.Code, rec.Body)
	}
	// a user origin has no password page: /auth/* there is the hand-over's
	child := w.child(box, "alice")
	if rec := w.pages(rq{method: "GET", host: "alice.box.test", target: "/auth/password", cookies: []string{child}}); rec.Code != http.StatusNotFound {
		t.Errorf("on alice's origin: %d", rec.Code)
	}
}

func TestPasswordChange(t *testing.T) {
	w := newTW(t)
	box := w.login("ops")
	child := w.child(box, "alice")
	other := w.login("ops") // another browser of the same person
	otherChild := w.child(other, "bob")
	al := w.login("al") // another login
	rec := w.changePassword(box, testPasswords["ops"], newPassword, newPassword, nil)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "is changed") {
		t.Fatalf("%d\n%s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		what   string
		user   string
		cookie string
		want   int
	}{
		{"this session's user origin", "alice", child, 204},
		{"the other session's user origin", "bob", otherChild, 401},
	} {
		if got := w.verifyCode(tc.user, tc.cookie); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.what, got, tc.want)
		}
	}
	if rec := w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{other}}); strings.Contains(rec.Body.String(), "Logged in as") {
		t.Error("the other box session is still logged in")
	}
	if rec := w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{al}}); !strings.Contains(rec.Body.String(), "Logged in as al") {
		t.Error("another login's session ended")
	}
	if got := w.loginStatus("ops", testPasswords["ops"]); got != http.StatusUnauthorized {
		t.Errorf("the old password: %d, want 401", got)
	}
	if got := w.loginStatus("ops", newPassword); got != http.StatusSeeOther {
		t.Errorf("the new password: %d, want 303", got)
	}
	if !strings.Contains(w.log.String(), "changed the password of login ops; ended 2 other sessions") {
		t.Errorf("log:\n%s", w.log)
	}
	if strings.Contains(w.log.String(), newPassword) {
		t.Error("the new password reached the log")
	}
	// a restart keeps it
	w.restart(testConfig)
	if got := w.loginStatus("ops", newPassword); got != http.StatusSeeOther {
		t.Errorf("after a restart, the new password: %d", got)
	}
	if got := w.loginStatus("ops", testPasswords["ops"]); got != http.StatusUnauthorized {
		t.Errorf("after a restart, the old password: %d", got)
	}
}

// The operator's reset: a new configured hash wins over a password changed
// on the web, and the stored one is forgotten.
func TestAConfiguredHashChangeWinsOverAChangedPassword(t *testing.T) {
	w := newTW(t)
	box := w.login("ops")
	if rec := w.changePassword(box, testPasswords["ops"], newPassword, newPassword, nil); rec.Code != http.StatusOK {
		t.Fatalf("%d", rec.Code)
	}
	w.hashes["ops"] = fastHash("the-operators-reset")
	w.restart(testConfig)
	if got := w.loginStatus("ops", newPassword); got != http.StatusUnauthorized {
		t.Errorf("the web password after the reset: %d, want 401", got)
	}
	if got := w.loginStatus("ops", "the-operators-reset"); got != http.StatusSeeOther {
		t.Errorf("the reset password: %d, want 303", got)
	}
	st, _, err := loadStore(w.dir+"/sessions.json", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.passwords["ops"]; ok {
		t.Error("the replaced web password is still stored")
	}
}

func TestPasswordChangeRefusals(t *testing.T) {
	w := newTW(t)
	box := w.login("ops")
	for _, tc := range []struct {
		name             string
		old, pw, repeat  string
		header           map[string]string
		want             int
		text             string
		failedLoginLines int
	}{
		{"a wrong current password", "wrong", newPassword, newPassword, nil, 401, "The current password is wrong.", 1},
		{"a different repetition", testPasswords["ops"], newPassword, newPassword + "x", nil, 400, "differ", 0},
		{"too short", testPasswords["ops"], "short", "short", nil, 400, "at least 8 characters", 0},
		{"too long", testPasswords["ops"], strings.Repeat("x", pwhash.MaxLen+1), strings.Repeat("x", pwhash.MaxLen+1), nil, 400, "longer than", 0},
		{"from another site", testPasswords["ops"], newPassword, newPassword, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "another site", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.log.Reset()
			rec := w.changePassword(box, tc.old, tc.pw, tc.repeat, tc.header)
			if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.text) {
				t.Errorf("%d, want %d with %q\n%s", rec.Code, tc.want, tc.text, rec.Body)
			}
			if got := strings.Count(w.log.String(), "agent-box-auth: login failed login=ops addr="+testClient+"\n"); got != tc.failedLoginLines {
				t.Errorf("%d failed-login lines, want %d:\n%s", got, tc.failedLoginLines, w.log)
			}
		})
	}
	if got := w.loginStatus("ops", testPasswords["ops"]); got != http.StatusSeeOther {
		t.Errorf("after the refusals the password changed: %d", got)
	}
	// without a session the form goes to the login
	rec := w.changePassword("", testPasswords["ops"], newPassword, newPassword, nil)
	if rec.Code != http.StatusSeeOther || !strings.HasPrefix(rec.Header().Get("Location"), "/auth/login") {
		t.Errorf("no session: %d %q", rec.Code, rec.Header().Get("Location"))
	}
}
