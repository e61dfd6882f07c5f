package web

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/registry"
)

// sse is one event of a stream: its name and data ("" and ":" for a
// keep-alive comment).
type sse struct{ name, data string }

// stream opens the session list's event stream with alice's headers and
// returns its events as they come; the channel closes when it ends.
func (f *fixture) stream(t *testing.T) (<-chan sse, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.web.URL+EventsPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = testHost
	req.Header = header("Accept", "text/event-stream")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan sse, 64)
	go func() {
		defer close(ch)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var name string
		var data []string
		for sc.Scan() {
			switch l := sc.Text(); {
			case l == ":":
				ch <- sse{"", ":"}
			case strings.HasPrefix(l, "event: "):
				name = strings.TrimPrefix(l, "event: ")
			case strings.HasPrefix(l, "data: "):
				data = append(data, strings.TrimPrefix(l, "data: "))
			case l == "" && name != "":
				ch <- sse{name, strings.Join(data, "\n")}
				name, data = "", nil
			}
		}
	}()
	return ch, res
}

// next is the stream's next event other than a keep-alive, within d.
func next(t *testing.T, ch <-chan sse, d time.Duration) (sse, bool) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				return sse{}, false
			}
			if e.data == ":" && e.name == "" {
				continue
			}
			return e, true
		case <-timeout:
			return sse{}, false
		}
	}
}

func TestTheSessionListStreamSendsTheRowsAtOnceAndOnEveryChange(t *testing.T) {
	f := newFixture(t)
	ch, res := f.stream(t)
	if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusOK || ct != "text/event-stream; charset=utf-8" {
		t.Fatalf("status %d, Content-Type %q", res.StatusCode, ct)
	}
	e, ok := next(t, ch, 5*time.Second)
	if !ok || e.name != "sessions" || !strings.Contains(e.data, `<a href="/term/?arg=main" data-session="main">main</a>`) || !strings.Contains(e.data, `&lt;script&gt;`) {
		t.Fatalf("first event %+v", e)
	}
	// the CLI's code path adds a session: the stream says so
	start := time.Now()
	err := registry.Update(context.Background(), f.env.Registry(), func(r *registry.Registry) error {
		return r.Add(registry.Session{Name: "fresh", Agent: "shell", Cwd: f.env.Home, Created: start, Updated: start})
	})
	if err != nil {
		t.Fatal(err)
	}
	e, ok = next(t, ch, 5*time.Second)
	if !ok || e.name != "sessions" || !strings.Contains(e.data, `<a href="/term/?arg=fresh" data-session="fresh">fresh</a>`) {
		t.Fatalf("after an add: %+v", e)
	}
	t.Logf("an added session reached the stream after %v", time.Since(start))
	// a burst (one update writes, syncs and renames) is one event
	if e, ok := next(t, ch, 300*time.Millisecond); ok {
		t.Errorf("a second event for one change: %+v", e)
	}
}

func TestTheSessionListStreamSendsNothingButKeepAlivesWhileNothingChanges(t *testing.T) {
	f := newFixture(t)
	f.srv.eventsKeepAlive = 50 * time.Millisecond
	ch, _ := f.stream(t)
	if e, ok := next(t, ch, 5*time.Second); !ok || e.name != "sessions" {
		t.Fatalf("first event %+v", e)
	}
	wakes := func() int { f.srv.changes.mu.Lock(); defer f.srv.changes.mu.Unlock(); return f.srv.changes.wakes }
	before := wakes()
	keepAlives := 0
	deadline := time.After(600 * time.Millisecond)
	for done := false; !done; {
		select {
		case e := <-ch:
			if e.name != "" {
				t.Errorf("an event while nothing changed: %+v", e)
			}
			keepAlives++
		case <-deadline:
			done = true
		}
	}
	if keepAlives < 5 {
		t.Errorf("%d keep-alives in 600 ms at one per 50 ms", keepAlives)
	}
	if n := wakes() - before; n != 0 {
		t.Errorf("the list was woken %d times while nothing changed", n)
	}
}

func TestTheSessionListStreamEndsWhenTheLoginSessionEnds(t *testing.T) {
	f := newFixture(t)
	ch, _ := f.stream(t)
	if e, ok := next(t, ch, 5*time.Second); !ok || e.name != "sessions" {
		t.Fatalf("first event %+v", e)
	}
	f.status.setAnswer(func(string) int { return http.StatusNotFound }) // revoked
	e, ok := next(t, ch, 5*time.Second)
	if !ok || e.name != "end" {
		t.Fatalf("after a revoke: %+v (ok %v), want an end event", e, ok)
	}
	if _, ok := next(t, ch, 5*time.Second); ok {
		t.Error("the stream stayed open after its end event")
	}
}

func TestOneStreamTooManyEndsTheOldest(t *testing.T) {
	f := newFixture(t)
	f.srv.streams.max = 2
	var chans []<-chan sse
	for range 3 {
		ch, _ := f.stream(t)
		if e, ok := next(t, ch, 5*time.Second); !ok || e.name != "sessions" {
			t.Fatalf("first event %+v", e)
		}
		chans = append(chans, ch)
	}
	if e, ok := next(t, chans[0], 5*time.Second); !ok || e.name != "closed" || !strings.Contains(e.data, "too many") {
		t.Errorf("the oldest stream got %+v, want closed", e)
	}
	for i, ch := range chans[1:] {
		if e, ok := next(t, ch, 200*time.Millisecond); ok {
			t.Errorf("stream %d got %+v", i+1, e)
		}
	}
}

func TestTheStreamFollowsADirectoryRemovedAndMadeAgain(t *testing.T) {
	f := newFixture(t)
	f.srv.eventsKeepAlive = 50 * time.Millisecond
	obs := f.env.ObservationsDir()
	if err := os.MkdirAll(obs, 0o700); err != nil {
		t.Fatal(err)
	}
	f.srv.changes.arm()
	ch, _ := f.stream(t)
	if e, ok := next(t, ch, 5*time.Second); !ok || e.name != "sessions" {
		t.Fatalf("first event %+v", e)
	}
	if err := os.RemoveAll(obs); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(obs, 0o700); err != nil {
		t.Fatal(err)
	}
	// a keep-alive later the new directory is watched: an observation
	// written there changes the row
	time.Sleep(200 * time.Millisecond)
	for e, ok := next(t, ch, 100*time.Millisecond); ok; e, ok = next(t, ch, 100*time.Millisecond) {
		_ = e // what the removal itself sent
	}
	writeFile(t, filepath.Join(obs, "main.json"), `{"restarts":7}`)
	e, ok := next(t, ch, 5*time.Second)
	if !ok || !strings.Contains(e.data, "<td>7</td>") {
		t.Fatalf("after an observation in the new directory: %+v (ok %v)", e, ok)
	}
}

// TestAnotherOriginCannotOpenOrEndTheSessionListStreams: requests a page
// of another origin makes with the person's cookies (an <img> on a
// sibling app, a no-cors fetch) get 403 before they count, so the
// person's own stream is not pushed out; a client without Sec-Fetch-Site
// must ask for text/event-stream.
func TestAnotherOriginCannotOpenOrEndTheSessionListStreams(t *testing.T) {
	f := newFixture(t)
	f.srv.streams.max = 1
	own, _ := f.stream(t)
	if e, ok := next(t, own, 5*time.Second); !ok || e.name != "sessions" {
		t.Fatalf("first event %+v", e)
	}
	for _, c := range []struct {
		name string
		h    http.Header
	}{
		{"an <img> on a sibling origin", header("Accept", "image/avif,image/webp,*/*", "Sec-Fetch-Site", "same-site", "Sec-Fetch-Dest", "image")},
		{"a no-cors fetch from another site", header("Accept", "text/event-stream", "Sec-Fetch-Site", "cross-site")},
		{"no Sec-Fetch-Site and not asking for a stream", header("Accept", "*/*")},
	} {
		req, err := http.NewRequest(http.MethodGet, f.web.URL+EventsPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = testHost
		req.Header = c.h
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", c.name, res.StatusCode)
		}
	}
	if e, ok := next(t, own, 300*time.Millisecond); ok {
		t.Errorf("the person's own stream got %+v after the other origin's requests, want nothing", e)
	}
}
