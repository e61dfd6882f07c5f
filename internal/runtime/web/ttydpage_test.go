package web

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTTYDPageHashesComeFromThePageCompiledIntoTheBinary(t *testing.T) {
	dir := t.TempDir()
	got, err := TTYDPageHashes(fakeTTYDBinary(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != fakeTTYDScriptHash {
		t.Errorf("hashes %q, want [%s]", got, fakeTTYDScriptHash)
	}
	write := func(name string, parts ...[]byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, bytes.Join(parts, nil), 0o755)
		return p
	}
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.Bytes()
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"no page", write("nopage", []byte("code"), gz("a sound")), "no HTML page compiled in"},
		{"a page without a script", write("noscript", gz("<!DOCTYPE html><p>x</p>")), "has no inline script"},
		{"a page that loads a script", write("src", gz(`<html><script src="https://evil.example/x.js"></script></html>`)), "loads a script from elsewhere"},
		{"no such file", filepath.Join(dir, "absent"), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := TTYDPageHashes(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestEveryTerminalAnswerAllowsOnlyTTYDsOwnScripts: fault 1 of the attack
// (issue 17). Whatever answers on ttyd's socket, the terminal route's
// answers carry a policy that lets only the scripts of the page compiled
// into the ttyd binary run; the daemon's own pages keep theirs.
func TestEveryTerminalAnswerAllowsOnlyTTYDsOwnScripts(t *testing.T) {
	f := newFixture(t)
	want := "default-src 'none'; script-src " + fakeTTYDScriptHash + " 'wasm-unsafe-eval'; style-src 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self' wss://" + testHost + "; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	for _, path := range []string{"/term/?arg=main", "/term/token", "/term/nosuch"} {
		code, h, _ := f.do(http.MethodGet, path, header())
		if code == http.StatusBadGateway || h.Get("Content-Security-Policy") != want {
			t.Errorf("%s: %d, CSP %q\nwant %q", path, code, h.Get("Content-Security-Policy"), want)
		}
	}
	if _, h, _ := f.do(http.MethodGet, "/settings", header()); h.Get("Content-Security-Policy") != scriptCSP {
		t.Errorf("the settings page's CSP changed: %q", h.Get("Content-Security-Policy"))
	}
}

func TestWithoutTTYDsPageTheTerminalRunsNoScript(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.TTYD = "/nonexistent/ttyd" })
	_, h, _ := f.do(http.MethodGet, "/term/?arg=main", header())
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'none'") {
		t.Errorf("CSP %q, want script-src 'none'", csp)
	}
	if !strings.Contains(f.log.String(), "ttyd's page: open /nonexistent/ttyd: no such file or directory; the terminal page will run no script") {
		t.Errorf("log:\n%s", f.log)
	}
}
