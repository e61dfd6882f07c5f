package web

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
	"github.com/agent-box/agent-box/internal/runtime/hooks"
	"github.com/agent-box/agent-box/internal/runtime/registry"
)

const hookSecret = "s3cret-of-the-gh-hook-0123456789"

func testHooks(edit ...func(*hooks.Hook)) hooks.Config {
	gh := &hooks.Hook{Name: "gh", Session: "park", Notify: "event {id}: {file}", MaxBody: 4096,
		Quota: 1 << 20, Retention: time.Hour, Secret: []byte(hookSecret)}
	for _, e := range edit {
		e(gh)
	}
	return hooks.Config{Concurrency: 4, Hooks: map[string]*hooks.Hook{
		"gh":   gh,
		"cron": {Name: "cron", Session: "main", MaxBody: 4096, Quota: 1 << 20, Retention: time.Hour, Secret: []byte("another-secret-0123456789")},
	}}
}

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// hookFixture is the daemon of alice with testHooks on its hook listener.
type hookFixture struct {
	*fixture
	hook  *httptest.Server
	typed chan string // what the waker typed, "session: text"
}

func newHookFixture(t *testing.T, c hooks.Config) *hookFixture {
	t.Helper()
	typed := make(chan string, 16)
	var f *fixture
	f = newFixture(t, func(cfg *Config) {
		cfg.Hooks = c
		cfg.HooksDir = filepath.Join(cfg.Env.Home, ".local/state/agent-box/hooks")
		cfg.WakeSettle = time.Millisecond
		if err := os.MkdirAll(cfg.HooksDir, 0o700); err != nil {
			t.Fatal(err)
		}
	})
	f.srv.waker.typeIn = func(_ context.Context, session, text string) error {
		typed <- session + ": " + text
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	woken := make(chan struct{})
	go func() { f.srv.Wake(ctx); close(woken) }()
	hf := &hookFixture{fixture: f, hook: httptest.NewServer(f.srv.Hooks()), typed: typed}
	// The waker may still be starting a session (a registry write in the
	// home) when a test ends: wait for it before the home is removed.
	t.Cleanup(func() { cancel(); hf.hook.Close(); f.srv.hooks.close(); <-woken })
	return hf
}

type hookAnswerBody struct {
	ID        string `json:"id"`
	Duplicate bool   `json:"duplicate"`
}

// post sends body to path on the hook listener with header kv pairs.
func (f *hookFixture) post(path, body string, kv ...string) (int, hookAnswerBody, string) {
	f.t.Helper()
	return f.postFrom("", path, body, kv...)
}

// postFrom is post from client (X-Agent-Box-Client, as Caddy sets it;
// "": none).
func (f *hookFixture) postFrom(client, path, body string, kv ...string) (int, hookAnswerBody, string) {
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
	var a hookAnswerBody
	if res.StatusCode == http.StatusAccepted {
		if err := json.Unmarshal(data, &a); err != nil {
			f.t.Fatalf("202 body %q: %v", data, err)
		}
	}
	return res.StatusCode, a, string(data)
}

// slowRequests starts one POST per path from client whose body never ends
// (one byte, then nothing) and returns what ends them; the test's cleanup
// ends them too, before the servers close (they wait for their requests).
func (f *hookFixture) slowRequests(client string, paths ...string) (end func()) {
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

func (f *hookFixture) stored(hook string) []string {
	f.t.Helper()
	ents, err := os.ReadDir(filepath.Join(f.env.HooksDir(), hook))
	if err != nil {
		f.t.Fatal(err)
	}
	var n []string
	for _, e := range ents {
		if e.Name() != hooks.SeenLog {
			n = append(n, e.Name())
		}
	}
	sort.Strings(n)
	return n
}

func TestASignedDeliveryIsStoredAnsweredWithItsIDAndWakesTheSession(t *testing.T) {
	f := newHookFixture(t, testHooks())
	body := `{"action":"created","comment":{"body":"please fix the build"}}`
	code, a, raw := f.post("/alice/hook/gh", body, "X-Hub-Signature-256", sign(hookSecret, body),
		"X-GitHub-Event", "issue_comment", "X-GitHub-Delivery", "d-1", "Content-Type", "application/json",
		"X-Agent-Box-User", "bob", "Cookie", "a=b")
	if code != http.StatusAccepted || a.ID == "" || a.Duplicate {
		t.Fatalf("POST = %d %q", code, raw)
	}
	if got := f.stored("gh"); len(got) != 1 || got[0] != a.ID+".json" {
		t.Fatalf("stored %q, want %s.json", got, a.ID)
	}
	data, _ := os.ReadFile(filepath.Join(f.env.HooksDir(), "gh", a.ID+".json"))
	var d hooks.Delivery
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if string(d.Body) != body || d.Headers["X-Github-Event"] != "issue_comment" || d.Headers["X-Github-Delivery"] != "d-1" {
		t.Errorf("stored %s", data)
	}
	for _, h := range []string{"X-Hub-Signature-256", "X-Agent-Box-User", "Cookie"} {
		if _, ok := d.Headers[http.CanonicalHeaderKey(h)]; ok {
			t.Errorf("header %s stored", h)
		}
	}
	waitFor(t, 5*time.Second, "the stopped session park started", func() bool {
		r, err := registry.Load(f.env.Registry())
		s, _ := r.Find("park")
		return err == nil && !s.Stopped
	})
	select {
	case got := <-f.typed:
		want := "park: event " + a.ID + ": " + filepath.Join(f.env.HooksDir(), "gh", a.ID+".json")
		if got != want {
			t.Errorf("typed %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("notify not typed; log:\n%s", f.log)
	}
}

func TestARepeatedBodyChangesNothingAndGetsTheStoredID(t *testing.T) {
	f := newHookFixture(t, testHooks())
	body := `{"n":1}`
	_, first, _ := f.post("/alice/hook/gh", body, "X-Hub-Signature-256", sign(hookSecret, body), "X-GitHub-Delivery", "d-1")
	<-f.typed
	// the sender's retry, or a replay under a fresh delivery id
	code, again, raw := f.post("/alice/hook/gh", body, "X-Hub-Signature-256", sign(hookSecret, body), "X-GitHub-Delivery", "d-2")
	if code != http.StatusAccepted || again.ID != first.ID || !again.Duplicate {
		t.Fatalf("repeat = %d %q, want 202 with id %s", code, raw, first.ID)
	}
	if got := f.stored("gh"); len(got) != 1 {
		t.Errorf("stored %q, want one delivery", got)
	}
	select {
	case got := <-f.typed:
		t.Errorf("a repeat was typed into the session: %q", got)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestRefusedDeliveriesStoreNothingAndWakeNothing(t *testing.T) {
	body := `{"a":1}`
	big := strings.Repeat("x", 4097)
	for _, tc := range []struct {
		name, method, path, body string
		kv                       []string
		want                     int
	}{
		{"no signature", "POST", "/alice/hook/gh", body, nil, 401},
		{"another hook's secret", "POST", "/alice/hook/gh", body, []string{"X-Hub-Signature-256", sign("another-secret-0123456789", body)}, 401},
		{"signature of another body", "POST", "/alice/hook/gh", body, []string{"X-Hub-Signature-256", sign(hookSecret, `{"a":2}`)}, 401},
		{"two signatures", "POST", "/alice/hook/gh", body, []string{"X-Hub-Signature-256", sign(hookSecret, body), "X-Hub-Signature-256", sign(hookSecret, body)}, 401},
		{"upper-case hex", "POST", "/alice/hook/gh", body, []string{"X-Hub-Signature-256", "sha256=" + strings.ToUpper(strings.TrimPrefix(sign(hookSecret, body), "sha256="))}, 202},
		{"sha1 only", "POST", "/alice/hook/gh", body, []string{"X-Hub-Signature", "sha1=0000000000000000000000000000000000000000"}, 401},
		{"unknown hook", "POST", "/alice/hook/nope", body, []string{"X-Hub-Signature-256", sign(hookSecret, body)}, 404},
		{"another user's path", "POST", "/bob/hook/gh", body, []string{"X-Hub-Signature-256", sign(hookSecret, body)}, 404},
		{"encoded name", "POST", "/alice/hook/g%68", body, []string{"X-Hub-Signature-256", sign(hookSecret, body)}, 404},
		{"a path below the hook", "POST", "/alice/hook/gh/x", body, []string{"X-Hub-Signature-256", sign(hookSecret, body)}, 404},
		{"GET", "GET", "/alice/hook/gh", "", nil, 405},
		{"over the cap", "POST", "/alice/hook/gh", big, []string{"X-Hub-Signature-256", sign(hookSecret, big)}, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newHookFixture(t, testHooks())
			req, _ := http.NewRequest(tc.method, f.hook.URL+tc.path, strings.NewReader(tc.body))
			for i := 0; i+1 < len(tc.kv); i += 2 {
				req.Header.Add(tc.kv[i], tc.kv[i+1])
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tc.want {
				t.Fatalf("%s %s = %d, want %d", tc.method, tc.path, res.StatusCode, tc.want)
			}
			if tc.want == 202 {
				return // the control: the table's requests differ from a good one only where named
			}
			if got := f.stored("gh"); len(got) != 0 {
				t.Errorf("stored %q", got)
			}
			time.Sleep(50 * time.Millisecond)
			if r, _ := registry.Load(f.env.Registry()); func() bool { s, _ := r.Find("park"); return !s.Stopped }() {
				t.Error("a refused delivery started the session")
			}
		})
	}
}

func TestAChunkedBodyOverTheCapIs413WithoutReadingOn(t *testing.T) {
	f := newHookFixture(t, testHooks())
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
	f := newHookFixture(t, testHooks())
	body := strings.Repeat("z", 4000)
	for _, path := range []string{"/alice/hook/gh", "/alice/hook/unknown"} {
		cb := &countingBody{r: strings.NewReader(body)}
		req := httptest.NewRequest("POST", path, nil)
		req.Body = cb
		req.Header.Set("X-Hub-Signature-256", sign("wrong-secret-0123456789", body))
		w := httptest.NewRecorder()
		f.srv.Hooks().ServeHTTP(w, req)
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
	f := newHookFixture(t, c)
	var paths []string
	for i := 0; i < 10; i++ {
		paths = append(paths, "/alice/hook/gh")
	}
	for i := 0; i < 4; i++ {
		paths = append(paths, fmt.Sprintf("/alice/hook/junk%d", i))
	}
	end := f.slowRequests("198.51.100.1", paths...)
	waitFor(t, 5*time.Second, "14 bodies being read", func() bool { return f.srv.hooks.readers.readers() == 14 })
	body := `{"a":1}`
	if code, _, raw := f.postFrom("203.0.113.5", "/alice/hook/gh", body, "X-Hub-Signature-256", sign(hookSecret, body)); code != 202 {
		t.Errorf("a signed delivery while 14 bodies dribble in: %d %q, want 202", code, raw)
	}
	if n := f.srv.hooks.readers.readers(); n != 14 {
		t.Errorf("%d bodies were still being read after the answer, want 14", n)
	}
	end()
}

// TestABodyNotInWithinTheTimeoutIsGivenUp: its reader is free again, the
// client gets 400 and the log says so.
func TestABodyNotInWithinTheTimeoutIsGivenUp(t *testing.T) {
	f := newHookFixture(t, testHooks())
	f.srv.hooks.timeout = 100 * time.Millisecond
	f.slowRequests("198.51.100.1", "/alice/hook/gh")
	waitFor(t, 5*time.Second, "the body given up", func() bool {
		return strings.Contains(f.log.String(), `refused hook-slow: POST "/alice/hook/gh": the body was not in within 100ms (client 198.51.100.1)`)
	})
	waitFor(t, 5*time.Second, "its reader free", func() bool { return f.srv.hooks.readers.readers() == 0 })
	if got := f.stored("gh"); len(got) != 0 {
		t.Errorf("stored %q", got)
	}
}

// TestAClientReadsAtMostItsShareOfBodies: beyond its share a client waits
// for one of its own readers, then gets 503; other clients are not held.
func TestAClientReadsAtMostItsShareOfBodies(t *testing.T) {
	f := newHookFixture(t, testHooks())
	f.srv.hooks.readers = newReadGate(2, 100, hookReadBudget)
	f.srv.hooks.wait = 50 * time.Millisecond
	end := f.slowRequests("198.51.100.1", "/alice/hook/gh", "/alice/hook/gh")
	waitFor(t, 5*time.Second, "two bodies being read", func() bool { return f.srv.hooks.readers.readers() == 2 })
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
	f := newHookFixture(t, testHooks())
	f.srv.hooks.readers = newReadGate(10, 3, hookReadBudget)
	f.srv.hooks.wait = 50 * time.Millisecond
	for i := 0; i < 3; i++ {
		f.slowRequests(fmt.Sprintf("198.51.100.%d", i+1), "/alice/hook/gh")
	}
	waitFor(t, 5*time.Second, "three bodies being read", func() bool { return f.srv.hooks.readers.readers() == 3 })
	body := `{"a":1}`
	if code, _, raw := f.postFrom("198.51.100.9", "/alice/hook/gh", body, "X-Hub-Signature-256", sign(hookSecret, body)); code != 503 {
		t.Errorf("a fourth client: %d %q, want 503", code, raw)
	}
}

// TestTheBytesBeingReadAreBounded: the bodies being read hold at most the
// budget; a body that would need more gets 503, and the bytes are given
// back when a body is done.
func TestTheBytesBeingReadAreBounded(t *testing.T) {
	f := newHookFixture(t, testHooks())
	// each body reserves its cap (4096 bytes) and one more, not a whole chunk
	per := int64(4097)
	f.srv.hooks.readers = newReadGate(10, 10, 2*per)
	end := f.slowRequests("198.51.100.1", "/alice/hook/gh", "/alice/hook/cron")
	waitFor(t, 5*time.Second, "two bodies' bytes reserved", func() bool { return f.srv.hooks.readers.reserved() == 2*per })
	body := `{"a":1}`
	if code, _, raw := f.postFrom("198.51.100.2", "/alice/hook/gh", body, "X-Hub-Signature-256", sign(hookSecret, body)); code != 503 {
		t.Errorf("with the budget held: %d %q, want 503", code, raw)
	}
	end()
	waitFor(t, 5*time.Second, "the bytes given back", func() bool { return f.srv.hooks.readers.reserved() == 0 })
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
	f := newHookFixture(t, c)
	f.srv.hooks.wait = 50 * time.Millisecond
	inWrite, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.srv.hooks.hooks["gh"].store.Fault = func(step string) error {
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
	f := newHookFixture(t, testHooks(func(h *hooks.Hook) { h.Quota = 4096 + 600 }))
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

func TestTheWebListenerHasNoHookRoute(t *testing.T) {
	f := newHookFixture(t, testHooks())
	body := `{"a":1}`
	for _, h := range []http.Header{
		{"X-Hub-Signature-256": {sign(hookSecret, body)}},
		header("X-Hub-Signature-256", sign(hookSecret, body)),
	} {
		code, _, _ := f.send("POST", "/alice/hook/gh", strings.NewReader(body), h)
		if code == 202 {
			t.Errorf("the authenticated listener took a delivery")
		}
	}
	if got := f.stored("gh"); len(got) != 0 {
		t.Errorf("stored %q", got)
	}
}

func TestAHundredConcurrentDeliveriesAreAllStored(t *testing.T) {
	c := testHooks()
	c.Concurrency = 8
	f := newHookFixture(t, c)
	var wg sync.WaitGroup
	ids := make([]string, 100)
	codes := make([]int, 100)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"n":%d}`, i)
			req, _ := http.NewRequest("POST", f.hook.URL+"/alice/hook/cron", strings.NewReader(body))
			req.Header.Set("X-Hub-Signature-256", sign("another-secret-0123456789", body))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			defer res.Body.Close()
			codes[i] = res.StatusCode
			var a hookAnswerBody
			json.NewDecoder(res.Body).Decode(&a)
			ids[i] = a.ID
		}()
	}
	wg.Wait()
	for i, code := range codes {
		if code != 202 {
			t.Fatalf("delivery %d answered %d", i, code)
		}
		if _, err := os.Stat(filepath.Join(f.env.HooksDir(), "cron", ids[i]+".json")); err != nil {
			t.Errorf("acknowledged %s not stored: %v", ids[i], err)
		}
	}
	if got := f.stored("cron"); len(got) != 100 {
		t.Errorf("%d stored, want 100", len(got))
	}
}

// hookCrashChild serves testHooks' gh hook on the unix socket
// $WEB_TEST_HOOK_SOCK with its folder in $WEB_TEST_HOOK_DIR, and exits
// with status 3 (a crash: nothing flushed, nothing answered) at write step
// $WEB_TEST_HOOK_CRASH.
func hookCrashChild() int {
	dir, step := os.Getenv("WEB_TEST_HOOK_DIR"), os.Getenv("WEB_TEST_HOOK_CRASH")
	c := testHooks()
	r, err := newHookReceiver(testUser, c, dir, &logger{w: io.Discard}, nil)
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
	l, err := net.Listen("unix", os.Getenv("WEB_TEST_HOOK_SOCK"))
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
			cmd.Env = append(os.Environ(), "WEB_TEST_CHILD=hook-crash", "WEB_TEST_HOOK_DIR="+dir,
				"WEB_TEST_HOOK_CRASH="+tc.step, "WEB_TEST_HOOK_SOCK="+sock)
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
			r, err := newHookReceiver(testUser, testHooks(), dir, &logger{w: io.Discard}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.close()
			if tmp, _ := filepath.Glob(filepath.Join(dir, "gh", ".tmp-*")); len(tmp) != 0 {
				t.Errorf("the restart left unfinished writes: %q", tmp)
			}
			rec := httptest.NewRecorder()
			req = httptest.NewRequest("POST", "/alice/hook/gh", strings.NewReader(body))
			req.Header.Set("X-Hub-Signature-256", sign(hookSecret, body))
			r.ServeHTTP(rec, req)
			var a hookAnswerBody
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
	c := testHooks(func(h *hooks.Hook) { h.Quota = 1 << 40; h.MaxBody = 1 << 20; h.Notify = "" })
	c.Concurrency = 8
	home := benchDiskDir(b)
	dir := filepath.Join(home, "hooks")
	os.Mkdir(dir, 0o700)
	r, err := newHookReceiver(testUser, c, dir, &logger{w: io.Discard}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.close()
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
	c := testHooks(func(h *hooks.Hook) { h.MaxBody = 1 << 20 })
	dir := filepath.Join(b.TempDir(), "hooks")
	os.Mkdir(dir, 0o700)
	r, err := newHookReceiver(testUser, c, dir, &logger{w: io.Discard}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.close()
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

func TestACorruptRegistryStillStoresAndAnswers202(t *testing.T) {
	f := newHookFixture(t, testHooks())
	if err := os.WriteFile(f.env.Registry(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	body := `{"a":1}`
	code, a, raw := f.post("/alice/hook/gh", body, "X-Hub-Signature-256", sign(hookSecret, body))
	if code != http.StatusAccepted {
		t.Fatalf("POST = %d %q", code, raw)
	}
	if got := f.stored("gh"); len(got) != 1 || got[0] != a.ID+".json" {
		t.Fatalf("stored %q", got)
	}
	waitFor(t, 5*time.Second, "the waker's log line", func() bool {
		return strings.Contains(f.log.String(), "delivery "+a.ID+" stored; session park not started")
	})
	if data, _ := os.ReadFile(f.env.Registry()); string(data) != "{not json" {
		t.Errorf("the corrupt registry was changed to %q", data)
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
	if len(got) != hooks.MaxKeptHeaders {
		t.Errorf("%d headers kept, want %d", len(got), hooks.MaxKeptHeaders)
	}
	for k, v := range got {
		if len(k) > hooks.MaxHeaderName || len(v) > hooks.MaxHeaderValue {
			t.Errorf("kept %q (%d bytes of value): over the bounds", k, len(v))
		}
		if k == "X-Hub-Signature-256" || k == "Cookie" {
			t.Errorf("kept %s", k)
		}
	}
	long := http.Header{"X-" + strings.Repeat("N", hooks.MaxHeaderName): {"a name too long"}, "X-Github-Event": {"push"}}
	if got := keptHeaders(long); len(got) != 1 || got["X-Github-Event"] != "push" {
		t.Errorf("kept %q, want only X-Github-Event", got)
	}
}

// Serve takes the hook listener exactly when there are webhooks, and the
// two listeners serve different routes: a delivery on "hook" is stored,
// the same request on "web" is not.
func TestServeAnswersDeliveriesOnTheHookListenerOnly(t *testing.T) {
	f := newHookFixture(t, testHooks())
	dir := sockDir(t)
	web, err := net.Listen("unix", filepath.Join(dir, "web.sock"))
	if err != nil {
		t.Fatal(err)
	}
	hook, err := net.Listen("unix", filepath.Join(dir, "hook.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Serve(context.Background(), web, nil, f.srv.cfg); err == nil || !strings.Contains(err.Error(), "hook listener") {
		t.Fatalf("Serve with webhooks and no hook listener: %v, want a configuration error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, web, hook, f.srv.cfg) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	body := `{"served":true}`
	post := func(sock string) int {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
		req, _ := http.NewRequest("POST", "http://"+testHost+"/alice/hook/gh", strings.NewReader(body))
		req.Header = header("X-Hub-Signature-256", sign(hookSecret, body))
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := post(web.Addr().String()); code == http.StatusAccepted {
		t.Error("the web listener took a delivery")
	}
	if got := f.stored("gh"); len(got) != 0 {
		t.Fatalf("stored through the web listener: %q", got)
	}
	if code := post(hook.Addr().String()); code != http.StatusAccepted {
		t.Errorf("the hook listener answered %d, want 202", code)
	}
	if got := f.stored("gh"); len(got) != 1 {
		t.Errorf("stored %q, want one delivery", got)
	}
}
