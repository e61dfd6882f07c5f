package web

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/httpserve"
)

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestTheQueryTTYDSeesIsRebuilt(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name    string
		path    string
		want    int
		wantURI string // what ttyd sees; "" for nothing
	}{
		{"the page with its session", "/term/?arg=main", 200, "/term/?arg=main"},
		{"other parameters dropped", "/term/?cmd=rm&arg=main&arg2=x&-e=1", 200, "/term/?arg=main"},
		{"two args", "/term/?arg=main&arg=other", 400, ""},
		{"two args, one empty", "/term/?arg=main&arg=", 400, ""},
		{"no arg", "/term/", 400, ""},
		{"empty arg", "/term/?arg=", 400, ""},
		{"unknown session", "/term/?arg=nosuch", 400, ""},
		{"not a name", "/term/?arg=..%2Fmain", 400, ""},
		{"an option for tmux", "/term/?arg=-L", 400, ""},
		{"a semicolon", "/term/?arg=main;x=1", 400, ""},
		{"bad escape", "/term/?arg=%zz", 400, ""},
		{"a stopped session is still a session", "/term/?arg=park", 200, "/term/?arg=park"},
		{"token: no query at all", "/term/token?arg=main&x=1", 200, "/term/token"},
		{"the bare base path: no query", "/term?arg=evil&arg=more", 200, "/term"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.ttyd.requests())
			code, _, body := f.do(http.MethodGet, tc.path, header())
			if code != tc.want {
				t.Fatalf("status %d, want %d (body %q)", code, tc.want, body)
			}
			seen := f.ttyd.requests()[before:]
			switch {
			case tc.wantURI == "" && len(seen) != 0:
				t.Errorf("ttyd saw %q, want nothing", seen[0].URI)
			case tc.wantURI != "" && (len(seen) != 1 || seen[0].URI != tc.wantURI):
				t.Errorf("ttyd saw %+v, want exactly %q", seen, tc.wantURI)
			}
		})
	}
}

func TestOnlyGetAndHeadReachTTYD(t *testing.T) {
	f := newFixture(t)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, "PROPFIND"} {
		if code, _, _ := f.do(m, "/term/?arg=main", header()); code != http.StatusMethodNotAllowed {
			t.Errorf("%s: status %d, want 405", m, code)
		}
	}
	if n := len(f.ttyd.requests()); n != 0 {
		t.Errorf("ttyd saw %d requests", n)
	}
}

func TestNoCredentialReachesTTYD(t *testing.T) {
	f := newFixture(t)
	creds := []string{
		"Cookie", "__Host-agentbox=0123456789abcdef0123456789abcdef.c2VjcmV0",
		"Authorization", "Basic YWxpY2U6c2VjcmV0",
		"Proxy-Authorization", "Basic YWxpY2U6c2VjcmV0",
		"X-Agent-Box-Client", "192.0.2.1",
		"x-agent-box-anything", "1",
	}
	code, h, body := f.do(http.MethodGet, "/term/?arg=main", header(creds...))
	if code != http.StatusOK || !strings.Contains(body, fakeBody) {
		t.Fatalf("page: status %d, body %q", code, body)
	}
	if c := h.Values("Set-Cookie"); len(c) != 0 {
		t.Errorf("ttyd's Set-Cookie reached the client: %q", c)
	}
	res, c, br := f.ws("/term/ws?arg=main", header(append(creds, "Origin", testOrigin)...))
	if res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("WebSocket: status %d", res.StatusCode)
	}
	if err := echo(c, br, "0x"); err != nil {
		t.Fatal(err)
	}
	seen := f.ttyd.requests()
	if len(seen) != 2 {
		t.Fatalf("ttyd saw %d requests, want 2", len(seen))
	}
	for _, r := range seen {
		if k := hasCredentialHeader(r.Header); k != "" {
			t.Errorf("%s reached ttyd with %s: %q", r.URI, k, r.Header.Values(k))
		}
		if r.Host != testHost {
			t.Errorf("%s reached ttyd with Host %q, want %q (ttyd -O compares it with Origin)", r.URI, r.Host, testHost)
		}
	}
	if got := seen[1].Header.Get("Origin"); got != testOrigin {
		t.Errorf("the WebSocket reached ttyd with Origin %q, want %q", got, testOrigin)
	}
	// ttyd's -O meets the origin the daemon checked, whatever Host came in
	f.do(http.MethodGet, "/term/?arg=main", header("Host", "evil.example"))
	if seen := f.ttyd.requests(); seen[len(seen)-1].Host != testHost {
		t.Errorf("a request for Host evil.example reached ttyd with Host %q, want %q", seen[len(seen)-1].Host, testHost)
	}
}

func TestAWebSocketNeedsUsersOriginAndBoxSession(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name   string
		path   string
		header http.Header
		want   int
	}{
		{"own origin", "/term/ws?arg=main", header("Origin", testOrigin), 101},
		{"own origin, extra parameters dropped", "/term/ws?arg=main&x=1", header("Origin", testOrigin), 101},
		{"no origin", "/term/ws?arg=main", header(), 403},
		{"another site", "/term/ws?arg=main", header("Origin", "https://evil.example"), 403},
		{"another user's origin", "/term/ws?arg=main", header("Origin", "https://bob."+testDomain), 403},
		{"the box origin", "/term/ws?arg=main", header("Origin", "https://"+testDomain), 403},
		{"plain http", "/term/ws?arg=main", header("Origin", "http://"+testHost), 403},
		{"explicit port", "/term/ws?arg=main", header("Origin", testOrigin+":443"), 403},
		{"suffix", "/term/ws?arg=main", header("Origin", testOrigin+".evil.example"), 403},
		{"null", "/term/ws?arg=main", header("Origin", "null"), 403},
		{"two origins", "/term/ws?arg=main", header("Origin", testOrigin, "Origin", "https://evil.example"), 403},
		{"no box session", "/term/ws?arg=main", header("Origin", testOrigin, "X-Agent-Box-Session", ""), 403},
		{"a malformed box session", "/term/ws?arg=main", header("Origin", testOrigin, "X-Agent-Box-Session", "", "X-Agent-Box-Session", "x"), 403},
		{"two box sessions", "/term/ws?arg=main", header("Origin", testOrigin, "X-Agent-Box-Session", sessionB), 403},
		{"two args", "/term/ws?arg=main&arg=other", header("Origin", testOrigin), 400},
		{"unknown session", "/term/ws?arg=nosuch", header("Origin", testOrigin), 400},
		{"no arg", "/term/ws", header("Origin", testOrigin), 400},
		{"another user's identity", "/term/ws?arg=main", header("Origin", testOrigin, "X-Agent-Box-User", "", "X-Agent-Box-User", "bob"), 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.ttyd.requests())
			res, c, br := f.ws(tc.path, tc.header)
			res.Body.Close()
			if res.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.want)
			}
			seen := f.ttyd.requests()[before:]
			if tc.want != 101 {
				if len(seen) != 0 {
					t.Errorf("a refused handshake reached ttyd: %q", seen[0].URI)
				}
				return
			}
			if len(seen) != 1 || seen[0].URI != "/term/ws?arg=main" {
				t.Errorf("ttyd saw %+v, want /term/ws?arg=main", seen)
			}
			for _, msg := range []string{"0hello", "0" + strings.Repeat("x", 70000)} {
				if err := echo(c, br, msg); err != nil {
					t.Fatalf("round trip of %d bytes: %v", len(msg), err)
				}
			}
		})
	}
}

func TestAnUpgradeThatIsNotAWebSocketIsRefused(t *testing.T) {
	f := newFixture(t)
	code, _, _ := f.do(http.MethodGet, "/term/ws?arg=main", header("Origin", testOrigin, "Upgrade", "h2c", "Connection", "Upgrade"))
	if code != http.StatusBadRequest {
		t.Errorf("status %d, want 400", code)
	}
	if n := len(f.ttyd.requests()); n != 0 {
		t.Errorf("ttyd saw %d requests", n)
	}
}

// shortLimits are listener limits a test can outlast.
var shortLimits = httpserve.Limits{ReadHeader: time.Second, Read: 200 * time.Millisecond, Write: 200 * time.Millisecond, Idle: 5 * time.Second}

// TestATerminalOutlivesTheListenersDeadlines: the web listener is bounded
// (the control: a form whose body stalls is cut at the read deadline), and
// a terminal is not: only its login session ends it (Alive), never a
// deadline. net/http clears a connection's deadlines when the proxy
// hijacks it for the WebSocket; term's httpserve.Unbound before that
// covers the handshake with ttyd.
func TestATerminalOutlivesTheListenersDeadlines(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Limits = shortLimits })
	t.Run("a stalled form is cut (control)", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", f.web.Listener.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /settings/sessions HTTP/1.1\r\nHost: %s\r\nX-Agent-Box-User: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\naction=", testHost, testUser)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = io.ReadAll(c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the daemon still waited for the body after 10s")
		}
	})
	t.Run("a terminal is not cut", func(t *testing.T) {
		res, c, br := f.ws("/term/ws?arg=main", header("Origin", testOrigin))
		res.Body.Close()
		if res.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("status %d", res.StatusCode)
		}
		for i := range 3 {
			time.Sleep(shortLimits.Read + shortLimits.Write) // past both deadlines
			if err := echo(c, br, "0still"); err != nil {
				t.Fatalf("round trip %d, after %s: %v", i, time.Duration(i+1)*(shortLimits.Read+shortLimits.Write), err)
			}
		}
	})
}
