package supervisor

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/journal"
)

// fakeAuth is a status listener that records the reports it is sent and
// answers with the codes it is given (then 204).
type fakeAuth struct {
	mu      sync.Mutex
	bodies  []string
	codes   []int
	got     chan string
	badPath []string
}

func (f *fakeAuth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method != http.MethodPut || r.URL.Path != contract.Attention.Report.Path {
		f.badPath = append(f.badPath, r.Method+" "+r.URL.Path)
	}
	code := http.StatusNoContent
	if len(f.codes) > 0 {
		code, f.codes = f.codes[0], f.codes[1:]
	}
	f.bodies = append(f.bodies, string(data))
	w.WriteHeader(code)
	f.got <- string(data)
}

func startFakeAuth(t *testing.T, codes ...int) (*fakeAuth, string) {
	sock := filepath.Join(t.TempDir(), "status.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeAuth{codes: codes, got: make(chan string, 64)}
	srv := &http.Server{Handler: f}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return f, sock
}

// ticks is a fake time.After: each call gets a channel the test fires.
type ticks struct {
	mu    sync.Mutex
	asked []time.Duration
	chans []chan time.Time
	new   chan struct{}
}

func (k *ticks) after(d time.Duration) <-chan time.Time {
	c := make(chan time.Time, 1)
	k.mu.Lock()
	k.asked, k.chans = append(k.asked, d), append(k.chans, c)
	k.mu.Unlock()
	k.new <- struct{}{}
	return c
}

// fire fires the newest wait of d (waiting for it to be asked for).
func (k *ticks) fire(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		k.mu.Lock()
		for i := len(k.asked) - 1; i >= 0; i-- {
			if k.asked[i] == d && len(k.chans[i]) == 0 {
				k.chans[i] <- time.Now()
				k.asked[i] = -1
				k.mu.Unlock()
				return
			}
		}
		k.mu.Unlock()
		select {
		case <-k.new:
		case <-deadline:
			t.Fatalf("no wait of %s was asked for", d)
		}
	}
}

func newTestReporter(t *testing.T, sock string) (*reporter, *ticks, chan struct{}, *syncWriter) {
	log := &syncWriter{b: &strings.Builder{}}
	r := newReporter(sock, journal.New(log, "agent-box"))
	k := &ticks{new: make(chan struct{}, 1024)}
	r.after = k.after
	done := make(chan struct{})
	go r.run(done)
	t.Cleanup(func() { close(done) })
	return r, k, done, log
}

// logText is what the reporter logged so far.
func logText(w *syncWriter) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func recv(t *testing.T, f *fakeAuth) string {
	t.Helper()
	select {
	case b := <-f.got:
		return b
	case <-time.After(5 * time.Second):
		t.Fatal("no report within 5 s")
		return ""
	}
}

// TestReportsAreCoalescedRetriedAndResent: reports pushed within the
// coalesce window are one request with the newest; a refused one (429,
// 500) is sent again, newest first, after a growing wait; every
// resendEvery the last report goes again without a change.
func TestReportsAreCoalescedRetriedAndResent(t *testing.T) {
	f, sock := startFakeAuth(t, http.StatusNoContent, http.StatusTooManyRequests, http.StatusInternalServerError)
	r, k, _, log := newTestReporter(t, sock)
	r.push([]byte("a working\n"))
	r.push([]byte("a needs-you permission\n"))
	k.fire(t, coalesce)
	if got := recv(t, f); got != "a needs-you permission\n" {
		t.Fatalf("the first request: %q, want the newest report", got)
	}

	r.push([]byte("a finished turn\n"))
	k.fire(t, coalesce)
	if got := recv(t, f); got != "a finished turn\n" { // answered 429
		t.Fatalf("%q", got)
	}
	k.fire(t, time.Second)
	if got := recv(t, f); got != "a finished turn\n" { // answered 500
		t.Fatalf("the retry after 429: %q", got)
	}
	r.push([]byte("a working\n")) // newer while waiting: it is the one retried
	if got := recv(t, f); got != "a working\n" {
		t.Fatalf("the retry after 500 with a newer report: %q", got)
	}
	// the line that it works again comes after the answer
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logText(log), "takes the attention states again"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			break
		}
	}
	if l := logText(log); !strings.Contains(l, "429") || !strings.Contains(l, "takes the attention states again") {
		t.Errorf("the log does not say what failed and that it works again:\n%s", l)
	}

	k.fire(t, contract.Duration(contract.Attention.Report.ResendEvery))
	k.fire(t, coalesce)
	if got := recv(t, f); got != "a working\n" {
		t.Fatalf("the resend: %q", got)
	}
	if len(f.badPath) > 0 {
		t.Errorf("requests other than PUT of the report path: %v", f.badPath)
	}
}

// TestNoAuthServiceIsNoNoise: without a socket (no web surface) a report
// fails at connect, logs nothing and waits for the next push.
func TestNoAuthServiceIsNoNoise(t *testing.T) {
	r, k, _, log := newTestReporter(t, filepath.Join(t.TempDir(), "none.sock"))
	r.push([]byte("a working\n"))
	k.fire(t, coalesce)
	r.push([]byte("a finished turn\n"))
	k.fire(t, coalesce)
	time.Sleep(50 * time.Millisecond)
	if l := logText(log); l != "" {
		t.Errorf("logged without an auth service:\n%s", l)
	}
}
