package auth

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary re-run as another uid: a client of one socket.
const peerChildEnv = "AUTH_TEST_PEER" // socket path; AUTH_TEST_PATH, AUTH_TEST_BODY

func peerChild() int {
	code, body, err := post(os.Getenv(peerChildEnv), os.Getenv("AUTH_TEST_PATH"), os.Getenv("AUTH_TEST_BODY"))
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Printf("%d %s", code, body)
	return 0
}

// post sends a form POST over a unix socket.
func post(socket, path, body string) (int, string, error) {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := c.Post("http://local"+path, "application/x-www-form-urlencoded", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), nil
}

// uids the status handler tests map: alice 1001, bob 1002, carol 1003 (not
// configured), root 0.
func (w *tw) fakeUsers() {
	names := map[int]string{0: "root", 1001: "alice", 1002: "bob", 1003: "carol"}
	w.s.userName = func(uid int) (string, error) {
		if n, ok := names[uid]; ok {
			return n, nil
		}
		return "", fmt.Errorf("unknown uid %d", uid)
	}
}

func (w *tw) alive(uid int, session string) int {
	w.t.Helper()
	return w.do(w.s.Status(), rq{method: "POST", host: "status", target: "/alive", uid: &uid, form: url.Values{"session": {session}}}).Code
}

func TestStatus(t *testing.T) {
	w := newTW(t)
	w.fakeUsers()
	f := w.family()
	ended := w.family()
	w.pages(rq{method: "POST", host: "box.test", target: "/auth/logout", cookies: []string{ended.box}})
	for _, tc := range []struct {
		name    string
		uid     int
		session string
		want    int
	}{
		{"alice asks for her child session", 1001, idOf(f.alice), 204},
		{"bob asks for his", 1002, idOf(f.bob), 204},
		{"alice asks for bob's", 1001, idOf(f.bob), 404},
		{"alice asks for the box session", 1001, idOf(f.box), 404},
		{"alice asks for an ended session", 1001, idOf(ended.alice), 404},
		{"alice asks for an unknown id", 1001, randomHex(16), 404},
		{"alice asks for a cookie value", 1001, f.alice, 404},
		{"alice asks for nothing", 1001, "", 404},
		{"carol (not a configured user)", 1003, idOf(f.alice), 403},
		{"root (not a configured user)", 0, idOf(f.alice), 403},
		{"an unknown uid", 4242, idOf(f.alice), 403},
		{"no peer credentials", -1, idOf(f.alice), 403},
	} {
		if got := w.alive(tc.uid, tc.session); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if r := w.do(w.s.Status(), rq{method: "GET", host: "status", target: "/alive", uid: intp(1001)}); r.Code != 405 {
		t.Errorf("GET /alive: %d", r.Code)
	}
	if r := w.do(w.s.Status(), rq{method: "POST", host: "status", target: "/verify", uid: intp(1001)}); r.Code != 404 {
		t.Errorf("POST /verify on status: %d", r.Code)
	}
}

func TestStatusCountsAsActivity(t *testing.T) {
	w := newTW(t)
	w.fakeUsers()
	f := w.family()
	w.clock.Advance(50 * time.Minute)
	if w.alive(1001, idOf(f.alice)) != 204 {
		t.Fatal("alive")
	}
	w.clock.Advance(50 * time.Minute)
	if w.verifyCode("alice", f.alice) != 204 {
		t.Error("an open terminal's keep-alive did not keep the session from going idle")
	}
	if w.alive(1002, idOf(f.bob)) != 404 {
		t.Error("bob's child, with no activity for 100 min, is alive")
	}
}

func TestRootIsAUserOnlyIfConfigured(t *testing.T) {
	w := newTW(t)
	w.restart(`{"domain": "box.test", "users": ["root", "alice"], "logins": {"ops": {"users": ["root"]}}}`)
	w.fakeUsers()
	box := w.login("ops")
	root := w.child(box, "root")
	if got := w.alive(0, idOf(root)); got != 204 {
		t.Errorf("root, configured: %d", got)
	}
}

// TestUIDMapping is the passwd lookup the status socket uses.
func TestUIDMapping(t *testing.T) {
	for uid, want := range map[int]string{0: "root", 65534: "nobody"} {
		if got, err := lookupUserName(uid); err != nil || got != want {
			t.Errorf("uid %d: %q %v, want %q", uid, got, err, want)
		}
	}
	if got, err := lookupUserName(3999999); err == nil {
		t.Errorf("an unused uid maps to %q", got)
	}
}

func TestControl(t *testing.T) {
	w := newTW(t)
	w.family()
	w.family()
	al := w.login("al")
	alAlice := w.child(al, "alice")
	revoke := func(uid int, login string) (int, string) {
		r := w.do(w.s.Control(), rq{method: "POST", host: "control", target: "/revoke", uid: &uid, form: url.Values{"login": {login}}})
		return r.Code, r.Body.String()
	}
	if code, _ := revoke(1001, "ops"); code != 403 {
		t.Errorf("a user revokes: %d", code)
	}
	if code, _ := revoke(-1, "ops"); code != 403 {
		t.Errorf("no peer credentials: %d", code)
	}
	if code, _ := revoke(0, "Ops\n"); code != 400 {
		t.Errorf("a bad login: %d", code)
	}
	if code, body := revoke(0, "ops"); code != 200 || body != "6\n" {
		t.Errorf("root revokes ops: %d %q, want 6 sessions", code, body)
	}
	if code, body := revoke(0, "ops"); code != 200 || body != "0\n" {
		t.Errorf("again: %d %q", code, body)
	}
	if w.verifyCode("alice", alAlice) != 204 {
		t.Error("another login's session ended")
	}
	if n := len(w.readState().Sessions); n != 2 {
		t.Errorf("%d sessions on disk after the revoke, want al's 2", n)
	}
	if !strings.Contains(w.log.String(), "agent-box-auth: revoked 6 sessions of login ops\n") {
		t.Errorf("logged %q", w.log.String())
	}
	uid0 := 0
	if r := w.do(w.s.Control(), rq{method: "GET", host: "control", target: "/revoke", uid: &uid0}); r.Code != 405 {
		t.Errorf("GET /revoke: %d", r.Code)
	}
}

// serveAll runs the server on real unix sockets in a directory others can
// enter, and returns the socket paths by name.
func (w *tw) serveAll(ctx context.Context) (map[string]string, <-chan error) {
	w.t.Helper()
	dir, err := os.MkdirTemp("", "abauth")
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	paths := map[string]string{}
	var ls []net.Listener
	for _, n := range ListenerNames {
		p := filepath.Join(dir, n+".sock")
		l, err := net.Listen("unix", p)
		if err != nil {
			w.t.Fatal(err)
		}
		os.Chmod(p, 0o666)
		paths[n] = p
		ls = append(ls, l)
	}
	done := make(chan error, 1)
	go func() { done <- w.s.Serve(ctx, ls[0], ls[1], ls[2], ls[3]) }()
	return paths, done
}

// asNobody runs the test binary as nobody, posting body to path on socket.
func asNobody(t *testing.T, socket, path, body string) string {
	t.Helper()
	// the build directory is root's: run a copy others may execute
	dir, err := os.MkdirTemp("", "abauth-bin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	self, _ := os.Executable()
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "auth.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run=^$")
	cmd.Env = []string{peerChildEnv + "=" + socket, "AUTH_TEST_PATH=" + path, "AUTH_TEST_BODY=" + body}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as nobody: %v\n%s", err, out)
	}
	return string(out)
}

// TestStatusAndControlSocketsCheckThePeerUID with real sockets: the uid is
// the kernel's (SO_PEERCRED), mapped through the passwd database.
func TestStatusAndControlSocketsCheckThePeerUID(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test runs as root (it starts a client as nobody)")
	}
	w := newTW(t)
	w.restart(`{"domain": "box.test", "users": ["nobody", "alice"], "logins": {"ops": {"users": ["nobody", "alice"]}}}`)
	box := w.login("ops")
	nobody, alice := w.child(box, "nobody"), w.child(box, "alice")
	ctx, cancel := context.WithCancel(context.Background())
	socks, done := w.serveAll(ctx)

	if got := asNobody(t, socks["status"], "/alive", "session="+idOf(nobody)); got != "204 " {
		t.Errorf("nobody asks for its session: %q", got)
	}
	if got := asNobody(t, socks["status"], "/alive", "session="+idOf(alice)); !strings.HasPrefix(got, "404 ") {
		t.Errorf("nobody asks for alice's: %q", got)
	}
	if code, _, err := post(socks["status"], "/alive", "session="+idOf(nobody)); err != nil || code != 403 {
		t.Errorf("root (not configured) asks: %d %v", code, err)
	}
	if got := asNobody(t, socks["control"], "/revoke", "login=ops"); !strings.HasPrefix(got, "403 ") {
		t.Errorf("nobody revokes: %q", got)
	}
	if code, body, err := post(socks["control"], "/revoke", "login=ops"); err != nil || code != 200 || body != "3\n" {
		t.Errorf("root revokes: %d %q %v", code, body, err)
	}
	if got := asNobody(t, socks["status"], "/alive", "session="+idOf(nobody)); !strings.HasPrefix(got, "404 ") {
		t.Errorf("nobody asks for its revoked session: %q", got)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}

// TestServeAnswersEachListenerItsOwnRoutes and shuts down when ctx ends,
// writing lastSeen.
func TestServeAnswersEachListenerItsOwnRoutes(t *testing.T) {
	w := newTW(t)
	f := w.family()
	ctx, cancel := context.WithCancel(context.Background())
	socks, done := w.serveAll(ctx)
	get := func(sock, host, target, cookie string) int {
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest("GET", "http://"+host+target, nil)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: cookieName, Value: cookie})
		}
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	w.clock.Advance(10 * time.Second)
	for _, tc := range []struct {
		sock, host, target, cookie string
		want                       int
	}{
		{"verify", "alice.box.test", "/verify?user=alice", f.alice, 204},
		{"pages", "alice.box.test", "/verify?user=alice", f.alice, 404},
		{"status", "alice.box.test", "/verify?user=alice", f.alice, 404},
		{"control", "alice.box.test", "/verify?user=alice", f.alice, 404},
		{"verify", "box.test", "/", "", 404},
		{"pages", "box.test", "/", "", 200},
		{"pages", "box.test", "/auth/login", "", 200},
	} {
		if got := get(socks[tc.sock], tc.host, tc.target, tc.cookie); got != tc.want {
			t.Errorf("%s: GET %s%s: %d, want %d", tc.sock, tc.host, tc.target, got, tc.want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	for _, s := range w.readState().Sessions {
		if s.ID == idOf(f.alice) && !s.LastSeen.Equal(t0.Add(10*time.Second)) {
			t.Errorf("lastSeen %s on disk after the shutdown, want %s", s.LastSeen, t0.Add(10*time.Second))
		}
	}
	if !strings.Contains(w.log.String(), "agent-box-auth: serving https://box.test/ for 2 users and 2 logins, 3 sessions\n") {
		t.Errorf("logged %q", w.log.String())
	}
}
