package web

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

const secret = "BOB-SECRET-7f3a"

// downloadsFixture is a daemon whose user has a ~/downloads with a file,
// an HTML file, a nested directory, a FIFO, a symlink inside and two
// symlinks out (to a file of "bob" and to the parent directory).
func downloadsFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	d := filepath.Join(f.env.Home, DownloadsDir)
	bob := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(d, "sub dir"), 0o755))
	must(os.WriteFile(filepath.Join(d, "report.txt"), []byte("0123456789"), 0o644))
	must(os.WriteFile(filepath.Join(d, `<b>x"y<i>.html`), []byte("<script>alert(1)</script>"), 0o644))
	must(os.WriteFile(filepath.Join(d, "sub dir", "ünï.bin"), []byte("nested"), 0o644))
	must(syscall.Mkfifo(filepath.Join(d, "pipe"), 0o644))
	must(os.Symlink("report.txt", filepath.Join(d, "alias.txt")))
	must(os.WriteFile(filepath.Join(bob, "secret.txt"), []byte(secret), 0o644))
	must(os.WriteFile(filepath.Join(f.env.Home, "private.txt"), []byte(secret), 0o644))
	must(os.Symlink(filepath.Join(bob, "secret.txt"), filepath.Join(d, "bob.txt")))
	must(os.Symlink("..", filepath.Join(d, "up")))
	return f
}

func TestDownloadsServesFilesAsAttachmentsOnly(t *testing.T) {
	f := downloadsFixture(t)
	for _, tc := range []struct {
		name, path, body, filename string
	}{
		{"a text file", "/downloads/report.txt", "0123456789", `attachment; filename="report.txt"; filename*=UTF-8''report.txt`},
		{"an HTML file is not HTML here", "/downloads/%3Cb%3Ex%22y%3Ci%3E.html", "<script>alert(1)</script>",
			`attachment; filename="<b>x_y<i>.html"; filename*=UTF-8''%3Cb%3Ex%22y%3Ci%3E.html`},
		{"a nested file with a UTF-8 name", "/downloads/sub%20dir/%C3%BCn%C3%AF.bin", "nested",
			`attachment; filename="_n_.bin"; filename*=UTF-8''%C3%BCn%C3%AF.bin`},
		{"a symlink that stays inside", "/downloads/alias.txt", "0123456789", `attachment; filename="alias.txt"; filename*=UTF-8''alias.txt`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, h, body := f.do(http.MethodGet, tc.path, header())
			if code != http.StatusOK || body != tc.body {
				t.Fatalf("%d %q, want 200 %q", code, body, tc.body)
			}
			for k, want := range map[string]string{
				"Content-Disposition":     tc.filename,
				"Content-Type":            "application/octet-stream",
				"X-Content-Type-Options":  "nosniff",
				"Content-Security-Policy": downloadCSP,
			} {
				if got := h.Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
			if !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
				t.Errorf("the CSP has no sandbox: %q", h.Get("Content-Security-Policy"))
			}
		})
	}
}

func TestDownloadsNeverLeaveTheDirectory(t *testing.T) {
	f := downloadsFixture(t)
	for _, tc := range []struct {
		name, path string
	}{
		{"a symlink to another user's file", "/downloads/bob.txt"},
		{"a symlink to the home", "/downloads/up/private.txt"},
		{"the symlink to the home as a directory", "/downloads/up/"},
		{"an encoded dot-dot", "/downloads/%2e%2e/private.txt"},
		{"an encoded slash and dot-dot", "/downloads/sub%20dir%2f..%2f..%2fprivate.txt"},
		{"an absolute path in the name", "/downloads//etc/passwd"},
		{"a FIFO (it must not hang)", "/downloads/pipe"},
		{"a file as a directory", "/downloads/report.txt/"},
		{"a missing file", "/downloads/nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, h, body := f.do(http.MethodGet, tc.path, header())
			if code == http.StatusOK || strings.Contains(body, secret) || strings.Contains(body, "root:") {
				t.Fatalf("%d %q (Location %q): want no content", code, body, h.Get("Location"))
			}
			redirect := code == http.StatusMovedPermanently || code == http.StatusTemporaryRedirect
			if code != http.StatusNotFound && !redirect {
				t.Errorf("status %d, want 404 (or the mux's redirect to a cleaned path)", code)
			}
			if redirect {
				// wherever the cleaned path leads, it is not a file outside
				code, _, body := f.do(http.MethodGet, h.Get("Location"), header())
				if code == http.StatusOK && !strings.HasPrefix(h.Get("Location"), "/downloads/") || strings.Contains(body, secret) {
					t.Errorf("the redirect to %q gave %d %q", h.Get("Location"), code, body)
				}
			}
		})
	}
}

func TestDownloadsListing(t *testing.T) {
	f := downloadsFixture(t)
	code, h, body := f.do(http.MethodGet, "/downloads/", header())
	if code != http.StatusOK || h.Get("Content-Security-Policy") != pageCSP || h.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("%d %v", code, h)
	}
	for _, want := range []string{
		`<a href="/downloads/report.txt">report.txt</a></td><td>10</td>`,
		`<a href="/downloads/sub%20dir/">sub dir/</a>`,
		`<a href="/downloads/%3Cb%3Ex%22y%3Ci%3E.html">&lt;b&gt;x&#34;y&lt;i&gt;.html</a>`,
		`<a href="/downloads/alias.txt">alias.txt</a></td><td>link</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the listing lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "pipe") || strings.Contains(body, "<script") || strings.Contains(body, "<b>") {
		t.Errorf("the listing shows a FIFO or unescaped markup:\n%s", body)
	}
	code, _, body = f.do(http.MethodGet, "/downloads/sub%20dir/", header())
	if code != http.StatusOK || !strings.Contains(body, `<a href="/downloads/sub%20dir/%C3%BCn%C3%AF.bin">ünï.bin</a>`) || !strings.Contains(body, `<a href="/downloads/">Up</a>`) {
		t.Errorf("the nested listing: %d\n%s", code, body)
	}
	code, h, _ = f.do(http.MethodGet, "/downloads/sub%20dir", header())
	if code != http.StatusMovedPermanently || h.Get("Location") != "/downloads/sub%20dir/" {
		t.Errorf("a directory without its slash: %d %q", code, h.Get("Location"))
	}
	code, h, _ = f.do(http.MethodGet, "/downloads", header())
	if code != http.StatusMovedPermanently || h.Get("Location") != "/downloads/" {
		t.Errorf("/downloads: %d %q", code, h.Get("Location"))
	}
	if code, _, body := f.do(http.MethodGet, "/", header()); code != http.StatusOK || !strings.Contains(body, `<a href="/downloads/">Downloads</a>`) {
		t.Errorf("the session list does not link the downloads: %d", code)
	}
}

func TestDownloadsWithoutTheDirectory(t *testing.T) {
	f := newFixture(t)
	code, _, body := f.do(http.MethodGet, "/downloads/", header())
	if code != http.StatusOK || !strings.Contains(body, "<code>~/downloads</code> does not exist") {
		t.Errorf("%d\n%s", code, body)
	}
	if code, _, _ := f.do(http.MethodGet, "/downloads/x", header()); code != http.StatusNotFound {
		t.Errorf("a file without the directory: %d", code)
	}
}

func TestDownloadsNeedTheUser(t *testing.T) {
	f := downloadsFixture(t)
	for _, h := range []http.Header{header("X-Agent-Box-User", ""), header("X-Agent-Box-User", "", "X-Agent-Box-User", "bob")} {
		if code, _, body := f.do(http.MethodGet, "/downloads/report.txt", h); code != http.StatusForbidden || strings.Contains(body, "0123") {
			t.Errorf("%v: %d %q", h, code, body)
		}
	}
	if code, _, _ := f.do(http.MethodPost, "/downloads/report.txt", header()); code == http.StatusOK {
		t.Error("POST served a file")
	}
}

func TestDownloadsHonourRange(t *testing.T) {
	f := downloadsFixture(t)
	code, h, body := f.do(http.MethodGet, "/downloads/report.txt", header("Range", "bytes=2-4"))
	if code != http.StatusPartialContent || body != "234" || h.Get("Content-Range") != "bytes 2-4/10" {
		t.Errorf("%d %q %q", code, body, h.Get("Content-Range"))
	}
	if h.Get("Content-Disposition") == "" || h.Get("Content-Security-Policy") != downloadCSP {
		t.Errorf("a range lost the attachment headers: %v", h)
	}
	code, h, _ = f.do(http.MethodHead, "/downloads/report.txt", header())
	if code != http.StatusOK || h.Get("Content-Length") != "10" || h.Get("Accept-Ranges") != "bytes" {
		t.Errorf("HEAD: %d %v", code, h)
	}
}

// bigDownload puts a sparse file of size bytes in the downloads and
// returns alice's request for it.
func bigDownload(t *testing.T, f *fixture, size int64) *http.Request {
	t.Helper()
	d := filepath.Join(f.env.Home, DownloadsDir)
	os.MkdirAll(d, 0o755)
	big, err := os.Create(filepath.Join(d, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	big.Truncate(size) // sparse
	big.Close()
	req, _ := http.NewRequest(http.MethodGet, f.web.URL+"/downloads/big.bin", nil)
	req.Host, req.Header = testHost, header()
	return req
}

// A large file streams: serving 64 MiB allocates a small fraction of it.
func TestDownloadsStreamLargeFiles(t *testing.T) {
	f := newFixture(t)
	const size = 64 << 20
	req := bigDownload(t, f, size)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	runtime.ReadMemStats(&after)
	if err != nil || n != size {
		t.Fatalf("read %d bytes (%v), want %d", n, err, size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/8 {
		t.Errorf("serving %d bytes allocated %d: the file was read into memory", size, alloc)
	}
}

// A download to a client that stops reading for a while outlasts the
// listener's write deadline: it lifts the bounds of its own request.
func TestADownloadOutlastsTheWriteDeadline(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Limits = shortLimits })
	const size = 64 << 20 // far more than the socket buffers hold
	req := bigDownload(t, f, size)
	res, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	// the daemon's writes block on full buffers past its write deadline
	time.Sleep(3 * shortLimits.Write)
	if n, err := io.Copy(io.Discard, res.Body); err != nil || n != size {
		t.Fatalf("read %d of %d bytes: %v", n, size, err)
	}
}
