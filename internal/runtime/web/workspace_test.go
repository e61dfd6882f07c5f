package web

import (
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// assetsFixture is a daemon whose assets directory holds every served
// asset (its name as its content) and one file that is not an asset.
func assetsFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	for name := range servedAssets {
		writeFile(t, filepath.Join(dir, name), "content of "+name)
	}
	writeFile(t, filepath.Join(dir, "not-an-asset.mjs"), "secret")
	return newFixture(t, func(c *Config) { c.AssetsDir = dir })
}

func TestTheContractsAssetsAreServedWithTheirTypesAndNothingElse(t *testing.T) {
	f := assetsFixture(t)
	for _, tc := range []struct {
		path, ctype string
		code        int
	}{
		{"/assets/xterm.mjs", "text/javascript; charset=utf-8", 200},
		{"/assets/addon-fit.mjs", "text/javascript; charset=utf-8", 200},
		{"/assets/addon-clipboard.mjs", "text/javascript; charset=utf-8", 200},
		{"/assets/xterm.css", "text/css; charset=utf-8", 200},
		{"/assets/xterm.LICENSE", "text/plain; charset=utf-8", 200},
		{"/assets/workspace.mjs", "text/javascript; charset=utf-8", 200},
		{"/assets/not-an-asset.mjs", "", 404},
		{"/assets/..%2fetc%2fpasswd", "", 404},
		{"/assets/", "", 404},
	} {
		code, h, body := f.do(http.MethodGet, tc.path, header())
		if code != tc.code {
			t.Errorf("%s: %d, want %d (%q)", tc.path, code, tc.code, body)
			continue
		}
		if code == 200 && (h.Get("Content-Type") != tc.ctype || h.Get("X-Content-Type-Options") != "nosniff") {
			t.Errorf("%s: Content-Type %q (want %q), nosniff %q", tc.path, h.Get("Content-Type"), tc.ctype, h.Get("X-Content-Type-Options"))
		}
		if code == 200 && tc.path != "/assets/workspace.mjs" && body != "content of "+strings.TrimPrefix(tc.path, "/assets/") {
			t.Errorf("%s: body %q", tc.path, body)
		}
		if strings.Contains(body, "secret") {
			t.Errorf("%s served a file that is not an asset", tc.path)
		}
	}
}

func TestWithoutAssetsTheListHasNoWorkspace(t *testing.T) {
	f := newFixture(t)
	code, h, body := f.do(http.MethodGet, "/", header())
	if code != 200 || h.Get("Content-Security-Policy") != listCSP || strings.Contains(body, `id="workspace"`) || strings.Contains(body, "workspace.mjs") {
		t.Errorf("%d, CSP %q:\n%s", code, h.Get("Content-Security-Policy"), body)
	}
	for _, p := range []string{"/assets/workspace.mjs", "/assets/xterm.mjs"} {
		if code, _, _ := f.do(http.MethodGet, p, header()); code != http.StatusNotFound {
			t.Errorf("%s without assets: %d, want 404", p, code)
		}
	}
}

func TestTheListCarriesTheWorkspaceWithItsKeyBarAndPolicy(t *testing.T) {
	f := assetsFixture(t)
	code, h, body := f.do(http.MethodGet, "/", header())
	if code != 200 {
		t.Fatalf("%d:\n%s", code, body)
	}
	for _, want := range []string{
		`<script type="module" src="/assets/workspace.mjs"></script>`,
		`<link rel="stylesheet" href="/assets/xterm.css">`,
		`<section id="workspace" data-socket="/term/ws" hidden>`,
		`<button type="button" title="Ctrl-C (interrupt)" data-send="ctrl-c">^C</button>`,
		`<button type="button" title="Shift-Tab" data-send="backtab">⇤</button>`,
		`<button type="button" title="Up" data-send="arrow:A">↑</button>`,
		`<a href="/term/?arg=main" data-session="main">main</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self' " + hashSource(pageScript) + ";", "connect-src 'self' wss://" + testHost + ";", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(strings.Split(strings.SplitN(csp, "script-src", 2)[1], ";")[0], "unsafe") {
		t.Errorf("CSP %q: the scripts may be inline or evaluated", csp)
	}
}

// The module imports exactly the contract's libraries, from the route the
// daemon serves them on.
func TestTheWorkspaceImportsOnlyServedAssets(t *testing.T) {
	imports := regexp.MustCompile(`(?m)^import .* from "([^"]+)";$`).FindAllStringSubmatch(workspaceScript, -1)
	if len(imports) != 3 {
		t.Fatalf("%d imports, want 3 (xterm, fit, clipboard)", len(imports))
	}
	for _, m := range imports {
		name, ok := strings.CutPrefix(m[1], contract.WebAssets.Route)
		if !ok || !servedAssets[name] || !strings.HasSuffix(name, ".mjs") {
			t.Errorf("import %q is not a served module", m[1])
		}
	}
	// every key of the bar has a sequence in the module's table
	for _, k := range keyBar {
		if !strings.HasPrefix(k.Send, "arrow:") && !strings.Contains(workspaceScript, `"`+k.Send+`": "`) && !strings.Contains(workspaceScript, " "+k.Send+`: "`) {
			t.Errorf("key %s (%s) has no sequence in the module", k.Label, k.Send)
		}
	}
	// a license beside every library
	for _, p := range contract.WebAssets.Packages {
		lic := false
		for member := range p.Files {
			lic = lic || member == "package/LICENSE"
		}
		if !lic || p.License == "" || !strings.HasPrefix(p.Integrity, "sha512-") {
			t.Errorf("%s: license file %v, license %q, integrity %q", p.Name, lic, p.License, p.Integrity)
		}
	}
}

func TestAnAssetsDirectoryMustBeAbsolute(t *testing.T) {
	cfg := Config{User: testUser, Domain: testDomain, TTYDSocket: "/run/t.sock", TTYD: "/bin/ttyd", StatusSocket: "/run/s.sock", AssetsDir: "relative/dir"}
	if err := cfg.check(); err == nil || !strings.Contains(err.Error(), contract.Env.WebAssets.Name) {
		t.Errorf("check: %v", err)
	}
}
