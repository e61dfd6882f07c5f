package web

import (
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
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/clientaddr"
	"github.com/agent-box/agent-box/internal/runtime/hooks"
	"github.com/agent-box/agent-box/internal/runtime/httpserve"
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
	hf := &hookFixture{fixture: f, hook: httptest.NewUnstartedServer(nil), typed: typed}
	hf.hook.Config = httpserve.Server(ctx, f.srv.listeners(f.web.Listener, hf.hook.Listener)[1], f.srv.log.ErrorLog())
	hf.hook.Start()
	// The waker may still be starting a session (a registry write in the
	// home) when a test ends: wait for it before the home is removed.
	t.Cleanup(func() { cancel(); hf.hook.Close(); f.srv.hooks.Close(); <-woken })
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
