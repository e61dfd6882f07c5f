package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/httpserve"
	"github.com/agent-box/agent-box/internal/runtime/pwhash"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// tw is one test server with its clock, log and hash-call counter.
type tw struct {
	t      *testing.T
	s      *Server
	clock  *fakeClock
	log    *syncBuf
	dir    string
	hashes map[string]pwhash.Hash
	calls  atomic.Int64      // derive calls
	iters  []int             // iterations of each derive call
	binds  map[string]string // code -> the binding cookie its origin set
	mu     sync.Mutex
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuf) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

// newTW starts a server on a fresh state directory.
func newTW(t *testing.T) *tw {
	t.Helper()
	w := &tw{t: t, clock: &fakeClock{now: t0}, log: &syncBuf{}, dir: t.TempDir(), hashes: map[string]pwhash.Hash{}, binds: map[string]string{}}
	for l, pw := range testPasswords {
		w.hashes[l] = fastHash(pw)
	}
	w.restart(testConfig)
	return w
}

// restart replaces the server with a new one on the same state directory
// (a service restart), with configuration js and the current hashes.
func (w *tw) restart(js string) {
	w.t.Helper()
	c := mustConfig(w.t, js)
	c.hashes = map[string]pwhash.Hash{}
	for l := range c.Logins {
		c.hashes[l] = w.hashes[l]
	}
	s, err := New(Options{Config: c, StateDir: w.dir, Log: w.log, Clock: w.clock})
	if err != nil {
		w.t.Fatalf("New: %v", err)
	}
	s.derive = func(pw string, salt []byte, iter int, pause func()) []byte {
		w.calls.Add(1)
		w.mu.Lock()
		w.iters = append(w.iters, iter)
		w.mu.Unlock()
		return fastDerive(pw, salt, iter, pause)
	}
	w.s = s
}

// rq is one request to a handler.
type rq struct {
	method, host, target string
	form                 url.Values
	cookies              []string // cookie values of __Host-agentbox
	more                 []*http.Cookie
	header               map[string]string
	uid                  *int // the peer's uid (status, control)
}

const testClient = "192.0.2.7"

// do sends r to h. POSTs are same-origin browser requests from testClient
// unless the header says otherwise.
func (w *tw) do(h http.Handler, r rq) *httptest.ResponseRecorder {
	w.t.Helper()
	return w.doWith(h, r, nil)
}

// doWith is do with a last change to the request.
func (w *tw) doWith(h http.Handler, r rq, edit func(*http.Request)) *httptest.ResponseRecorder {
	w.t.Helper()
	var body *strings.Reader
	if r.form != nil {
		body = strings.NewReader(r.form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req := httptest.NewRequest(r.method, "http://"+r.host+r.target, body)
	req.Host = r.host
	if r.form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if r.method == http.MethodPost {
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	req.Header.Set(clientHeader, testClient)
	for _, c := range r.cookies {
		req.AddCookie(&http.Cookie{Name: cookieName, Value: c})
	}
	for _, c := range r.more {
		req.AddCookie(c)
	}
	for k, v := range r.header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	if r.uid != nil {
		req = req.WithContext(context.WithValue(req.Context(), peerKey{}, *r.uid))
	}
	if edit != nil {
		edit(req)
	}
	rec := httptest.NewRecorder()
	httpserve.Handler(h).ServeHTTP(rec, req) // as the listener's server runs it
	return rec
}

func (w *tw) pages(r rq) *httptest.ResponseRecorder   { return w.do(w.s.Pages(), r) }
func (w *tw) verifyH(r rq) *httptest.ResponseRecorder { return w.do(w.s.Verify(), r) }

// cookieOf returns the value of the __Host-agentbox cookie rec sets.
func cookieOf(t testing.TB, rec *httptest.ResponseRecorder) string {
	t.Helper()
	for _, c := range rec.Result().Cookies() {
		if c.Name == cookieName {
			return c.Value
		}
	}
	t.Fatalf("no %s cookie in %q", cookieName, rec.Header().Values("Set-Cookie"))
	return ""
}

// login logs login in on the box origin and returns the box cookie.
func (w *tw) login(login string) string {
	w.t.Helper()
	rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/login",
		form: url.Values{"login": {login}, "password": {testPasswords[login]}}})
	if rec.Code != http.StatusSeeOther {
		w.t.Fatalf("login %s: %d %s", login, rec.Code, rec.Body)
	}
	return cookieOf(w.t, rec)
}

var codeRE = regexp.MustCompile(`[?&]code=([A-Za-z0-9_-]+)`)

// code asks the box origin for a one-time code for user and binds it as
// the browser does: the user's origin sets its binding cookie and sends
// the browser to the box's /auth/bind, which binds the code for this box
// session and sends it back (the cookie is kept, as the browser does).
func (w *tw) code(box, user string) string {
	w.t.Helper()
	rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/open", cookies: []string{box},
		form: url.Values{"user": {user}, "next": {"/"}}})
	loc := rec.Header().Get("Location")
	if rec.Code != http.StatusSeeOther || !strings.HasPrefix(loc, "https://"+user+".box.test/auth/handover?") {
		w.t.Fatalf("open %s: %d %q", user, rec.Code, loc)
	}
	c := codeRE.FindStringSubmatch(loc)[1]
	w.binds[c] = w.bindFor(box, user, c)
	return c
}

// bindFor takes code c through user's origin's hand-over page (which
// sets the binding cookie) and the box's /auth/bind (with box as the
// box cookie) and returns the binding cookie's value.
func (w *tw) bindFor(box, user, c string) string {
	w.t.Helper()
	page := w.pages(rq{method: "GET", host: user + ".box.test", target: "/auth/handover?code=" + c + "&next=%2F"})
	loc := page.Header().Get("Location")
	if page.Code != http.StatusFound || !strings.HasPrefix(loc, "https://box.test/auth/bind?") {
		w.t.Fatalf("the hand-over page of a pending code: %d %q, want 302 to the box's /auth/bind", page.Code, loc)
	}
	secret := bindOf(w.t, page)
	u, _ := url.Parse(loc)
	back := w.pages(rq{method: "GET", host: "box.test", target: u.RequestURI(), cookies: []string{box}})
	if back.Code != http.StatusSeeOther || !strings.HasPrefix(back.Header().Get("Location"), "https://"+user+".box.test/auth/handover?code="+c) {
		w.t.Fatalf("bind: %d %q %s", back.Code, back.Header().Get("Location"), back.Body)
	}
	return secret
}

// bindOf returns the value of the binding cookie rec sets.
func bindOf(t testing.TB, rec *httptest.ResponseRecorder) string {
	t.Helper()
	for _, c := range rec.Result().Cookies() {
		if c.Name == bindCookie && c.MaxAge > 0 {
			return c.Value
		}
	}
	t.Fatalf("no %s cookie in %q", bindCookie, rec.Header().Values("Set-Cookie"))
	return ""
}

// handover posts code on user's origin from the browser that asked for it
// (with its binding cookie).
func (w *tw) handover(user, code string) *httptest.ResponseRecorder {
	r := rq{method: "POST", host: user + ".box.test", target: "/auth/handover",
		form: url.Values{"code": {code}, "next": {"/"}}}
	if b, ok := w.binds[code]; ok {
		r.more = []*http.Cookie{{Name: bindCookie, Value: b}}
	}
	return w.pages(r)
}

// child opens user from box and returns the child cookie.
func (w *tw) child(box, user string) string {
	w.t.Helper()
	rec := w.handover(user, w.code(box, user))
	if rec.Code != http.StatusSeeOther {
		w.t.Fatalf("handover %s: %d %s", user, rec.Code, rec.Body)
	}
	return cookieOf(w.t, rec)
}

// verifyCode is the status of /verify?user=user on its origin with cookie.
func (w *tw) verifyCode(user, cookie string) int {
	w.t.Helper()
	r := rq{method: "GET", host: user + ".box.test", target: "/verify?user=" + user}
	if cookie != "" {
		r.cookies = []string{cookie}
	}
	return w.verifyH(r).Code
}

func (w *tw) readState() stateFile {
	w.t.Helper()
	st, warn, err := loadStore(w.dir+"/sessions.json", time.Hour)
	if err != nil || warn != nil {
		w.t.Fatalf("sessions.json: %v %v", err, warn)
	}
	var f stateFile
	for _, s := range st.sessions {
		f.Sessions = append(f.Sessions, *s)
	}
	f.Logins = st.logins
	return f
}

func idOf(cookie string) string { id, _, _ := strings.Cut(cookie, "."); return id }

func intp(i int) *int { return &i }

func TestMain(m *testing.M) {
	if os.Getenv(peerChildEnv) != "" {
		os.Exit(peerChild())
	}
	os.Exit(m.Run())
}

// fastDerive stands in for PBKDF2 at 600k iterations: the same function
// at one iteration, so handler tests do not spend 80 ms a login. The
// hashes of the test logins are made with it.
func fastDerive(pw string, salt []byte, iter int, pause func()) []byte {
	return pwhash.Derive(pw, salt, 1, pause)
}

func fastHash(pw string) pwhash.Hash {
	salt := make([]byte, pwhash.SaltLen)
	rand.Read(salt)
	return pwhash.Hash{Iterations: pwhash.MinIterations, Salt: salt, Key: fastDerive(pw, salt, pwhash.MinIterations, nil)}
}
