package web

// The world of the daemon's tests: a HOME with a registry, a fake ttyd and
// a fake status socket on unix sockets in a temp directory, and the daemon
// itself behind httptest. The test binary doubles as a fake ttyd run as
// another user (WEB_TEST_FAKE_TTYD=<socket>, see fakeTTYDChild).

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/httpserve"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/registry"
)

func TestMain(m *testing.M) {
	if p := os.Getenv("WEB_TEST_FAKE_TTYD"); p != "" {
		os.Exit(fakeTTYDChild(p))
	}
	if mode := os.Getenv("WEB_TEST_CHILD"); mode != "" {
		os.Exit(processChild(mode))
	}
	os.Exit(m.Run())
}

const (
	testUser   = "alice"
	testDomain = "box.test"
	testHost   = testUser + "." + testDomain
	testOrigin = "https://" + testHost
	sessionA   = "0123456789abcdef0123456789abcdef"
	sessionB   = "fedcba9876543210fedcba9876543210"
	// what a fake ttyd answers; it must never reach a client of a refused peer
	fakeBody = "FAKE-TTYD-BODY"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sockDir is a short temp directory (unix socket paths hold 108 bytes).
func sockDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "abw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// seenRequest is what a fake ttyd received.
type seenRequest struct {
	Method, URI, Host string
	Header            http.Header
}

// fakeTTYD answers HTTP like ttyd does behind -b /term (a page, a token,
// and WebSockets that echo every frame) and records every request.
type fakeTTYD struct {
	path string
	mu   sync.Mutex
	seen []seenRequest
	wsUp int // WebSockets open on the ttyd side
	srv  *http.Server
}

func startFakeTTYD(t testing.TB, path string) *fakeTTYD {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeTTYD{path: path}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve)}
	go f.srv.Serve(l)
	t.Cleanup(func() { f.srv.Close() })
	return f
}

func (f *fakeTTYD) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

func (f *fakeTTYD) openWebSockets() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.wsUp
}

func (f *fakeTTYD) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, seenRequest{r.Method, r.RequestURI, r.Host, r.Header.Clone()})
	f.mu.Unlock()
	if r.Header.Get("Upgrade") != "" {
		c, br, err := wsUpgrade(w, r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.wsUp++
		f.mu.Unlock()
		defer func() {
			c.Close()
			f.mu.Lock()
			f.wsUp--
			f.mu.Unlock()
		}()
		for {
			op, p, err := readFrame(br)
			if err != nil {
				return
			}
			if op == opClose {
				writeFrame(c, opClose, nil, false)
				return
			}
			if err := writeFrame(c, op, p, false); err != nil {
				return
			}
		}
	}
	w.Header().Set("Set-Cookie", "__Host-agentbox=planted; Path=/; Secure")
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "%s %s", fakeBody, r.URL.Path)
}

// fakeStatus is the auth service's status socket: POST /alive answers
// answer(id) and counts the questions per session.
type fakeStatus struct {
	mu     sync.Mutex
	asked  map[string]int
	answer func(id string) int
}

func startFakeStatus(t testing.TB, path string, answer func(id string) int) *fakeStatus {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	fs := &fakeStatus{asked: map[string]int{}, answer: answer}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/alive" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		r.ParseForm()
		id := r.PostForm.Get("session")
		fs.mu.Lock()
		fs.asked[id]++
		answer := fs.answer
		fs.mu.Unlock()
		w.WriteHeader(answer(id))
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return fs
}

func (fs *fakeStatus) count(id string) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.asked[id]
}

func (fs *fakeStatus) setAnswer(answer func(id string) int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.answer = answer
}

// fixture is a daemon of alice with sessions main, other (running agents)
// and park (stopped), a fake ttyd and a fake status socket answering 204.
type fixture struct {
	t      testing.TB
	dir    string // sockets
	env    paths.Env
	ttyd   *fakeTTYD
	status *fakeStatus
	srv    *Server
	web    *httptest.Server
	log    *syncBuffer
}

// acceptAnyUnit replaces the unit check where a test is not about it (the
// test process is not in agent-box-term@alice.service).
func acceptAnyUnit(int) error { return nil }

// acceptAnyProgram replaces the program check likewise.
func acceptAnyProgram(int) error { return nil }

// fakeTTYDPage is the page of fakeTTYDBinary; its script's CSP hash is
// 'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI=' (openssl dgst
// -sha256 -binary of "alert(1)", base64).
const (
	fakeTTYDPage       = "<!DOCTYPE html><html><head><style>body{}</style></head><body><script>alert(1)</script></body></html>"
	fakeTTYDScriptHash = "'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='"
)

// fakeTTYDBinary writes a file shaped like ttyd's binary: code bytes, a
// gzip stream that is no page, then the page compressed, then more bytes.
func fakeTTYDBinary(t testing.TB, dir string) string {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("\x7fELF\x02\x01\x01 code bytes \x1f\x8b\x08 a torn header ")
	zw := gzip.NewWriter(&b)
	zw.Write([]byte("not a page: a beep sound or a font"))
	zw.Close()
	b.WriteString(" more code ")
	zw = gzip.NewWriter(&b)
	zw.Write([]byte(fakeTTYDPage))
	zw.Close()
	b.WriteString(" data after it")
	p := filepath.Join(dir, "ttyd")
	if err := os.WriteFile(p, b.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func newFixture(t testing.TB, edit ...func(*Config)) *fixture {
	t.Helper()
	home := t.TempDir()
	e, err := paths.FromEnv(func(k string) string {
		return map[string]string{"HOME": home, "AGENT_BOX_RUNTIME_DIR": filepath.Join(home, "run")}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	err = registry.Update(context.Background(), e.Registry(), func(r *registry.Registry) error {
		for _, s := range []registry.Session{
			{Name: "main", Agent: "claude"},
			{Name: "other", Agent: `<script>alert("agent")</script>`},
			{Name: "park", Agent: "shell", Stopped: true},
		} {
			s.Cwd, s.Created, s.Updated = home, now, now
			if err := r.Add(s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, dir: sockDir(t), env: e, log: &syncBuffer{}}
	f.ttyd = startFakeTTYD(t, filepath.Join(f.dir, "ttyd.sock"))
	f.status = startFakeStatus(t, filepath.Join(f.dir, "status.sock"), func(string) int { return http.StatusNoContent })
	cfg := Config{
		User: testUser, UID: os.Getuid(), Domain: testDomain, Env: e,
		TTYDSocket: f.ttyd.path, TTYD: fakeTTYDBinary(t, home), StatusSocket: filepath.Join(f.dir, "status.sock"),
		InUnit: acceptAnyUnit, IsTTYD: acceptAnyProgram, AliveInterval: 20 * time.Millisecond, Log: f.log,
	}
	for _, ed := range edit {
		ed(&cfg)
	}
	f.srv, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go f.srv.Alive(ctx)
	// served as Serve serves it: its limits, its headers
	f.web = httptest.NewUnstartedServer(nil)
	f.web.Config = httpserve.Server(ctx, f.srv.listeners(f.web.Listener, nil)[0], f.srv.log.ErrorLog())
	f.web.Start()
	t.Cleanup(func() { cancel(); f.web.Close() })
	return f
}

// header is a request header with alice's identity, as Caddy sends it
// after forward_auth, plus kv pairs (a value "" deletes the key).
func header(kv ...string) http.Header {
	h := http.Header{}
	h.Set("X-Agent-Box-User", testUser)
	h.Set("X-Agent-Box-Session", sessionA)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			h.Del(kv[i])
		} else {
			h.Add(kv[i], kv[i+1])
		}
	}
	return h
}

// do sends one plain request to the daemon and returns status, header and
// body.
func (f *fixture) do(method, path string, h http.Header) (int, http.Header, string) {
	f.t.Helper()
	return f.send(method, path, nil, h)
}

// send is do with a request body.
func (f *fixture) send(method, path string, body io.Reader, h http.Header) (int, http.Header, string) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.web.URL+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Host = testHost
	if host := h.Get("Host"); host != "" { // the client sends req.Host, never Header["Host"]
		req.Host = host
		h = h.Clone()
		h.Del("Host")
	}
	req.Header = h
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(data)
}

// ws opens a WebSocket to the daemon; a 101 leaves conn open (closed at
// the end of the test).
func (f *fixture) ws(path string, h http.Header) (*http.Response, net.Conn, *bufio.Reader) {
	f.t.Helper()
	c, err := net.DialTimeout("tcp", f.web.Listener.Addr().String(), 5*time.Second)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	res, br, err := wsHandshake(c, testHost, path, h)
	if err != nil {
		f.t.Fatal(err)
	}
	c.SetDeadline(time.Time{})
	return res, c, br
}

// echo sends msg as a frame and reads it back through the daemon.
func echo(c net.Conn, br *bufio.Reader, msg string) error {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	if err := writeFrame(c, opBinary, []byte(msg), true); err != nil {
		return err
	}
	op, p, err := readFrame(br)
	if err != nil {
		return err
	}
	if op != opBinary || string(p) != msg {
		return fmt.Errorf("got frame %d %q, want %d %q", op, p, opBinary, msg)
	}
	return nil
}

// hasCredentialHeader names a header of r that must never reach ttyd.
func hasCredentialHeader(h http.Header) string {
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "x-agent-box-") || strings.EqualFold(k, "Cookie") ||
			strings.EqualFold(k, "Authorization") || strings.EqualFold(k, "Proxy-Authorization") {
			return k
		}
	}
	return ""
}
