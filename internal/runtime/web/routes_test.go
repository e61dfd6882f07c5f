package web

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
)

func TestEveryRequestMustCarryItsOwnUser(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name   string
		path   string
		header http.Header
		want   int
	}{
		{"own user", "/", header(), http.StatusOK},
		{"no user header", "/", header("X-Agent-Box-User", ""), http.StatusForbidden},
		{"another user", "/", header("X-Agent-Box-User", "", "X-Agent-Box-User", "bob"), http.StatusForbidden},
		{"case differs", "/", header("X-Agent-Box-User", "", "X-Agent-Box-User", "Alice"), http.StatusForbidden},
		{"prefix of the user", "/", header("X-Agent-Box-User", "", "X-Agent-Box-User", "alic"), http.StatusForbidden},
		{"twice", "/", header("X-Agent-Box-User", testUser), http.StatusForbidden},
		{"another user's terminal page", "/term/?arg=main", header("X-Agent-Box-User", "", "X-Agent-Box-User", "bob"), http.StatusForbidden},
		{"no user, terminal token", "/term/token", header("X-Agent-Box-User", ""), http.StatusForbidden},
		{"unknown path", "/etc/passwd", header(), http.StatusNotFound},
		{"auth is not ours", "/auth/login", header(), http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.ttyd.requests())
			code, _, body := f.do(http.MethodGet, tc.path, tc.header)
			if code != tc.want {
				t.Errorf("status %d, want %d (body %q)", code, tc.want, body)
			}
			if tc.want == http.StatusForbidden {
				if n := len(f.ttyd.requests()); n != before {
					t.Errorf("a refused request reached ttyd")
				}
				if strings.Contains(body, fakeBody) {
					t.Errorf("ttyd's answer reached the client of a refused request")
				}
			}
		})
	}
}

func TestOwnPagesCarryTheSecurityHeaders(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, method, path string
		header             http.Header
		csp                string
	}{
		{"list", http.MethodGet, "/", header(), listCSP},
		{"refusal", http.MethodGet, "/", header("X-Agent-Box-User", ""), "default-src 'none'; frame-ancestors 'none'"},
		{"not found", http.MethodGet, "/nope", header(), "default-src 'none'; frame-ancestors 'none'"},
		{"bad query", http.MethodGet, "/term/?arg=nosuch", header(), "default-src 'none'; frame-ancestors 'none'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, h, _ := f.do(tc.method, tc.path, tc.header)
			for k, want := range map[string]string{
				"Content-Security-Policy": tc.csp,
				"X-Frame-Options":         "DENY",
				"X-Content-Type-Options":  "nosniff",
				"Cache-Control":           "no-store",
				"Referrer-Policy":         "no-referrer",
			} {
				if got := h.Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestTheListShowsSessionsEscapedWithTheirStateAndTerminalLink(t *testing.T) {
	f := newFixture(t)
	code, h, body := f.do(http.MethodGet, "/", header())
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Fatalf("status %d, type %q", code, h.Get("Content-Type"))
	}
	for _, want := range []string{
		`<a href="/term/?arg=main" data-session="main">main</a>`,
		`<a href="/term/?arg=park" data-session="park">park</a>`,
		`<td>claude</td>`,
		`&lt;script&gt;alert(&#34;agent&#34;)&lt;/script&gt;`,
		`<tr class="stopped"><td><a href="/term/?arg=park" data-session="park">park</a></td><td>shell</td><td>stopped</td><td></td><td>0</td><td><a href="/uploads?session=park">Upload</a>`,
		`<button name="action" value="remove" data-confirm="Remove session park? Its agent is ended and the session is forgotten (its conversation file too).">Remove</button>`,
		`<tbody id="sessions" data-events="/events">`,
		// no supervisor runs in this HOME: the others are unknown, as in session ls
		`<td>unknown</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}
	// the one script is what the CSP allows by hash
	_, rest, _ := strings.Cut(body, "<script>")
	script, _, _ := strings.Cut(rest, "</script>")
	sum := sha256.Sum256([]byte(script))
	if want := "script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; strings.Count(body, "<script") != 1 || !strings.Contains(h.Get("Content-Security-Policy"), want) {
		t.Errorf("want one script, allowed by the CSP %q (%s)", h.Get("Content-Security-Policy"), want)
	}
	// the product's one stylesheet and icon, served by the auth service on
	// this origin; no inline style
	for _, want := range []string{`<link rel="stylesheet" href="/auth/style.css">`, `<link rel="icon" href="/auth/favicon.svg">`, `<main class="wide">`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(body, "<style") || strings.Contains(body, " style=") || !strings.Contains(h.Get("Content-Security-Policy"), "style-src 'self';") {
		t.Errorf("an inline style, or CSP %q without style-src 'self'", h.Get("Content-Security-Policy"))
	}
	if !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("CSP %q: want default-src 'none'", h.Get("Content-Security-Policy"))
	}
}

func TestACorruptRegistryIsAnErrorPageNotAnEmptyList(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.env.Registry(), "{")
	code, _, body := f.do(http.MethodGet, "/", header())
	if code != http.StatusInternalServerError || !strings.Contains(body, "cannot be read") {
		t.Errorf("status %d, body:\n%s", code, body)
	}
}

func TestRefusalsAreLoggedOneEscapedLineEachWithoutCredentials(t *testing.T) {
	f := newFixture(t)
	const cookie = "__Host-agentbox=0123456789abcdef0123456789abcdef.c2VjcmV0LXNlY3JldC1zZWNyZXQ"
	f.do(http.MethodGet, "/", header("Cookie", cookie, "X-Agent-Box-User", "", "X-Agent-Box-User", "bob\u202e\"\\"))
	f.do(http.MethodGet, "/term/?arg=nosuch", header("Cookie", cookie, "Authorization", "Basic c2VjcmV0"))
	res, _, _ := f.ws("/term/ws?arg=main", header("Cookie", cookie, "Origin", "https://evil.example"))
	res.Body.Close()
	log := f.log.String()
	lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
	want := []string{
		`agent-box: web: refused wrong-user: GET "/" (got "bob\u202e\"\\")`,
		`agent-box: web: refused query: "/term/": no session "nosuch"`,
		`agent-box: web: refused origin: "/term/ws": Origin "https://evil.example", want https://alice.box.test`,
	}
	if len(lines) != len(want) {
		t.Fatalf("log has %d lines, want %d:\n%s", len(lines), len(want), log)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, lines[i], want[i])
		}
	}
	for _, secret := range []string{"c2VjcmV0", sessionA, "\u202e"} {
		if strings.Contains(log, secret) {
			t.Errorf("the log holds %q:\n%s", secret, log)
		}
	}
}
