package main

// Process tests of `agent-box auth serve`, `web hash-password` and `web
// revoke` against the real binary. The auth service gets its sockets the
// way systemd passes them: listening sockets at fds 3.. (ExtraFiles),
// LISTEN_FDS and LISTEN_FDNAMES, and LISTEN_PID set to the child's own pid
// by the init below (the child is the test binary, so it can). Helpers of
// harness_test.go (testBinary, result, syncBuffer) are reused.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/agent-box/agent-box/internal/runtime/auth"
	"github.com/agent-box/agent-box/internal/runtime/pwhash"
)

// Test-binary-only settings of the program run as a child: the systemd
// variable LISTEN_PID (only the child knows its pid) and the control
// socket's path.
func init() {
	if os.Getenv("AGENT_BOX_TEST_PROGRAM") != "1" {
		return
	}
	if os.Getenv("AGENT_BOX_TEST_LISTEN_PID") == "1" {
		os.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
	}
	if p := os.Getenv("AGENT_BOX_TEST_CONTROL_SOCKET"); p != "" {
		auth.ControlSocket = p
	}
}

const authConfig = `{
  "domain": "box.test",
  "users": ["alice", "bob"],
  "logins": {"ops": {"users": ["alice", "bob"]}}
}`

// authBox is one auth service's world: configuration, credentials, state
// directory and the four sockets, created once like systemd's socket units
// (so they outlive a restart of the service).
type authBox struct {
	t       *testing.T
	dir     string
	env     []string
	socks   map[string]string
	files   []*os.File
	cmd     *exec.Cmd
	log     *syncBuffer
	done    chan struct{}
	cleanup []func()
}

// newAuthBox writes config and, per login, the hash as its credential.
func newAuthBox(t *testing.T, config string, hashes map[string]string) *authBox {
	t.Helper()
	dir, err := os.MkdirTemp("", "abauth") // short: socket paths
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	a := &authBox{t: t, dir: dir, socks: map[string]string{}}
	for _, d := range []string{"creds", "state"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for l, h := range hashes {
		if err := os.WriteFile(filepath.Join(dir, "creds", "login-"+l), []byte(h+"\n"), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "auth.json")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	a.env = []string{
		"AGENT_BOX_TEST_PROGRAM=1",
		"PATH=" + os.Getenv("PATH"),
		"AGENT_BOX_AUTH_CONFIG=" + cfg,
		"CREDENTIALS_DIRECTORY=" + filepath.Join(dir, "creds"),
		"STATE_DIRECTORY=" + filepath.Join(dir, "state"),
		"AGENT_BOX_TEST_CONTROL_SOCKET=" + filepath.Join(dir, "control.sock"),
	}
	for _, n := range auth.ListenerNames {
		p := filepath.Join(dir, n+".sock")
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := l.(*net.UnixListener).File()
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
		a.socks[n] = p
		a.files = append(a.files, f)
	}
	t.Cleanup(func() {
		a.stop()
		for _, f := range a.files {
			f.Close()
		}
	})
	return a
}

// start runs `agent-box auth serve` with the sockets and waits until it
// answers.
func (a *authBox) start() {
	a.t.Helper()
	a.log = &syncBuffer{}
	a.cmd = exec.Command(testBinary(a.t), "auth", "serve")
	a.cmd.Env = append(append([]string{}, a.env...),
		"AGENT_BOX_TEST_LISTEN_PID=1",
		"LISTEN_FDS="+strconv.Itoa(len(a.files)),
		"LISTEN_FDNAMES="+strings.Join(auth.ListenerNames, ":"))
	a.cmd.ExtraFiles = a.files
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	if err := a.cmd.Start(); err != nil {
		a.t.Fatal(err)
	}
	a.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(a.cmd, a.done)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(a.log.String(), "agent-box-auth: serving") {
		select {
		case <-a.done:
			a.t.Fatalf("auth serve exited early: %v\n%s", a.cmd.ProcessState, a.log)
		default:
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("auth serve did not start within 10 s:\n%s", a.log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop sends SIGTERM and checks a clean exit.
func (a *authBox) stop() {
	if a.cmd == nil {
		return
	}
	a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
		if code := a.cmd.ProcessState.ExitCode(); code != 0 {
			a.t.Errorf("auth serve exited %d after SIGTERM:\n%s", code, a.log)
		}
	case <-time.After(15 * time.Second):
		a.cmd.Process.Kill()
		<-a.done
		a.t.Errorf("auth serve ignored SIGTERM for 15 s")
	}
	a.cmd = nil
}

// run runs agent-box args (not the service) in this world.
func (a *authBox) run(stdin string, args ...string) result {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testBinary(a.t), args...)
	cmd.Env = a.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		a.t.Fatalf("agent-box %q: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

type answer struct {
	code   int
	header http.Header
	body   string
	cookie string // the __Host-agentbox value set, if any
}

// do sends one request over the socket named sock.
func (a *authBox) do(sock, method, host, target string, form url.Values, cookie string) answer {
	a.t.Helper()
	var cs []*http.Cookie
	if cookie != "" {
		cs = append(cs, &http.Cookie{Name: "__Host-agentbox", Value: cookie})
	}
	return a.doWith(sock, method, host, target, form, cs...)
}

// doWith is do with any cookies.
func (a *authBox) doWith(sock, method, host, target string, form url.Values, cookies ...*http.Cookie) answer {
	a.t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", a.socks[sock])
	}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, "http://"+host+target, body)
	if err != nil {
		a.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	req.Header.Set("X-Agent-Box-Client", "192.0.2.7")
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := c.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s%s on %s: %v", method, host, target, sock, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	ans := answer{code: resp.StatusCode, header: resp.Header, body: string(data)}
	for _, ck := range resp.Cookies() {
		if ck.Name == "__Host-agentbox" {
			ans.cookie = ck.Value
		}
	}
	return ans
}

var handoverCode = regexp.MustCompile(`[?&]code=([A-Za-z0-9_-]+)`)

// logIn logs ops in and opens alice: the box and alice's child cookies.
func (a *authBox) logIn(password string) (box, alice string) {
	a.t.Helper()
	ans := a.do("pages", "POST", "box.test", "/auth/login", url.Values{"login": {"ops"}, "password": {password}, "user": {"alice"}, "next": {"/term/?arg=s1"}}, "")
	loc := ans.header.Get("Location")
	if ans.code != 303 || !strings.HasPrefix(loc, "https://alice.box.test/auth/handover?") || ans.cookie == "" {
		a.t.Fatalf("login: %d %q\n%s", ans.code, loc, a.log)
	}
	code := handoverCode.FindStringSubmatch(loc)[1]
	// alice's origin binds the pending code to this browser (its own
	// __Host- cookie), the box binds it for this box session
	page := a.doWith("pages", "GET", "alice.box.test", "/auth/handover?code="+code, nil)
	var bind *http.Cookie
	for _, ck := range (&http.Response{Header: page.header}).Cookies() {
		if ck.Name == "__Host-agentbox-bind" && ck.Domain == "" && ck.Path == "/" {
			bind = &http.Cookie{Name: ck.Name, Value: ck.Value}
		}
	}
	to, err := url.Parse(page.header.Get("Location"))
	if page.code != 302 || bind == nil || err != nil || to.Host != "box.test" {
		a.t.Fatalf("hand-over page: %d %q, cookies %q", page.code, page.header.Get("Location"), page.header.Values("Set-Cookie"))
	}
	if b := a.do("pages", "GET", "box.test", to.RequestURI(), nil, ans.cookie); b.code != 303 {
		a.t.Fatalf("bind: %d %q", b.code, b.header.Get("Location"))
	}
	h := a.doWith("pages", "POST", "alice.box.test", "/auth/handover", url.Values{"code": {code}, "next": {"/term/?arg=s1"}}, bind)
	if h.code != 303 || h.header.Get("Location") != "/term/?arg=s1" || h.cookie == "" {
		a.t.Fatalf("hand-over: %d %q", h.code, h.header.Get("Location"))
	}
	return ans.cookie, h.cookie
}

func (a *authBox) verify(cookie string) answer {
	return a.do("verify", "GET", "alice.box.test", "/verify?user=alice", nil, cookie)
}

// hashPassword runs `agent-box web hash-password` on a pipe.
func (a *authBox) hashPassword(pw string) string {
	a.t.Helper()
	r := a.run(pw+"\n", "web", "hash-password")
	if r.code != 0 {
		a.t.Fatalf("hash-password: exit %d\n%s", r.code, r.stderr)
	}
	return strings.TrimSuffix(r.stdout, "\n")
}

// TestAuthServeOnSocketsFromSystemd: the whole path through the real
// binary, with a hash made by `web hash-password`, a restart that keeps
// the sessions, and the failed-login line on stderr.
func TestAuthServeOnSocketsFromSystemd(t *testing.T) {
	a := newAuthBox(t, authConfig, nil)
	h := a.hashPassword("s3cret pass")
	a = newAuthBox(t, authConfig, map[string]string{"ops": h})
	a.start()
	if ans := a.do("pages", "GET", "box.test", "/", nil, ""); ans.code != 200 || !strings.Contains(ans.body, `action="/auth/login"`) {
		t.Fatalf("GET /: %d\n%s", ans.code, ans.body)
	}
	if ans := a.verify(""); ans.code != 401 {
		t.Errorf("verify without a cookie: %d", ans.code)
	}
	box, alice := a.logIn("s3cret pass")
	ans := a.verify(alice)
	if ans.code != 204 || ans.header.Get("X-Agent-Box-User") != "alice" || ans.header.Get("X-Agent-Box-Session") != strings.Split(alice, ".")[0] {
		t.Errorf("verify: %d %q", ans.code, ans.header)
	}
	if ans := a.do("pages", "GET", "alice.box.test", "/verify?user=alice", nil, alice); ans.code != 404 {
		t.Errorf("/verify on the pages socket: %d", ans.code)
	}
	if ans := a.do("verify", "GET", "box.test", "/", nil, box); ans.code != 404 {
		t.Errorf("a page on the verify socket: %d", ans.code)
	}
	ans = a.do("pages", "POST", "box.test", "/auth/login", url.Values{"login": {"ops"}, "password": {"wrong"}}, "")
	if ans.code != 401 {
		t.Errorf("a wrong password: %d", ans.code)
	}
	a.stop()
	if got := a.log.String(); !strings.Contains(got, "agent-box-auth: login failed login=ops addr=192.0.2.7\n") {
		t.Errorf("stderr lacks the failed-login line:\n%s", got)
	}
	fi, err := os.Stat(filepath.Join(a.dir, "state", "sessions.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("sessions.json: %v %v", fi, err)
	}
	a.start()
	if ans := a.verify(alice); ans.code != 204 {
		t.Errorf("verify after a restart: %d", ans.code)
	}
	if ans := a.do("pages", "GET", "box.test", "/", nil, box); !strings.Contains(ans.body, "Logged in as ops") {
		t.Errorf("the box session after a restart:\n%s", ans.body)
	}
}

// TestWebRevokeThroughTheControlSocket, and its failures.
func TestWebRevokeThroughTheControlSocket(t *testing.T) {
	h := newAuthBox(t, authConfig, nil).hashPassword("pw")
	a := newAuthBox(t, authConfig, map[string]string{"ops": h})
	a.start()
	_, alice := a.logIn("pw")
	_, alice2 := a.logIn("pw")
	r := a.run("", "web", "revoke", "ops")
	if r.code != 0 || r.stdout != "4\n" || r.stderr != "" {
		t.Errorf("revoke: exit %d, stdout %q, stderr %q; want 0 and 4 sessions", r.code, r.stdout, r.stderr)
	}
	if a.verify(alice).code != 401 || a.verify(alice2).code != 401 {
		t.Error("a revoked session is alive")
	}
	if r := a.run("", "web", "revoke", "ops"); r.code != 0 || r.stdout != "0\n" {
		t.Errorf("again: exit %d, stdout %q", r.code, r.stdout)
	}
	if r := a.run("", "web", "revoke", "Ops;rm"); r.code != 2 || !strings.Contains(r.stderr, "is not a login name") {
		t.Errorf("a bad login: exit %d\n%s", r.code, r.stderr)
	}
	a.stop()
	os.Remove(a.socks["control"])
	r = a.run("", "web", "revoke", "ops")
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if r.code != 1 || len(lines) != 2 || !strings.HasPrefix(lines[0], "agent-box: the auth service is unreachable on ") ||
		!strings.HasPrefix(lines[1], "hint: the auth service may not run") {
		t.Errorf("no service: exit %d\n%s", r.code, r.stderr)
	}
}

// TestAuthServeRefusesABadConfigurationWithExit12: the service does not
// start, and says why on one line.
func TestAuthServeRefusesABadConfigurationWithExit12(t *testing.T) {
	good := newAuthBox(t, authConfig, nil).hashPassword("pw")
	weak := strings.Replace(good, "i=600000", "i=100000", 1)
	for _, tc := range []struct {
		name, config string
		hashes       map[string]string
		env          []string
		want         string
	}{
		{"unknown field", `{"domain": "box.test", "users": [], "tls": "internal"}`, nil, nil, `unknown field "tls"`},
		{"unknown user in a login", `{"domain": "box.test", "users": ["alice"], "logins": {"ops": {"users": ["bob"]}}}`, map[string]string{"ops": good}, nil, `unknown user "bob"`},
		{"bad duration", `{"domain": "box.test", "users": [], "idleTimeout": "1d"}`, nil, nil, `idleTimeout`},
		{"domain not host[:port]", `{"domain": "https://box.test/", "users": []}`, nil, nil, `domain`},
		{"missing credential", authConfig, nil, nil, `login-ops`},
		{"hash under the floor", authConfig, map[string]string{"ops": weak}, nil, `100000 iterations, fewer than 600000`},
		{"no configuration", authConfig, map[string]string{"ops": good}, []string{"AGENT_BOX_AUTH_CONFIG="}, `AGENT_BOX_AUTH_CONFIG is unset`},
		{"no state directory", authConfig, map[string]string{"ops": good}, []string{"STATE_DIRECTORY="}, `STATE_DIRECTORY is unset`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAuthBox(t, tc.config, tc.hashes)
			a.env = append(a.env, tc.env...)
			r := a.run("", "auth", "serve")
			if r.code != 12 || !strings.HasPrefix(r.stderr, "agent-box: ") || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 12 and one line naming %q", r.code, r.stderr, tc.want)
			}
		})
	}
	t.Run("no sockets", func(t *testing.T) {
		a := newAuthBox(t, authConfig, map[string]string{"ops": good})
		r := a.run("", "auth", "serve")
		if r.code != 1 || !strings.Contains(r.stderr, "no sockets from systemd") {
			t.Errorf("exit %d, stderr %q; want 1", r.code, r.stderr)
		}
	})
}

var hashLine = regexp.MustCompile(`^\$pbkdf2-sha256\$i=600000\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}\n$`)

func TestHashPasswordFromAPipe(t *testing.T) {
	a := newAuthBox(t, authConfig, nil)
	for _, tc := range []struct{ name, stdin, password string }{
		{"a line", "correct horse\n", "correct horse"},
		{"no final newline", "correct horse", "correct horse"},
		{"CRLF", "correct horse\r\n", "correct horse"},
		{"only the first line", "first\nsecond\n", "first"},
		{"spaces kept", "  pw  \n", "  pw  "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.run(tc.stdin, "web", "hash-password")
			if r.code != 0 || !hashLine.MatchString(r.stdout) || r.stderr != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			h, err := pwhash.ParseHash(strings.TrimSuffix(r.stdout, "\n"))
			if err != nil || !h.Verify(tc.password) {
				t.Errorf("the hash does not verify %q: %v", tc.password, err)
			}
		})
	}
	for _, stdin := range []string{"", "\n", "\r\n"} {
		if r := a.run(stdin, "web", "hash-password"); r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "the password is empty") {
			t.Errorf("stdin %q: exit %d, stdout %q, stderr %q", stdin, r.code, r.stdout, r.stderr)
		}
	}
	if r := a.run("", "web", "hash-password", "hunter2"); r.code != 2 || !strings.Contains(r.stderr, "never from arguments") {
		t.Errorf("a password in argv: exit %d\n%s", r.code, r.stderr)
	}
	if r := a.run(strings.Repeat("x", pwhash.MaxLen+1)+"\n", "web", "hash-password"); r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "longer than 4096 bytes") {
		t.Errorf("an over-long password: exit %d\n%s", r.code, r.stderr)
	}
}

// openPTY returns a pseudo-terminal's master and slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatal(e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatal(e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

func echoOn(t *testing.T, f *os.File) bool {
	t.Helper()
	var tio syscall.Termios
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&tio))); e != 0 {
		t.Fatal(e)
	}
	return tio.Lflag&syscall.ECHO != 0
}

// TestHashPasswordFromATerminalTurnsEchoOff: a prompt on stderr, nothing
// echoed, the terminal restored after a line and after SIGINT.
func TestHashPasswordFromATerminalTurnsEchoOff(t *testing.T) {
	a := newAuthBox(t, authConfig, nil)
	for _, interrupt := range []bool{false, true} {
		t.Run(map[bool]string{false: "typed", true: "interrupted"}[interrupt], func(t *testing.T) {
			master, slave := openPTY(t)
			if !echoOn(t, slave) {
				t.Fatal("a new terminal has echo off")
			}
			cmd := exec.Command(testBinary(t), "web", "hash-password")
			cmd.Env = a.env
			var out bytes.Buffer
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &out, slave
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			seen := &syncBuffer{}
			go io.Copy(seen, master)
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(seen.String(), "Password: ") || echoOn(t, slave) {
				if time.Now().After(deadline) {
					t.Fatalf("no prompt with echo off within 10 s; the terminal shows %q", seen.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			if interrupt {
				cmd.Process.Signal(syscall.SIGINT)
			} else {
				master.Write([]byte("secret\n"))
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatal("hash-password did not finish")
			}
			if !echoOn(t, slave) {
				t.Error("the terminal's echo was not restored")
			}
			if interrupt {
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || out.Len() != 0 {
					t.Errorf("interrupted: %v, stdout %q", err, out.String())
				}
				return
			}
			if err != nil {
				t.Fatalf("%v; the terminal shows %q", err, seen.String())
			}
			if strings.Contains(seen.String(), "secret") {
				t.Errorf("the password was echoed: %q", seen.String())
			}
			h, err := pwhash.ParseHash(strings.TrimSuffix(out.String(), "\n"))
			if err != nil || !h.Verify("secret") {
				t.Errorf("stdout %q does not verify the typed password: %v", out.String(), err)
			}
		})
	}
}
