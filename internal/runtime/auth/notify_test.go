package auth

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-box/agent-box/internal/runtime/notify"
)

// notifyConfig is testConfig with notifications for ops (alice and bob)
// and al (alice only).
var notifyConfig = strings.NewReplacer(
	`"ops": {"users": ["alice", "bob"]}`, `"ops": {"users": ["alice", "bob"], "notify": true}`,
	`"al": {"users": ["alice"]}`, `"al": {"users": ["alice"], "notify": true}`,
).Replace(testConfig)

// feedOf points w's feed at a fresh datagram socket, runs it, and returns
// the socket to read.
func (w *tw) feedOf() net.PacketConn {
	w.t.Helper()
	path := filepath.Join(w.t.TempDir(), "feed.sock")
	conn, err := net.ListenPacket("unixgram", path)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { conn.Close() })
	w.s.feed = notify.NewFeed(path, w.s.log)
	ctx, cancel := context.WithCancel(context.Background())
	w.t.Cleanup(cancel)
	go w.s.feed.Run(ctx)
	return conn
}

// datagrams reads what arrives on conn within wait.
func datagrams(t *testing.T, conn net.PacketConn, wait time.Duration) []notify.Event {
	t.Helper()
	var out []notify.Event
	buf := make([]byte, 1<<16)
	for {
		conn.SetReadDeadline(time.Now().Add(wait))
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			return out
		}
		e, err := notify.ParseFeed(buf[:n])
		if err != nil {
			t.Fatalf("a datagram the notify service would refuse: %v: %s", err, buf[:n])
		}
		out = append(out, e)
	}
}

// TestANewInboxEntryIsSentToTheLoginsWithNotificationsThatMayOpenItsUser:
// one event per entry that newly entered an inbox state, to each login
// with notifications that may open the user (bob's to ops, never to al),
// in the documented form;
// nothing for a first report (the service cannot know what it said before
// it started), a working session, or an entry that stays as it was.
func TestANewInboxEntryIsSentToTheLoginsWithNotificationsThatMayOpenItsUser(t *testing.T) {
	w := newTW(t)
	w.restart(notifyConfig)
	w.fakeUsers()
	conn := w.feedOf()
	steps := []struct {
		uid    int
		report string
		want   []notify.Event
	}{
		{1001, "main needs-you permission\n", nil},
		{1001, "main needs-you permission\nside finished turn\n", []notify.Event{
			{Login: "al", User: "alice", Session: "side", State: "finished", Reason: "turn", Link: "https://alice.box.test/term/?arg=side", Time: "2026-12-01T10:00:00Z"},
			{Login: "ops", User: "alice", Session: "side", State: "finished", Reason: "turn", Link: "https://alice.box.test/term/?arg=side", Time: "2026-12-01T10:00:00Z"},
		}},
		{1001, "main working\nside finished turn\n", nil},
		{1001, "main needs-you question\nside finished turn\n", []notify.Event{
			{Login: "al", User: "alice", Session: "main", State: "needs-you", Reason: "question", Link: "https://alice.box.test/term/?arg=main", Time: "2026-12-01T10:00:00Z"},
			{Login: "ops", User: "alice", Session: "main", State: "needs-you", Reason: "question", Link: "https://alice.box.test/term/?arg=main", Time: "2026-12-01T10:00:00Z"},
		}},
		{1002, "build working\n", nil},
		{1002, "build crash-looping\n", []notify.Event{
			{Login: "ops", User: "bob", Session: "build", State: "crash-looping", Link: "https://bob.box.test/term/?arg=build", Time: "2026-12-01T10:00:00Z"},
		}},
	}
	for i, st := range steps {
		if got := w.report(st.uid, st.report); got != 204 {
			t.Fatalf("step %d: report %d", i+1, got)
		}
		if diff := cmp.Diff(st.want, datagrams(t, conn, 200*time.Millisecond)); diff != "" {
			t.Errorf("step %d (%q): datagrams (-want +got):\n%s", i+1, st.report, diff)
		}
	}
}

// TestAMissingFeedHoldsNoReportAndIsLoggedOnce: with no notify socket the
// reports are still taken at once; the failure is logged once, and its
// end when the socket is back.
func TestAMissingFeedHoldsNoReportAndIsLoggedOnce(t *testing.T) {
	w := newTW(t)
	w.restart(notifyConfig)
	w.fakeUsers()
	path := filepath.Join(t.TempDir(), "feed.sock")
	w.s.feed = notify.NewFeed(path, w.s.log)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.s.feed.Run(ctx)
	w.report(1001, "main working\n")
	for i := range 5 {
		state := []string{"needs-you permission", "working"}[i%2]
		if got := w.report(1001, "main "+state+"\n"); got != 204 {
			t.Fatalf("report %d: %d", i, got)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(w.log.String(), "notify: a notification was not sent") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if n := strings.Count(w.log.String(), "notify: a notification was not sent"); n != 1 {
		t.Errorf("%d failure lines, want 1:\n%s", n, w.log)
	}
	conn, err := net.ListenPacket("unixgram", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w.report(1001, "main needs-you question\n")
	if got := datagrams(t, conn, time.Second); len(got) != 2 {
		t.Errorf("%d datagrams once the socket is back, want 2 (al's and ops's)", len(got))
	}
	if !strings.Contains(w.log.String(), "notify: the feed takes notifications again") {
		t.Errorf("no recovery line:\n%s", w.log)
	}
}
