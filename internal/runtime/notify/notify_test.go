package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-box/agent-box/internal/runtime/badconfig"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/journal"
)

var ev = Event{
	Login: "ops", User: "alice", Session: "main", State: "needs-you", Reason: "permission",
	Link: "https://alice.box.test/term/?arg=main", Time: "2026-12-03T10:00:00Z",
}

// TestTheFeedTakesOnlyEventsOfTheContractsNames: the auth service's
// datagram round-trips; anything else is refused.
func TestTheFeedTakesOnlyEventsOfTheContractsNames(t *testing.T) {
	asks := ev
	asks.Request = "Bash: rm -rf build"
	asks.Actions = []Action{{Decision: "allow", Label: "Allow", URL: "https://box.test/auth/act/abc"}, {Decision: "deny", Label: "Deny", URL: "https://box.test/auth/act/def"}}
	for _, e := range []Event{ev, asks} {
		got, err := ParseFeed(e.Feed())
		if err != nil || !cmp.Equal(got, e) {
			t.Fatalf("round trip: %+v, %v", got, err)
		}
	}
	edit := func(f func(*Event)) []byte { e := ev; f(&e); return e.Feed() }
	editAsks := func(f func(*Event)) []byte {
		e := asks
		e.Actions = append([]Action(nil), asks.Actions...)
		f(&e)
		return e.Feed()
	}
	for name, data := range map[string][]byte{
		"a hook's text as the reason":    edit(func(e *Event) { e.Reason = "Claude needs your permission" }),
		"an unknown state":               edit(func(e *Event) { e.State = "sleeping" }),
		"a session name with a space":    edit(func(e *Event) { e.Session = "rm -rf" }),
		"no login":                       edit(func(e *Event) { e.Login = "" }),
		"a user that is no DNS label":    edit(func(e *Event) { e.User = "Alice_1" }),
		"a javascript: link":             edit(func(e *Event) { e.Link = "javascript:alert(1)" }),
		"an http link":                   edit(func(e *Event) { e.Link = "http://alice.box.test/" }),
		"a time that is no time":         edit(func(e *Event) { e.Time = "now" }),
		"an unknown field":               []byte(`{"login":"ops","user":"alice","session":"main","state":"working","link":"https://a.b/","time":"2026-12-03T10:00:00Z","text":"x"}`),
		"two events":                     append(ev.Feed(), ev.Feed()...),
		"too long":                       append(ev.Feed(), bytes.Repeat([]byte(" "), contract.Attention.Notify.MaxEventBytes)...),
		"a request with an escape":       editAsks(func(e *Event) { e.Request = "Bash: \x1b]52;c;x\x07" }),
		"a request with a bidi override": editAsks(func(e *Event) { e.Request = "Bash: ls \u202e" }),
		"a request over its bound":       editAsks(func(e *Event) { e.Request = strings.Repeat("x", contract.Approvals.NotifyTextBytes+1) }),
		"actions without a request":      editAsks(func(e *Event) { e.Request = "" }),
		"an action of no decision":       editAsks(func(e *Event) { e.Actions[0].Decision = "run" }),
		"a decision twice":               editAsks(func(e *Event) { e.Actions[1].Decision = "allow" }),
		"an http action":                 editAsks(func(e *Event) { e.Actions[0].URL = "http://box.test/auth/act/abc" }),
		"an action URL with a comma":     editAsks(func(e *Event) { e.Actions[0].URL = "https://box.test/a,clear=false" }),
		"a label with a semicolon":       editAsks(func(e *Event) { e.Actions[0].Label = "Allow; http, x, https://evil.test/" }),
	} {
		if _, err := ParseFeed(data); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
}

// TestActionsBecomeNtfysActionsHeader: one POST button per action that
// clears the notification; none without actions.
func TestActionsBecomeNtfysActionsHeader(t *testing.T) {
	e := ev
	if got := e.NtfyActions(); got != "" {
		t.Errorf("no actions: %q", got)
	}
	e.Request = "Bash: ls"
	e.Actions = []Action{{Decision: "allow", Label: "Allow", URL: "https://box.test/auth/act/abc"}, {Decision: "deny", Label: "Deny", URL: "https://box.test/auth/act/def"}}
	want := "http, Allow, https://box.test/auth/act/abc, method=POST, clear=true; http, Deny, https://box.test/auth/act/def, method=POST, clear=true"
	if got := e.NtfyActions(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestThePayloadIsTheDocumentedJSON: exactly user, session, state,
// reason, link and time; no login.
func TestThePayloadIsTheDocumentedJSON(t *testing.T) {
	var got map[string]string
	if err := json.Unmarshal(ev.Payload(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"user": "alice", "session": "main", "state": "needs-you", "reason": "permission",
		"link": "https://alice.box.test/term/?arg=main", "time": "2026-12-03T10:00:00Z"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
}

func writeCred(t *testing.T, dir, login, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, contract.Creds.NotifyPrefix+login), []byte(text), 0o400); err != nil {
		t.Fatal(err)
	}
}

// TestURLsAreReadFromTheCredentials: one URL per login's credential;
// plain http is named insecure; a bad file is a configuration error that
// never quotes the file (its token).
func TestURLsAreReadFromTheCredentials(t *testing.T) {
	dir := t.TempDir()
	writeCred(t, dir, "ops", "https://ntfy.example/agent-box-s3cret\n")
	writeCred(t, dir, "al", "http://10.99.0.2:8098/t0ken")
	os.WriteFile(filepath.Join(dir, "login-ops"), []byte("a hash"), 0o400)
	urls, insecure, err := LoadURLs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"ops": "https://ntfy.example/agent-box-s3cret", "al": "http://10.99.0.2:8098/t0ken"}, urls); diff != "" {
		t.Errorf("urls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"al"}, insecure); diff != "" {
		t.Errorf("insecure (-want +got):\n%s", diff)
	}
	for name, text := range map[string]string{
		"two lines":    "https://a.example/s3cret\nhttps://b.example/s3cret\n",
		"no scheme":    "a.example/s3cret",
		"another one":  "ftp://a.example/s3cret",
		"no host":      "https:///s3cret",
		"empty":        "",
		"a space":      "https://a.example/s3cret x",
		"too long":     "https://a.example/s3cret" + strings.Repeat("x", contract.Attention.Notify.URLMaxBytes),
		"a NUL":        "https://a.example/s3cret\x00",
		"not a url at": "https://a.example/%zz-s3cret",
	} {
		d := t.TempDir()
		writeCred(t, d, "ops", text)
		_, _, err := LoadURLs(d)
		var bc *badconfig.Error
		if !errors.As(err, &bc) {
			t.Errorf("%s: %v, want a configuration error", name, err)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error quotes the URL: %v", name, err)
		}
	}
	d := t.TempDir()
	writeCred(t, d, "-bad", "https://a.example/")
	if _, _, err := LoadURLs(d); err == nil {
		t.Error("a credential for no login name was taken")
	}
}

// endpoint is a test receiver: each request's handling is up to answer
// (by arrival, 1 first).
type endpoint struct {
	mu     sync.Mutex
	n      int
	bodies []string
	heads  []http.Header
	answer func(n int, w http.ResponseWriter, r *http.Request)
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	e.n++
	n := e.n
	e.mu.Unlock()
	e.answer(n, w, r)
	e.mu.Lock()
	e.bodies = append(e.bodies, string(body))
	e.heads = append(e.heads, r.Header.Clone())
	e.mu.Unlock()
}

func (e *endpoint) count() int { e.mu.Lock(); defer e.mu.Unlock(); return e.n }

var fast = Limits{Queue: 4, Attempts: 3, Timeout: 200 * time.Millisecond, BackoffFirst: 20 * time.Millisecond, BackoffMax: 40 * time.Millisecond}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// start runs a sender of login ops to ep under lim until the test ends.
func start(t *testing.T, ep *endpoint, lim Limits) (*Sender, *logBuf, string) {
	t.Helper()
	srv := httptest.NewServer(ep)
	t.Cleanup(srv.Close)
	url := srv.URL + "/topic-s3cret"
	log := &logBuf{}
	s := NewSender(map[string]string{"ops": url}, lim, nil, journal.New(log, "agent-box-notify"))
	ctx, cancel := context.WithCancel(context.Background())
	s.Run(ctx)
	t.Cleanup(func() { cancel(); s.Wait() })
	return s, log, url
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAnEventIsPostedAsJSONWithNtfysHeaders.
func TestAnEventIsPostedAsJSONWithNtfysHeaders(t *testing.T) {
	ep := &endpoint{answer: func(int, http.ResponseWriter, *http.Request) {}}
	s, log, _ := start(t, ep, fast)
	if !s.Enqueue(ev) {
		t.Fatal("ops has a URL, but the event was not queued")
	}
	waitFor(t, "the POST", func() bool { return ep.count() == 1 })
	waitFor(t, "the log line", func() bool { return strings.Contains(log.String(), "sent alice needs-you") })
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.bodies[0] != string(ev.Payload()) {
		t.Errorf("body %s, want %s", ep.bodies[0], ev.Payload())
	}
	h := ep.heads[0]
	if h.Get("Content-Type") != "application/json" || h.Get("Title") != "alice: needs-you (permission)" || h.Get("Click") != ev.Link {
		t.Errorf("headers %v", h)
	}
	if e := (Event{Login: "nobody"}); s.Enqueue(e) {
		t.Error("an event of a login without a URL was queued")
	}
}

// TestAFailedPostIsRetriedWithBackoffThenGivenUp: 503 then 200 is one
// delivery on the second try; an endpoint that always fails gets Attempts
// tries, waiting longer each time, and the log never holds the URL.
func TestAFailedPostIsRetriedWithBackoffThenGivenUp(t *testing.T) {
	var times []time.Time
	var mu sync.Mutex
	ep := &endpoint{answer: func(n int, w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		times = append(times, time.Now())
		mu.Unlock()
		if n != 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}}
	s, log, url := start(t, ep, fast)
	s.Enqueue(ev)
	waitFor(t, "the second try", func() bool { return strings.Contains(log.String(), "(try 2,") })
	e2 := ev
	e2.Session = "other"
	s.Enqueue(e2)
	waitFor(t, "giving up", func() bool { return strings.Contains(log.String(), "gave up on alice needs-you after try 3") })
	if n := ep.count(); n != 2+fast.Attempts {
		t.Errorf("%d POSTs, want 2 for the first event and %d for the second", n, fast.Attempts)
	}
	mu.Lock()
	gaps := []time.Duration{times[3].Sub(times[2]), times[4].Sub(times[3])}
	mu.Unlock()
	if gaps[0] < fast.BackoffFirst || gaps[1] < 2*fast.BackoffFirst {
		t.Errorf("waits between tries %v, want at least %v then %v", gaps, fast.BackoffFirst, 2*fast.BackoffFirst)
	}
	if strings.Contains(log.String(), "s3cret") || strings.Contains(log.String(), url) {
		t.Errorf("the log holds the URL:\n%s", log)
	}
}

// TestARefusalIsFinal: a 4xx (not 408 or 429) is not tried again.
func TestARefusalIsFinal(t *testing.T) {
	ep := &endpoint{answer: func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) }}
	s, log, _ := start(t, ep, fast)
	s.Enqueue(ev)
	waitFor(t, "giving up", func() bool { return strings.Contains(log.String(), "gave up") })
	if n := ep.count(); n != 1 {
		t.Errorf("%d tries of a 403, want 1", n)
	}
}

// hanging is an endpoint that answers only when release closes (or the
// try's timeout ends the request).
func hanging(release chan struct{}) *endpoint {
	return &endpoint{answer: func(_ int, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}}
}

// TestATryEndsAtItsTimeout: a hanging endpoint costs Timeout per try and
// is given up after Attempts.
func TestATryEndsAtItsTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ep := hanging(release)
	lim := fast
	lim.Attempts, lim.Timeout = 2, 50*time.Millisecond
	s, log, _ := start(t, ep, lim)
	s.Enqueue(ev)
	waitFor(t, "giving up", func() bool { return strings.Contains(log.String(), "gave up") })
	if n := strings.Count(log.String(), "no answer within the timeout"); n != 2 || ep.count() != 2 {
		t.Errorf("%d tries, %d timeouts logged; want 2 and 2:\n%s", ep.count(), n, log)
	}
}

// TestAHangingEndpointHoldsBackOnlyItsLoginAndItsQueueIsBounded: while
// ops's endpoint hangs, al's is served; ops's queue keeps its bound,
// dropping the oldest and saying so, and sends the rest in order once the
// endpoint answers.
func TestAHangingEndpointHoldsBackOnlyItsLoginAndItsQueueIsBounded(t *testing.T) {
	release := make(chan struct{})
	hang := hanging(release)
	ok := &endpoint{answer: func(int, http.ResponseWriter, *http.Request) {}}
	hs, oks := httptest.NewServer(hang), httptest.NewServer(ok)
	t.Cleanup(hs.Close)
	t.Cleanup(oks.Close)
	log := &logBuf{}
	lim := fast
	lim.Timeout = time.Minute
	s := NewSender(map[string]string{"ops": hs.URL, "al": oks.URL}, lim, nil, journal.New(log, "agent-box-notify"))
	ctx, cancel := context.WithCancel(context.Background())
	s.Run(ctx)
	defer func() { cancel(); s.Wait() }()
	var sessions []string
	for i := range lim.Queue + 3 { // one in flight, Queue waiting, 2 dropped
		e := ev
		e.Session = "s" + string(rune('a'+i))
		sessions = append(sessions, e.Session)
		s.Enqueue(e)
		if i == 0 {
			waitFor(t, "the first try", func() bool { return hang.count() == 1 })
		}
	}
	e := ev
	e.Login = "al"
	s.Enqueue(e)
	waitFor(t, "the other login's delivery", func() bool { return ok.count() == 1 })
	if n := hang.count(); n != 1 {
		t.Fatalf("ops's endpoint got %d tries while its first hangs", n)
	}
	close(release)
	waitFor(t, "the queue drained", func() bool { return hang.count() == 1+lim.Queue })
	waitFor(t, "the drop line", func() bool { return strings.Contains(log.String(), "login ops: dropped 2 notifications") })
	hang.mu.Lock()
	var got []string
	for _, b := range hang.bodies {
		var p Event
		json.Unmarshal([]byte(b), &p)
		got = append(got, p.Session)
	}
	hang.mu.Unlock()
	want := append([]string{sessions[0]}, sessions[3:]...) // the 2nd and 3rd were the oldest waiting
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sessions sent (-want +got):\n%s", diff)
	}
}

// TestServeQueuesTheFeedsEventsAndDropsTheRest: through a real datagram
// socket.
func TestServeQueuesTheFeedsEventsAndDropsTheRest(t *testing.T) {
	ep := &endpoint{answer: func(int, http.ResponseWriter, *http.Request) {}}
	s, _, _ := start(t, ep, fast)
	path := filepath.Join(t.TempDir(), "feed.sock")
	conn, err := net.ListenPacket("unixgram", path)
	if err != nil {
		t.Fatal(err)
	}
	log := &logBuf{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, conn, s, journal.New(log, "agent-box-notify")) }()
	c, err := net.Dial("unixgram", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	other := ev
	other.Login = "al"
	for _, d := range [][]byte{[]byte("Claude needs your permission"), other.Feed(), ev.Feed()} {
		c.Write(d)
	}
	waitFor(t, "the POST", func() bool { return ep.count() == 1 })
	waitFor(t, "the log", func() bool { return strings.Contains(log.String(), "login al: it has no URL") })
	if !strings.Contains(log.String(), "dropped a datagram of 28 bytes") || strings.Contains(log.String(), "Claude") {
		t.Errorf("log:\n%s", log)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestOneUsersBurstCannotHoldBackAnothersFirstNotification: while alice's
// burst fills her queue (and drops her oldest), bob's one notification is
// sent after at most one more of hers: the users of a login take turns,
// each in order, and the drop line names whose were dropped.
func TestOneUsersBurstCannotHoldBackAnothersFirstNotification(t *testing.T) {
	release := make(chan struct{})
	hang := hanging(release)
	hs := httptest.NewServer(hang)
	t.Cleanup(hs.Close)
	log := &logBuf{}
	lim := fast
	lim.Timeout = time.Minute
	s := NewSender(map[string]string{"ops": hs.URL}, lim, nil, journal.New(log, "agent-box-notify"))
	ctx, cancel := context.WithCancel(context.Background())
	s.Run(ctx)
	defer func() { cancel(); s.Wait() }()
	for i := range 3 * lim.Queue {
		e := ev
		e.Session = fmt.Sprintf("a%d", i)
		s.Enqueue(e)
		if i == 0 {
			waitFor(t, "the first try", func() bool { return hang.count() == 1 })
		}
	}
	b := ev
	b.User, b.Session = "bob", "bell"
	s.Enqueue(b)
	close(release)
	waitFor(t, "the queue drained", func() bool { return hang.count() == 2+lim.Queue })
	hang.mu.Lock()
	var got []string
	for _, body := range hang.bodies {
		var p Event
		json.Unmarshal([]byte(body), &p)
		got = append(got, p.User+"/"+p.Session)
	}
	hang.mu.Unlock()
	at := slices.Index(got, "bob/bell")
	if at < 0 || at > 2 {
		t.Fatalf("bob's notification was sent %dth of %d (%q); want at most after the one in flight and one more of alice's", at+1, len(got), got)
	}
	var alice []string
	for _, g := range got {
		if strings.HasPrefix(g, "alice/") {
			alice = append(alice, g)
		}
	}
	if alice[0] != "alice/a0" || alice[1] != fmt.Sprintf("alice/a%d", 2*lim.Queue) || alice[len(alice)-1] != fmt.Sprintf("alice/a%d", 3*lim.Queue-1) {
		t.Errorf("alice's sent: %q; want the first (in flight), then her last %d in order", alice, lim.Queue)
	}
	waitFor(t, "the drop line", func() bool {
		return strings.Contains(log.String(), fmt.Sprintf("login ops: dropped %d notifications of alice", 2*lim.Queue-1))
	})
}

// TestARequestOfMarkupFitsTheDatagram: the JSON keeps '<' one byte, so a
// request's text of markup at its bound, with three action URLs on a
// long domain, is one event the notify service takes (escaped, each '<'
// would take six bytes, and the event would not fit).
func TestARequestOfMarkupFitsTheDatagram(t *testing.T) {
	e := ev
	domain := strings.Repeat("d", 60) + "." + strings.Repeat("e", 60) + "." + strings.Repeat("f", 60) + ".example"
	e.Link = "https://alice." + domain + "/term/?arg=main"
	e.Request = strings.Repeat("<", contract.Approvals.NotifyTextBytes)
	for _, d := range []string{"allow", "allow-session", "deny"} {
		e.Actions = append(e.Actions, Action{Decision: d, Label: "x", URL: "https://" + domain + "/auth/act/" + strings.Repeat("A", 43)})
	}
	if _, err := ParseFeed(e.Feed()); err != nil {
		t.Errorf("%d bytes: %v", len(e.Feed()), err)
	}
}
