package web

import (
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// closedWithin reports how long the daemon took to close a WebSocket whose
// client sends nothing: a read ends with EOF or a reset, not the deadline.
func closedWithin(t *testing.T, c net.Conn, br interface{ Read([]byte) (int, error) }, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(d))
	_, err := br.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the WebSocket is still open after %s (read: %v)", d, err)
	}
	return time.Since(start)
}

func TestAnEndedBoxSessionClosesItsWebSocketsOnly(t *testing.T) {
	const interval = 20 * time.Millisecond
	for _, tc := range []struct {
		name   string
		answer int // for session A; B always lives
		closes bool
	}{
		{"ended (404)", http.StatusNotFound, true},
		{"the user is no web user any more (403)", http.StatusForbidden, true},
		{"alive (204)", http.StatusNoContent, false},
		{"a status we do not know (500)", http.StatusInternalServerError, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(c *Config) { c.AliveInterval = interval })
			_, ca, bra := f.ws("/term/ws?arg=main", header("Origin", testOrigin))
			_, cb, brb := f.ws("/term/ws?arg=other", header("Origin", testOrigin, "X-Agent-Box-Session", "", "X-Agent-Box-Session", sessionB))
			for _, e := range []error{echo(ca, bra, "0a"), echo(cb, brb, "0b")} {
				if e != nil {
					t.Fatal(e)
				}
			}
			// both are open and alive (204); now session A gets its answer
			askedA, askedB := f.status.count(sessionA), f.status.count(sessionB)
			f.status.setAnswer(func(id string) int {
				if id == sessionA {
					return tc.answer
				}
				return http.StatusNoContent
			})
			if tc.closes {
				took := closedWithin(t, ca, bra, 5*time.Second)
				t.Logf("closed %s after the answer changed (interval %s)", took, interval)
				waitFor(t, 5*time.Second, "ttyd's side of the closed WebSocket is closed too", func() bool { return f.ttyd.openWebSockets() == 1 })
				waitFor(t, 5*time.Second, "the closing is logged", func() bool {
					return strings.Contains(f.log.String(), "box session ended: closed the terminal of main")
				})
			} else {
				waitFor(t, 5*time.Second, "three more questions about session A", func() bool { return f.status.count(sessionA) >= askedA+3 })
				if err := echo(ca, bra, "0still"); err != nil {
					t.Errorf("session A's WebSocket after three checks: %v", err)
				}
			}
			// the other box session's terminal is untouched either way
			waitFor(t, 5*time.Second, "three more questions about session B", func() bool { return f.status.count(sessionB) >= askedB+3 })
			if err := echo(cb, brb, "0b-still"); err != nil {
				t.Errorf("session B's WebSocket: %v", err)
			}
			if n := strings.Count(f.log.String(), "status socket answered"); tc.answer == 500 && n != 1 {
				t.Errorf("an unknown status is logged %d times, want once:\n%s", n, f.log)
			}
		})
	}
}

func TestAnUnreachableStatusSocketKeepsTerminalsOpenAndIsLoggedOnce(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.StatusSocket = filepath.Join(filepath.Dir(c.StatusSocket), "absent.sock") })
	_, c, br := f.ws("/term/ws?arg=main", header("Origin", testOrigin))
	waitFor(t, 5*time.Second, "the outage is logged", func() bool { return strings.Contains(f.log.String(), "status socket:") })
	r := f.srv.alive.rounds.Load()
	waitFor(t, 5*time.Second, "five more rounds", func() bool { return f.srv.alive.rounds.Load() >= r+5 })
	if err := echo(c, br, "0x"); err != nil {
		t.Fatalf("the terminal closed while the status socket was unreachable: %v", err)
	}
	if n := strings.Count(f.log.String(), "status socket:"); n != 1 {
		t.Errorf("the outage is logged %d times, want once:\n%s", n, f.log)
	}
	// it comes back: said once; an ended session is then closed
	startFakeStatus(t, filepath.Join(filepath.Dir(f.srv.cfg.StatusSocket), "absent.sock"), func(string) int { return http.StatusNotFound })
	closedWithin(t, c, br, 5*time.Second)
	waitFor(t, 5*time.Second, "the recovery is logged", func() bool { return strings.Contains(f.log.String(), "status socket answers again") })
	if n := strings.Count(f.log.String(), "status socket answers again"); n != 1 {
		t.Errorf("the recovery is logged %d times, want once:\n%s", n, f.log)
	}
}
