package auth

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/google/go-cmp/cmp"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/httpserve"
)

// sse is one server-sent event, or a comment line (name ":").
type sse struct{ name, data string }

// eventStream reads an open inbox stream.
type eventStream struct {
	t      *testing.T
	res    *http.Response
	events chan sse
	done   chan error // the body's end (io.EOF) or failure
}

// pagesServer serves w's pages handler on a loopback listener the way the
// service does (httpserve, the Bounded limits but a short write deadline,
// so that a stream that kept it would be cut within the test) and returns
// its address.
func (w *tw) pagesServer() string {
	w.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.t.Fatal(err)
	}
	lim := httpserve.Bounded
	lim.Write = 300 * time.Millisecond
	srv := httpserve.Server(context.Background(), httpserve.Listener{Name: "pages", L: l, Handler: w.s.Pages(), Limits: lim}, nil)
	go srv.Serve(l)
	w.t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// eventSource is what a browser's EventSource of the page sends.
var eventSource = http.Header{"Accept": {"text/event-stream"}, "Sec-Fetch-Site": {"same-origin"}, "Sec-Fetch-Mode": {"cors"}, "Sec-Fetch-Dest": {"empty"}}

// stream opens GET target on the box origin at addr with the box cookie
// (none if ""), as the page's EventSource: the stream, or the refusal's
// status.
func (w *tw) stream(addr, target, cookie string) (*eventStream, int) {
	w.t.Helper()
	return w.streamWith(addr, target, cookie, eventSource)
}

// streamWith is stream with the request's headers h.
func (w *tw) streamWith(addr, target, cookie string, h http.Header) (*eventStream, int) {
	w.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+target, nil)
	req.Header = h.Clone()
	req.Host = "box.test"
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: cookieName, Value: cookie})
	}
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		w.t.Fatalf("GET %s: %v", target, err)
	}
	if res.StatusCode != 200 {
		res.Body.Close()
		return nil, res.StatusCode
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		w.t.Fatalf("GET %s: Content-Type %q", target, ct)
	}
	es := &eventStream{t: w.t, res: res, events: make(chan sse, 64), done: make(chan error, 1)}
	w.t.Cleanup(func() { res.Body.Close() })
	go func() {
		br := bufio.NewReader(res.Body)
		var ev sse
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				es.done <- err
				close(es.events)
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "" && ev.name != "":
				es.events <- ev
				ev = sse{}
			case strings.HasPrefix(line, ":"):
				es.events <- sse{name: ":"}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if ev.data != "" {
					ev.data += "\n"
				}
				ev.data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return es, 200
}

// next is the stream's next event (comments skipped unless comments), or
// a failure after a second.
func (es *eventStream) next(comments bool) sse {
	es.t.Helper()
	timeout := time.After(time.Second)
	for {
		select {
		case ev, ok := <-es.events:
			if !ok {
				es.t.Fatalf("the stream ended (%v) while an event was expected", <-es.done)
			}
			if ev.name != ":" || comments {
				return ev
			}
		case <-timeout:
			es.t.Fatal("no event within a second")
		}
	}
}

// ends asserts that the stream sends "end" and then ends.
func (es *eventStream) ends() {
	es.t.Helper()
	if ev := es.next(false); ev.name != "end" {
		es.t.Fatalf("got event %q, want end", ev.name)
	}
	es.closes()
}

// closes asserts that the stream ends within a second, with no other event.
func (es *eventStream) closes() {
	es.t.Helper()
	timeout := time.After(time.Second)
	for {
		select {
		case ev, ok := <-es.events:
			if !ok {
				if err := <-es.done; !errors.Is(err, io.EOF) {
					es.t.Errorf("the stream ended with %v, want its end", err)
				}
				return
			}
			if ev.name != ":" {
				es.t.Fatalf("event %q after the end", ev.name)
			}
		case <-timeout:
			es.t.Fatal("the stream is still open a second later")
		}
	}
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// shown is the text a browser shows of an HTML fragment: no tags, no
// attribute values.
func shown(html string) string { return tagRE.ReplaceAllString(html, " ") }

// inboxOf is the inbox list of a box page.
func inboxOf(t *testing.T, page string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<ul id="inbox"[^>]*>\n(.*?)</ul>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no inbox in the page:\n%s", page)
	}
	return m[1]
}

var itemRE = regexp.MustCompile(`<li class="([a-z-]+)" data-key="[^"]*"><form method="post" action="/auth/open"><span><b>([a-z]+)</b> ([^<]*) <time[^>]*>[^<]*</time></span><input type="hidden" name="user" value="([a-z]+)"><input type="hidden" name="next" value="([^"]*)">`)

// items are an inbox's entries as "user state (reason) next".
func items(t *testing.T, list string) []string {
	t.Helper()
	var out []string
	for _, m := range itemRE.FindAllStringSubmatch(list, -1) {
		if m[2] != m[4] {
			t.Errorf("an item shows %s but opens %s", m[2], m[4])
		}
		out = append(out, m[2]+" "+m[3]+" "+strings.ReplaceAll(m[5], "&#43;", "+"))
	}
	if n := strings.Count(list, "<li"); n != len(out) && !(n == 1 && strings.Contains(list, "Nothing needs you")) {
		t.Errorf("%d items, %d understood:\n%s", n, len(out), list)
	}
	return out
}

// TestTheInboxListsWhatNeedsAPersonOfTheUsersTheLoginMayOpen: the page
// and the stream's first event list the same entries, needs-you before
// crash-looping before finished, the longest waiting first within a
// state, never a working session; the alice-only login sees nothing of
// bob, whatever the request asks for.
func TestTheInboxListsWhatNeedsAPersonOfTheUsersTheLoginMayOpen(t *testing.T) {
	w := newTW(t)
	w.fakeUsers()
	w.report(1001, "late needs-you question\nmain finished turn\nside working\n")
	w.clock.Advance(time.Minute)
	w.report(1001, "late needs-you question\nmain finished turn\nnow needs-you permission\nside working\n")
	w.report(1002, "build crash-looping\n")
	addr := w.pagesServer()
	for _, c := range []struct {
		login, target string
		want          []string
	}{
		{"ops", "/auth/inbox", []string{
			"alice needs-you (question) /term/?arg=late",
			"alice needs-you (permission) /term/?arg=now",
			"bob crash-looping /term/?arg=build",
			"alice finished (turn) /term/?arg=main",
		}},
		{"al", "/auth/inbox", []string{
			"alice needs-you (question) /term/?arg=late",
			"alice needs-you (permission) /term/?arg=now",
			"alice finished (turn) /term/?arg=main",
		}},
		{"al", "/auth/inbox?user=bob&login=ops", []string{
			"alice needs-you (question) /term/?arg=late",
			"alice needs-you (permission) /term/?arg=now",
			"alice finished (turn) /term/?arg=main",
		}},
	} {
		box := w.login(c.login)
		page := w.pages(rq{method: "GET", host: "box.test", target: "/?user=bob", cookies: []string{box}}).Body.String()
		if got := items(t, inboxOf(t, page)); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s's page lists\n%s\nwant\n%s", c.login, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
		es, code := w.stream(addr, c.target, box)
		if code != 200 {
			t.Fatalf("%s %s: %d", c.login, c.target, code)
		}
		ev := es.next(false)
		if got := items(t, ev.data); ev.name != "inbox" || strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s %s: first event %q lists\n%s\nwant\n%s", c.login, c.target, ev.name, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
		if c.login == "al" && strings.Contains(ev.data, "bob") {
			t.Errorf("the alice-only login's stream mentions bob:\n%s", ev.data)
		}
	}
}

// An agent the kernel killed for memory, and its supervisor restarted, is
// listed as needing a person, saying why.
func TestAnAgentKilledForMemoryIsListedSayingSo(t *testing.T) {
	w := newTW(t)
	w.fakeUsers()
	if code := w.report(1001, "hog needs-you memory\n"); code != http.StatusNoContent && code != http.StatusOK {
		t.Fatalf("the report: %d", code)
	}
	box := w.login("ops")
	page := w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{box}}).Body.String()
	want := "alice needs-you (memory) /term/?arg=hog"
	if got := items(t, inboxOf(t, page)); strings.Join(got, "\n") != want {
		t.Errorf("the inbox lists\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
}

// TestALimitedSessionIsListedWithItsNextTry: a session limited by its
// account's usage limit says when it tries again (in UTC, with a
// <time datetime> the page's script shows in the browser's zone; the day
// when it is another), and which try, or that it resumed; its key (a new
// one is a browser notification) does not change from try to try.
func TestALimitedSessionIsListedWithItsNextTry(t *testing.T) {
	w := newTW(t)
	w.fakeUsers()
	soon, later := t0.Add(5*time.Hour+4*time.Minute), t0.Add(72*time.Hour)
	w.report(1001, fmt.Sprintf("a limited limit %d 2\nb limited limit 0 1\nc limited limit %d 1\n", soon.Unix(), later.Unix()))
	box := w.login("ops")
	list := inboxOf(t, w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{box}}).Body.String())
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		got = append(got, strings.Join(strings.Fields(shown(line)), " "))
	}
	want := []string{
		"alice limited until 15:04 UTC (try 2) since 10:00 UTC Open",
		"alice limited, resumed (try 1) since 10:00 UTC Open",
		"alice limited until Dec 4 10:00 UTC (try 1) since 10:00 UTC Open",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the inbox (-want +got):\n%s\n%s", diff, list)
	}
	for _, s := range []string{`<time datetime="2026-12-01T15:04:00Z">until 15:04 UTC</time>`, `data-key="alice a limited (limit)"`} {
		if !strings.Contains(list, s) {
			t.Errorf("the inbox lacks %s:\n%s", s, list)
		}
	}
}

// TestTheBoxOriginShowsNoSessionName: a session's name is the agent's
// words; on the password origin it is never shown, only carried in the
// Open form, which hands over to that session's terminal.
func TestTheBoxOriginShowsNoSessionName(t *testing.T) {
	w := newTW(t)
	w.fakeUsers()
	name := "Type-your-ops-password-below"
	w.report(1001, name+" needs-you permission\n")
	box := w.login("ops")
	list := inboxOf(t, w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{box}}).Body.String())
	if !strings.Contains(list, `value="`+contract.TerminalLink(name)+`"`) {
		t.Fatalf("the entry does not open %s:\n%s", name, list)
	}
	if strings.Contains(shown(list), name) {
		t.Errorf("the page shows the session's name:\n%s", list)
	}
	rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/open", cookies: []string{box},
		form: url.Values{"user": {"alice"}, "next": {contract.TerminalLink(name)}}})
	loc, _ := url.Parse(rec.Header().Get("Location"))
	if rec.Code != 303 || loc == nil || loc.Query().Get("next") != contract.TerminalLink(name) {
		t.Errorf("Open: %d %q, want a hand-over to %s", rec.Code, rec.Header().Get("Location"), contract.TerminalLink(name))
	}
}

// TestTheInboxStreamSendsEachChangeAndOnlyChanges: a report that changes
// a listed state is the next event; one that changes only what is not
// listed (a working session) sends nothing but keep-alives.
func TestTheInboxStreamSendsEachChangeAndOnlyChanges(t *testing.T) {
	w := newTW(t)
	w.fakeUsers()
	w.s.keepAlive = 50 * time.Millisecond
	w.report(1001, "main working\n")
	es, _ := w.stream(w.pagesServer(), "/auth/inbox", w.login("al"))
	if ev := es.next(false); ev.name != "inbox" || !strings.Contains(ev.data, "Nothing needs you") {
		t.Fatalf("first event %q %q, want an empty inbox", ev.name, ev.data)
	}
	w.report(1001, "main needs-you permission\n")
	if ev := es.next(false); len(items(t, ev.data)) != 1 || !strings.Contains(ev.data, "needs-you (permission)") {
		t.Fatalf("after the report: %q %q", ev.name, ev.data)
	}
	w.report(1001, "main needs-you permission\nside working\n")
	for range 3 {
		if ev := es.next(true); ev.name != ":" {
			t.Fatalf("a change the inbox does not list sent %q %q", ev.name, ev.data)
		}
	}
	w.report(1001, "main working\nside working\n")
	if ev := es.next(false); !strings.Contains(ev.data, "Nothing needs you") {
		t.Fatalf("the agent works again, but the inbox lists %q", ev.data)
	}
}

// TestAStreamEndsWithItsSession: revoking the login, logging out and
// changing the password elsewhere end the stream at once; an idle
// session's at the next keep-alive; a stream outlives the listener's write
// deadline and keeps its session from going idle.
func TestAStreamEndsWithItsSession(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(w *tw, box string)
	}{
		{"revoke", func(w *tw, _ string) {
			if r := w.do(w.s.Control(), rq{method: "POST", host: "control", target: "/revoke", uid: intp(0), form: url.Values{"login": {"al"}}}); r.Code != 200 {
				w.t.Fatalf("revoke: %d", r.Code)
			}
		}},
		{"logout", func(w *tw, box string) {
			w.pages(rq{method: "POST", host: "box.test", target: "/auth/logout", cookies: []string{box}})
		}},
		{"password changed in another session", func(w *tw, _ string) {
			other := w.login("al")
			r := w.pages(rq{method: "POST", host: "box.test", target: "/auth/password", cookies: []string{other},
				form: url.Values{"old": {testPasswords["al"]}, "new": {"a-new-password"}, "repeat": {"a-new-password"}}})
			if r.Code != 200 {
				w.t.Fatalf("password: %d %s", r.Code, r.Body)
			}
		}},
		{"idle", func(w *tw, _ string) { w.clock.Advance(time.Hour) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newTW(t)
			w.s.keepAlive = 50 * time.Millisecond
			if c.name == "revoke" {
				w.s.keepAlive = time.Hour // so only the wake-up can end it in time
			}
			box := w.login("al")
			es, _ := w.stream(w.pagesServer(), "/auth/inbox", box)
			es.next(false)
			c.end(w, box)
			es.ends()
		})
	}
	t.Run("kept open", func(t *testing.T) {
		w := newTW(t)
		w.s.keepAlive = 50 * time.Millisecond
		box := w.login("al")
		es, _ := w.stream(w.pagesServer(), "/auth/inbox", box)
		es.next(false)
		for range 3 { // 1.5 × the idle timeout (within the lifetime), a keep-alive after each half hour
			w.clock.Advance(30 * time.Minute)
			es.next(true)
			es.next(true)
		}
		time.Sleep(400 * time.Millisecond) // past the listener's write deadline
		if ev := es.next(true); ev.name != ":" {
			t.Fatalf("got %q, want a keep-alive", ev.name)
		}
		if w.verifyCode("alice", w.child(box, "alice")) != 204 {
			t.Error("the session went idle while its stream was open")
		}
	})
}

// TestTheInboxStreamNeedsALiveBoxSession: no cookie, a user origin's
// child cookie, an ended session: 403 and no stream; the user origins have
// no inbox.
func TestTheInboxStreamNeedsALiveBoxSession(t *testing.T) {
	w := newTW(t)
	f := w.family()
	addr := w.pagesServer()
	ended := w.login("al")
	w.pages(rq{method: "POST", host: "box.test", target: "/auth/logout", cookies: []string{ended}})
	for name, cookie := range map[string]string{"none": "", "a child session": f.alice, "an ended session": ended} {
		if _, code := w.stream(addr, "/auth/inbox", cookie); code != 403 {
			t.Errorf("%s: %d, want 403", name, code)
		}
	}
	if r := w.pages(rq{method: "GET", host: "alice.box.test", target: "/auth/inbox", cookies: []string{f.alice}}); r.Code != 404 {
		t.Errorf("a user origin's /auth/inbox: %d, want 404", r.Code)
	}
	if r := w.pages(rq{method: "POST", host: "box.test", target: "/auth/inbox", cookies: []string{f.box}}); r.Code != 405 {
		t.Errorf("POST: %d, want 405", r.Code)
	}
}

// TestALoginsStreamsAreBounded: one stream more than maxStreams ends the
// oldest, which says why (so its page stops instead of reconnecting).
func TestALoginsStreamsAreBounded(t *testing.T) {
	w := newTW(t)
	box := w.login("al")
	addr := w.pagesServer()
	max := contract.Attention.Inbox.MaxStreams
	var all []*eventStream
	for range max + 1 {
		es, _ := w.stream(addr, "/auth/inbox", box)
		es.next(false)
		all = append(all, es)
	}
	if ev := all[0].next(false); ev.name != "closed" || ev.data != evictedText {
		t.Errorf("the oldest stream got %q %q, want closed", ev.name, ev.data)
	}
	all[0].closes()
	if n := w.s.streams.Count("al"); n != max {
		t.Errorf("%d streams open, want %d", n, max)
	}
}

// TestAStaleReportIsNotListed: a user whose supervisor has not reported
// for board.StaleAfter is left out (at the next keep-alive for a stream).
func TestAStaleReportIsNotListed(t *testing.T) {
	w := newTW(t)
	w.fakeUsers()
	w.s.keepAlive = 50 * time.Millisecond
	w.report(1001, "main needs-you permission\n")
	box := w.login("al")
	es, _ := w.stream(w.pagesServer(), "/auth/inbox", box)
	if ev := es.next(false); len(items(t, ev.data)) != 1 {
		t.Fatalf("first event: %q", ev.data)
	}
	w.clock.Advance(contract.Duration(contract.Attention.Inbox.StaleAfter))
	if ev := es.next(false); !strings.Contains(ev.data, "Nothing needs you") {
		t.Errorf("a stale report is still listed: %q", ev.data)
	}
	page := w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{box}}).Body.String()
	if got := items(t, inboxOf(t, page)); len(got) != 0 {
		t.Errorf("the page lists a stale report: %q", got)
	}
}

// TestAnotherOriginCannotOpenOrEndTheInboxStreams: requests another
// origin's page can make with the person's cookies (an <img>, a no-cors
// fetch; a sibling app's page) are refused before they count, so the
// person's own stream stays the only one, open; a client without
// Sec-Fetch-Site gets a stream only by asking for text/event-stream.
func TestAnotherOriginCannotOpenOrEndTheInboxStreams(t *testing.T) {
	w := newTW(t)
	box := w.login("ops")
	own, code := w.stream(w.pagesServer(), "/auth/inbox", box)
	if code != 200 {
		t.Fatalf("the page's own stream: %d", code)
	}
	own.next(false)
	for _, c := range []struct {
		name string
		h    http.Header
	}{
		{"an <img> on a sibling origin", http.Header{"Accept": {"image/avif,image/webp,*/*"}, "Sec-Fetch-Site": {"same-site"}, "Sec-Fetch-Mode": {"no-cors"}, "Sec-Fetch-Dest": {"image"}}},
		{"a no-cors fetch from another site", http.Header{"Accept": {"text/event-stream"}, "Sec-Fetch-Site": {"cross-site"}, "Sec-Fetch-Mode": {"no-cors"}}},
		{"two Sec-Fetch-Site values", http.Header{"Accept": {"text/event-stream"}, "Sec-Fetch-Site": {"same-origin", "cross-site"}}},
		{"no Sec-Fetch-Site and not asking for a stream", http.Header{"Accept": {"*/*"}}},
	} {
		for range contract.Attention.Inbox.MaxStreams + 1 {
			if _, code := w.streamWith(w.pagesServer(), "/auth/inbox", box, c.h); code != 403 {
				t.Fatalf("%s: %d, want 403", c.name, code)
			}
		}
		if n := w.s.streams.Count("ops"); n != 1 {
			t.Fatalf("after %s: %d streams of ops, want the person's own alone", c.name, n)
		}
	}
	old, code := w.streamWith(w.pagesServer(), "/auth/inbox", box, http.Header{"Accept": {"text/event-stream"}})
	if code != 200 {
		t.Fatalf("no Sec-Fetch-Site, asking for a stream (an older browser's EventSource): %d, want 200", code)
	}
	old.next(false)
}
