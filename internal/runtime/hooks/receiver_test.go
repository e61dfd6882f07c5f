package hooks

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/clientaddr"
	"github.com/agent-box/agent-box/internal/runtime/httpserve"
	"github.com/agent-box/agent-box/internal/runtime/journal"
)

func TestMain(m *testing.M) {
	if os.Getenv("HOOKS_TEST_CHILD") == "hook-crash" {
		os.Exit(crashChild())
	}
	os.Exit(m.Run())
}

const (
	testUser   = "alice"
	hookSecret = "s3cret-of-the-gh-hook-0123456789"
)

func testHooks(edit ...func(*Hook)) Config {
	gh := &Hook{Name: "gh", Session: "park", Notify: "event {id}: {file}", MaxBody: 4096,
		Quota: 1 << 20, Retention: time.Hour, Secret: []byte(hookSecret)}
	for _, e := range edit {
		e(gh)
	}
	return Config{Concurrency: 4, Hooks: map[string]*Hook{
		"gh":   gh,
		"cron": {Name: "cron", Session: "main", MaxBody: 4096, Quota: 1 << 20, Retention: time.Hour, Secret: []byte("another-secret-0123456789")},
	}}
}

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

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
	d, err := os.MkdirTemp("", "abh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
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

// receiverFixture is alice's receiver with testHooks, served as the web
// daemon serves its hook listener (httpserve, bounded); woken records the
// deliveries it was told to wake ("hook id").
type receiverFixture struct {
	t     *testing.T
	r     *Receiver
	dir   string
	hook  *httptest.Server
	log   *syncBuffer
	woken chan string
}

func newReceiverFixture(t *testing.T, c Config) *receiverFixture {
	t.Helper()
	f := &receiverFixture{t: t, dir: t.TempDir(), log: &syncBuffer{}, woken: make(chan string, 256)}
	var err error
	f.r, err = NewReceiver(testUser, c, f.dir, journal.New(f.log, "agent-box: web"), func(h *Hook, id, _ string) {
		f.woken <- h.Name + " " + id
	})
	if err != nil {
		t.Fatal(err)
	}
	f.hook = httptest.NewUnstartedServer(nil)
	f.hook.Config = httpserve.Server(context.Background(), httpserve.Listener{Name: "hook", Handler: f.r, Limits: httpserve.Bounded}, nil)
	f.hook.Start()
	t.Cleanup(func() { f.hook.Close(); f.r.Close() })
	return f
}

type answerBody struct {
	ID        string `json:"id"`
	Duplicate bool   `json:"duplicate"`
}

// post sends body to path with header kv pairs.
func (f *receiverFixture) post(path, body string, kv ...string) (int, answerBody, string) {
	f.t.Helper()
	return f.postFrom("", path, body, kv...)
}

// postFrom is post from client (X-Agent-Box-Client, as Caddy sets it;
// "": none).
func (f *receiverFixture) postFrom(client, path, body string, kv ...string) (int, answerBody, string) {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.hook.URL+path, strings.NewReader(body))
	if client != "" {
		req.Header.Set(clientaddr.Header, client)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Add(kv[i], kv[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	var a answerBody
	if res.StatusCode == http.StatusAccepted {
		if err := json.Unmarshal(data, &a); err != nil {
			f.t.Fatalf("202 body %q: %v", data, err)
		}
	}
	return res.StatusCode, a, string(data)
}

// slowRequests starts one POST per path from client whose body never ends
// (one byte, then nothing) and returns what ends them; the test's cleanup
// ends them too, before the server closes (it waits for its requests).
func (f *receiverFixture) slowRequests(client string, paths ...string) (end func()) {
	f.t.Helper()
	var writers []*io.PipeWriter
	var wg sync.WaitGroup
	var once sync.Once
	end = func() {
		once.Do(func() {
			for _, w := range writers {
				w.CloseWithError(io.ErrUnexpectedEOF)
			}
			wg.Wait()
		})
	}
	f.t.Cleanup(end)
	for _, p := range paths {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		req, _ := http.NewRequest("POST", f.hook.URL+p, pr)
		req.Header.Set(clientaddr.Header, client)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
			}
		}()
		pw.Write([]byte("{"))
	}
	return end
}

// stored lists the deliveries of hook in its folder.
func (f *receiverFixture) stored(hook string) []string {
	f.t.Helper()
	ents, err := os.ReadDir(filepath.Join(f.dir, hook))
	if err != nil {
		f.t.Fatal(err)
	}
	var n []string
	for _, e := range ents {
		if e.Name() != SeenLog {
			n = append(n, e.Name())
		}
	}
	sort.Strings(n)
	return n
}

func TestAChunkedBodyOverTheCapIs413WithoutReadingOn(t *testing.T) {
	f := newReceiverFixture(t, testHooks())
	pr, pw := io.Pipe()
	var sent int64
	go func() {
		chunk := []byte(strings.Repeat("y", 1024))
		for i := 0; i < 1024; i++ { // 1 MiB offered
			n, err := pw.Write(chunk)
			sent += int64(n)
			if err != nil {
				return
			}
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", f.hook.URL+"/alice/hook/gh", pr)
	req.Header.Set("X-Hub-Signature-256", sign(hookSecret, "whatever"))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	pr.CloseWithError(io.ErrClosedPipe)
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", res.StatusCode)
	}
	if got := f.stored("gh"); len(got) != 0 {
		t.Errorf("stored %q", got)
	}
}

// countingBody counts what the handler read.
type countingBody struct {
	r io.Reader
	n int
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
func (c *countingBody) Close() error { return nil }

func TestAnUnknownHookCostsWhatABadSignatureCosts(t *testing.T) {
	// The two answers differ in their status only: both read the whole
	// body and put it through HMAC-SHA256 before answering, so the time
	// to a 404 says nothing a 401 does not (BenchmarkHookRefusals
	// measures both).
	f := newReceiverFixture(t, testHooks())
	body := strings.Repeat("z", 4000)
	for _, path := range []string{"/alice/hook/gh", "/alice/hook/unknown"} {
		cb := &countingBody{r: strings.NewReader(body)}
		req := httptest.NewRequest("POST", path, nil)
		req.Body = cb
		req.Header.Set("X-Hub-Signature-256", sign("wrong-secret-0123456789", body))
		w := httptest.NewRecorder()
		f.r.ServeHTTP(w, req)
		if w.Code != 401 && w.Code != 404 {
			t.Fatalf("%s = %d", path, w.Code)
		}
		if cb.n != len(body) {
			t.Errorf("%s (%d) read %d of %d body bytes before answering", path, w.Code, cb.n, len(body))
		}
	}
}

// TestDribblingBodiesHoldNoDeliverySlot: fault 3 of the attack (issue
// 17). Bodies that never finish, to a hook and to names that are none,
// from a client that knows the URL, while every delivery slot could be
// theirs: a signed delivery from another client is answered 202 while
// they are still being read.
func TestDribblingBodiesHoldNoDeliverySlot(t *testing.T) {
	c := testHooks()
	c.Concurrency = 2
	f := newReceiverFixture(t, c)
	var paths []string
	for i := 0; i < 10; i++ {
		paths = append(paths, "/alice/hook/gh")
	}
	for i := 0; i < 4; i++ {
		paths = append(paths, fmt.Sprintf("/alice/hook/junk%d", i))
	}
	end := f.slowRequests("198.51.100.1", paths...)
	waitFor(t, 5*time.Second, "14 bodies being read", func() bool { return f.r.readers.readers() == 14 })
	body := `{"a":1}`
	if code, _, raw := f.postFrom("203.0.113.5", "/alice/hook/gh", body, "X-Hub-Signature-256", sign(hookSecret, body)); code != 202 {
		t.Errorf("a signed delivery while 14 bodies dribble in: %d %q, want 202", code, raw)
	}
	if n := f.r.readers.readers(); n != 14 {
		t.Errorf("%d bodies were still being read after the answer, want 14", n)
	}
	end()
}

// TestABodyNotInWithinTheTimeoutIsGivenUp: its reader is free again, the
// client gets 400 and the log says so.
func TestABodyNotInWithinTheTimeoutIsGivenUp(t *testing.T) {
	f := newReceiverFixture(t, testHooks())
	f.r.timeout = 100 * time.Millisecond
	f.slowRequests("198.51.100.1", "/alice/hook/gh")
	waitFor(t, 5*time.Second, "the body given up", func() bool {
		return strings.Contains(f.log.String(), `refused hook-slow: POST "/alice/hook/gh": the body was not in within 100ms (client 198.51.100.1)`)
	})
	waitFor(t, 5*time.Second, "its reader free", func() bool { return f.r.readers.readers() == 0 })
	if got := f.stored("gh"); len(got) != 0 {
		t.Errorf("stored %q", got)
	}
}

// TestAClientReadsAtMostItsShareOfBodies: beyond its share a client waits
// for one of its own readers, then gets 503; other clients are not held.
func TestAClientReadsAtMostItsShareOfBodies(t *testing.T) {
	f := newReceiverFixture(t, testHooks())
	f.r.readers = newReadGate(2, 100, readBudget)
	f.r.wait = 50 * time.Millisecond
	end := f.slowRequests("198.51.100.1", "/alice/hook/gh", "/alice/hook/gh")
	waitFor(t, 5*time.Second, "two bodies being read", func() bool { return f.r.readers.readers() == 2 })
	body := `{"a":1}`
	sig := sign(hookSecret, body)
	if code, _, raw := f.postFrom("198.51.100.1", "/alice/hook/gh", body, "X-Hub-Signature-256", sig); code != 503 {
		t.Errorf("a third body from the same client: %d %q, want 503", code, raw)
	}
	for _, other := range []string{"198.51.100.2", "2001:db8::1"} {
		if code, _, raw := f.postFrom(other, "/alice/hook/gh", body, "X-Hub-Signature-256", sig); code != 202 {
			t.Errorf("from %s: %d %q, want 202", other, code, raw)
		}
	}
	end()
	if code, _, raw := f.postFrom("198.51.100.1", "/alice/hook/gh", `{"b":2}`, "X-Hub-Signature-256", sign(hookSecret, `{"b":2}`)); code != 202 {
		t.Errorf("the first client again, after its bodies ended: %d %q", code, raw)
	}
}

// TestAllReadersTogetherAreBounded: a flood from many clients gets 503
// beyond the readers of all clients together, and no more goroutines read.
func TestAllReadersTogetherAreBounded(t *testing.T) {
	f := newReceiverFixture(t, testHooks())
	f.r.readers = newReadGate(10, 3, readBudget)
	f.r.wait = 50 * time.Millisecond
	for i := 0; i < 3; i++ {
		f.slowRequests(fmt.Sprintf("198.51.100.%d", i+1), "/alice/hook/gh")
	}
	waitFor(t, 5*time.Second, "three bodies being read", func() bool { return f.r.readers.readers() == 3 })
	body := `{"a":1}`
	if code, _, raw := f.postFrom("198.51.100.9", "/alice/hook/gh", body, "X-Hub-Signature-256", sign(hookSecret, body)); code != 503 {
		t.Errorf("a fourth client: %d %q, want 503", code, raw)
	}
}

// TestTheBytesBeingReadAreBounded: the bodies being read hold at most the
// budget; a body that would need more gets 503, and the bytes are given
// back when a body is done.
func TestTheBytesBeingReadAreBounded(t *testing.T) {
	f := newReceiverFixture(t, testHooks())
	// each body reserves its cap (4096 bytes) and one more, not a whole chunk
	per := int64(4097)
	f.r.readers = newReadGate(10, 10, 2*per)
	end := f.slowRequests("198.51.100.1", "/alice/hook/gh", "/alice/hook/cron")
	waitFor(t, 5*time.Second, "two bodies' bytes reserved", func() bool { return f.r.readers.reserved() == 2*per })
	body := `{"a":1}`
	if code, _, raw := f.postFrom("198.51.100.2", "/alice/hook/gh", body, "X-Hub-Signature-256", sign(hookSecret, body)); code != 503 {
		t.Errorf("with the budget held: %d %q, want 503", code, raw)
	}
	end()
	waitFor(t, 5*time.Second, "the bytes given back", func() bool { return f.r.readers.reserved() == 0 })
	if code, _, raw := f.postFrom("198.51.100.2", "/alice/hook/gh", body, "X-Hub-Signature-256", sign(hookSecret, body)); code != 202 {
		t.Errorf("after: %d %q, want 202", code, raw)
	}
}

// TestDeliverySlotsBoundTheStoring: Concurrency signed deliveries are
// stored at once; another waits for a slot, then gets 503 and nothing is
// stored for it.
func TestDeliverySlotsBoundTheStoring(t *testing.T) {
	c := testHooks()
	c.Concurrency = 1
	f := newReceiverFixture(t, c)
	f.r.wait = 50 * time.Millisecond
	inWrite, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.r.hooks["gh"].store.Fault = func(step string) error {
		if step == "synced" {
			once.Do(func() { close(inWrite); <-release })
		}
		return nil
	}
	first := make(chan int)
	go func() {
		code, _, _ := f.post("/alice/hook/gh", `{"n":1}`, "X-Hub-Signature-256", sign(hookSecret, `{"n":1}`))
		first <- code
	}()
	<-inWrite
	if code, _, raw := f.post("/alice/hook/gh", `{"n":2}`, "X-Hub-Signature-256", sign(hookSecret, `{"n":2}`)); code != 503 {
		t.Errorf("a second delivery while the first is stored: %d %q, want 503", code, raw)
	}
	close(release)
	if code := <-first; code != 202 {
		t.Errorf("the first: %d", code)
	}
	if got := f.stored("gh"); len(got) != 1 {
		t.Errorf("stored %q, want the first only", got)
	}
}

func TestAFullQuotaAnswers503AndNeverA2xx(t *testing.T) {
	f := newReceiverFixture(t, testHooks(func(h *Hook) { h.Quota = 4096 + 600 }))
	var codes []int
	for i := 0; i < 20; i++ {
		body := fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("p", 900))
		code, _, _ := f.post("/alice/hook/gh", body, "X-Hub-Signature-256", sign(hookSecret, body))
		codes = append(codes, code)
	}
	n202 := strings.Count(fmt.Sprint(codes), "202")
	if n202 == 0 || n202 == 20 || codes[19] != 503 {
		t.Fatalf("answers %v: want some 202, then 503", codes)
	}
	if got := f.stored("gh"); len(got) != n202 {
		t.Errorf("%d stored for %d answers 202: %q", len(got), n202, got)
	}
	if !strings.Contains(f.log.String(), "storage is full") {
		t.Errorf("log:\n%s", f.log)
	}
}

// crashChild serves testHooks' gh hook on the unix socket
// $HOOKS_TEST_HOOK_SOCK with its folder in $HOOKS_TEST_HOOK_DIR, and exits
// with status 3 (a crash: nothing flushed, nothing answered) at write step
// $HOOKS_TEST_HOOK_CRASH.
func crashChild() int {
	dir, step := os.Getenv("HOOKS_TEST_HOOK_DIR"), os.Getenv("HOOKS_TEST_HOOK_CRASH")
	c := testHooks()
	r, err := NewReceiver(testUser, c, dir, journal.New(nil, "test"), nil)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	r.hooks["gh"].store.Fault = func(s string) error {
		if s == step {
			os.Exit(3)
		}
		return nil
	}
	l, err := net.Listen("unix", os.Getenv("HOOKS_TEST_HOOK_SOCK"))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("listening")
	http.Serve(l, r)
	return 1
}

func TestACrashBetweenTheWriteAndTheAnswerLosesNothingAcknowledged(t *testing.T) {
	for _, tc := range []struct {
		step       string
		wantStored bool // the delivery is on disk after the crash
	}{
		{"synced", false},   // crash before the rename: no file, no answer; the retry stores it
		{"renamed", true},   // before the folder's fsync: the name may be lost on a power cut, but no answer was given
		{"dirsynced", true}, // durable, then the crash before the answer: the retry gets the stored id
	} {
		t.Run(tc.step, func(t *testing.T) {
			home := t.TempDir()
			dir := filepath.Join(home, "hooks")
			os.Mkdir(dir, 0o700)
			sock := filepath.Join(sockDir(t), "hook.sock")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "HOOKS_TEST_CHILD=hook-crash", "HOOKS_TEST_HOOK_DIR="+dir,
				"HOOKS_TEST_HOOK_CRASH="+tc.step, "HOOKS_TEST_HOOK_SOCK="+sock)
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			if l, _ := bufio.NewReader(out).ReadString('\n'); l != "listening\n" {
				t.Fatalf("child: %q", l)
			}
			c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", sock)
			}}}
			body := `{"crash":"` + tc.step + `"}`
			req, _ := http.NewRequest("POST", "http://hook/alice/hook/gh", strings.NewReader(body))
			req.Header.Set("X-Hub-Signature-256", sign(hookSecret, body))
			res, err := c.Do(req)
			if err == nil {
				res.Body.Close()
				t.Fatalf("an answer %d came from a process that crashed before answering", res.StatusCode)
			}
			werr := cmd.Wait()
			if ee, ok := werr.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
				t.Fatalf("child ended with %v, want the injected crash (3)", werr)
			}
			names, _ := filepath.Glob(filepath.Join(dir, "gh", "*.json"))
			if (len(names) == 1) != tc.wantStored || len(names) > 1 {
				t.Fatalf("after the crash: %q stored, want stored=%v", names, tc.wantStored)
			}
			// restart: the sender retries the delivery it got no answer for
			r, err := NewReceiver(testUser, testHooks(), dir, journal.New(nil, "test"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if tmp, _ := filepath.Glob(filepath.Join(dir, "gh", ".tmp-*")); len(tmp) != 0 {
				t.Errorf("the restart left unfinished writes: %q", tmp)
			}
			rec := httptest.NewRecorder()
			req = httptest.NewRequest("POST", "/alice/hook/gh", strings.NewReader(body))
			req.Header.Set("X-Hub-Signature-256", sign(hookSecret, body))
			r.ServeHTTP(rec, req)
			var a answerBody
			json.Unmarshal(rec.Body.Bytes(), &a)
			if rec.Code != 202 || a.Duplicate != tc.wantStored {
				t.Fatalf("retry = %d %s, want 202 with duplicate=%v", rec.Code, rec.Body, tc.wantStored)
			}
			after, _ := filepath.Glob(filepath.Join(dir, "gh", "*.json"))
			if len(after) != 1 || filepath.Base(after[0]) != a.ID+".json" {
				t.Errorf("after the retry: %q, answered id %s", after, a.ID)
			}
		})
	}
}

// benchDiskDir is where the delivery benchmark stores: the real disk
// ($AGENT_BOX_HOOK_BENCH_DIR, else the package directory), never a tmpfs,
// whose fsync costs nothing.
func benchDiskDir(b *testing.B) string {
	b.Helper()
	base := os.Getenv("AGENT_BOX_HOOK_BENCH_DIR")
	if base == "" {
		base = "."
	}
	dir, err := os.MkdirTemp(base, "hook-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		b.Fatal(err)
	}
	if st.Type == 0x01021994 { // TMPFS_MAGIC
		b.Fatalf("%s is on tmpfs: set AGENT_BOX_HOOK_BENCH_DIR to a directory on a disk", dir)
	}
	return dir
}

// BenchmarkHookDelivery measures a signed 4 KiB delivery answered 202,
// fsyncs included, over the hook listener's unix socket (as Caddy reaches
// it), one at a time, 100 at once, and one at a time while 50 bodies from
// five other clients dribble in (issue 17: a 202 within 100 ms). It
// reports p50, p99 and the slowest time to the answer; the target is a
// p99 under 20 ms.
func BenchmarkHookDelivery(b *testing.B) {
	c := testHooks(func(h *Hook) { h.Quota = 1 << 40; h.MaxBody = 1 << 20; h.Notify = "" })
	c.Concurrency = 8
	home := benchDiskDir(b)
	dir := filepath.Join(home, "hooks")
	os.Mkdir(dir, 0o700)
	r, err := NewReceiver(testUser, c, dir, journal.New(nil, "test"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	sock := filepath.Join(sockDir(b), "hook.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: r}
	go srv.Serve(l)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	pad := strings.Repeat("x", 4000)
	var seq atomic.Int64
	deliver := func() time.Duration {
		body := fmt.Sprintf(`{"n":%d,"pad":"%s"}`, seq.Add(1), pad)
		req, _ := http.NewRequest("POST", "http://hook/alice/hook/gh", strings.NewReader(body))
		req.Header.Set("X-Hub-Signature-256", sign(hookSecret, body))
		t0 := time.Now()
		res, err := client.Do(req)
		d := time.Since(t0)
		if err != nil {
			b.Error(err)
			return d
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 202 {
			b.Errorf("status %d", res.StatusCode)
		}
		return d
	}
	report := func(b *testing.B, ds []time.Duration) {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		q := func(f float64) float64 {
			return float64(ds[min(len(ds)-1, int(f*float64(len(ds))))].Microseconds()) / 1000
		}
		b.ReportMetric(q(0.5), "p50-ms")
		b.ReportMetric(q(0.99), "p99-ms")
		b.ReportMetric(float64(ds[len(ds)-1].Microseconds())/1000, "max-ms")
	}
	b.Run("sequential", func(b *testing.B) {
		ds := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			ds = append(ds, deliver())
		}
		report(b, ds)
	})
	b.Run("sequential-while-50-bodies-dribble", func(b *testing.B) {
		var writers []*io.PipeWriter
		var wg sync.WaitGroup
		for i := 0; i < 50; i++ {
			pr, pw := io.Pipe()
			writers = append(writers, pw)
			req, _ := http.NewRequest("POST", "http://hook/alice/hook/gh", pr)
			req.Header.Set(clientaddr.Header, fmt.Sprintf("198.51.100.%d", i%5+1))
			wg.Add(1)
			go func() {
				defer wg.Done()
				if res, err := client.Do(req); err == nil {
					res.Body.Close()
				}
			}()
			go pw.Write([]byte("{"))
		}
		for deadline := time.Now().Add(10 * time.Second); r.readers.readers() < 50; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("only %d of 50 bodies are being read", r.readers.readers())
			}
		}
		b.ResetTimer()
		ds := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			ds = append(ds, deliver())
		}
		b.StopTimer()
		if n := r.readers.readers(); n != 50 {
			b.Errorf("%d bodies were being read at the end, want 50", n)
		}
		report(b, ds)
		for _, w := range writers {
			w.CloseWithError(io.ErrUnexpectedEOF)
		}
		wg.Wait()
	})
	b.Run("100-concurrent", func(b *testing.B) {
		var all []time.Duration
		for i := 0; i < b.N; i++ {
			ds := make([]time.Duration, 100)
			var wg sync.WaitGroup
			for j := range ds {
				wg.Add(1)
				go func() { defer wg.Done(); ds[j] = deliver() }()
			}
			wg.Wait()
			all = append(all, ds...)
		}
		report(b, all)
	})
}

// BenchmarkHookRefusals compares the time to a 401 (a known hook, a bad
// signature) with the time to a 404 (an unknown hook) for the same 64 KiB
// body: they should be the same class.
func BenchmarkHookRefusals(b *testing.B) {
	c := testHooks(func(h *Hook) { h.MaxBody = 1 << 20 })
	dir := filepath.Join(b.TempDir(), "hooks")
	os.Mkdir(dir, 0o700)
	r, err := NewReceiver(testUser, c, dir, journal.New(nil, "test"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	body := strings.Repeat("z", 64<<10)
	for _, tc := range []struct{ name, path string }{{"401-known-hook", "/alice/hook/gh"}, {"404-unknown-hook", "/alice/hook/unknown"}} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest("POST", tc.path, strings.NewReader(body))
				req.Header.Set("X-Hub-Signature-256", sign("wrong-secret-0123456789", body))
				w := httptest.NewRecorder()
				r.ServeHTTP(w, req)
				if w.Code != 401 && w.Code != 404 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}

func TestKeptHeadersStayWithinTheStoredBounds(t *testing.T) {
	h := http.Header{}
	for i := 0; i < 40; i++ {
		h.Set(fmt.Sprintf("X-Event-%d", i), strings.Repeat("v", 2000))
	}
	h.Set("X-Hub-Signature-256", "sha256=00")
	h.Set("Cookie", "a=b")
	got := keptHeaders(h)
	if len(got) != MaxKeptHeaders {
		t.Errorf("%d headers kept, want %d", len(got), MaxKeptHeaders)
	}
	for k, v := range got {
		if len(k) > MaxHeaderName || len(v) > MaxHeaderValue {
			t.Errorf("kept %q (%d bytes of value): over the bounds", k, len(v))
		}
		if k == "X-Hub-Signature-256" || k == "Cookie" {
			t.Errorf("kept %s", k)
		}
	}
	long := http.Header{"X-" + strings.Repeat("N", MaxHeaderName): {"a name too long"}, "X-Github-Event": {"push"}}
	if got := keptHeaders(long); len(got) != 1 || got["X-Github-Event"] != "push" {
		t.Errorf("kept %q, want only X-Github-Event", got)
	}
}
