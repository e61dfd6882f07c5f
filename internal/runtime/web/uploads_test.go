package web

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/uploads"
)

// upload is one file of an upload form.
type upload struct {
	name, body string
}

// uploadForm is a multipart form as a browser sends it: the session field
// (if any), then the files.
func uploadForm(t testing.TB, session string, files ...upload) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if session != "" {
		mw.WriteField("session", session)
	}
	for _, f := range files {
		h := textproto.MIMEHeader{}
		// written raw: CreateFormFile would not keep a path as a name
		disp := `form-data; name="file"; filename="` + f.name + `"`
		if strings.ContainsFunc(f.name, func(r rune) bool { return r < ' ' }) { // as RFC 2231 says
			disp = `form-data; name="file"; filename*=UTF-8''` + url.PathEscape(f.name)
		}
		h.Set("Content-Disposition", disp)
		h.Set("Content-Type", "application/octet-stream")
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.body))
	}
	mw.Close()
	return mw.FormDataContentType(), &buf
}

func (f *fixture) upload(session string, files ...upload) (int, http.Header, string) {
	f.t.Helper()
	ct, body := uploadForm(f.t, session, files...)
	return f.send(http.MethodPost, "/uploads", body, header("Content-Type", ct, "Sec-Fetch-Site", "same-origin", "Origin", testOrigin))
}

func (f *fixture) uploaded(name string) (string, bool) {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.env.Home, uploads.DirName, name))
	return string(b), err == nil
}

func TestAnUploadLandsByteForByteInUploadsAndOffersItsPath(t *testing.T) {
	f := newFixture(t)
	body := "\x89PNG\r\n\x1a\n\x00\xff binary"
	code, h, page := f.upload("main", upload{"shot.png", body})
	if code != http.StatusOK {
		t.Fatalf("status %d:\n%s", code, page)
	}
	if got, _ := f.uploaded("shot.png"); got != body {
		t.Errorf("stored %q, want %q", got, body)
	}
	path := filepath.Join(f.env.Home, "uploads", "shot.png")
	for _, want := range []string{
		"Uploaded <code>" + path + "</code>",
		`<input type="hidden" name="session" value="main"><input type="hidden" name="name" value="shot.png">`,
		"Type the path into main",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the answer lacks %q:\n%s", want, page)
		}
	}
	// the one script is what the CSP allows by hash, and nothing else runs
	_, rest, _ := strings.Cut(page, "<script>")
	script, _, _ := strings.Cut(rest, "</script>")
	sum := sha256.Sum256([]byte(script))
	csp := h.Get("Content-Security-Policy")
	if want := "script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, want) || script == "" {
		t.Errorf("CSP %q does not allow the page's script (%s)", csp, want)
	}
	if strings.Count(page, "<script") != 1 || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("want one script and default-src 'none'; CSP %q", csp)
	}
}

func TestUploadsRefuseWithAMessageThePersonCanActOn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fixture)
		files []upload
		code  int
		msg   string
	}{
		{"a path as a name", nil, []upload{{"../../escape", "x"}}, http.StatusBadRequest, "Bad name: the name contains a slash"},
		{"a control character", nil, []upload{{"a\x01b", "x"}}, http.StatusBadRequest, "Bad name: the name contains a control character"},
		{"too large", func(f *fixture) { f.srv.uploads.Max = 10 }, []upload{{"big", "12345678901"}}, http.StatusRequestEntityTooLarge, "Too large: at most 10 bytes per file."},
		{"quota full", func(f *fixture) { f.srv.uploads.Quota = 15 }, []upload{{"a", "1234567890"}, {"b", "123456"}}, http.StatusInsufficientStorage, "Quota full: ~/uploads holds 10 bytes of its 15 bytes; remove files there and upload again."},
		{"uploads is a symlink", func(f *fixture) { os.Symlink(t.TempDir(), filepath.Join(f.env.Home, "uploads")) }, []upload{{"x", "x"}}, http.StatusConflict, "~/uploads is a symlink; move it away and upload again."},
		{"no file chosen", nil, []upload{{"", ""}}, http.StatusBadRequest, "Choose a file first."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			code, _, page := f.upload("", tc.files...)
			if code != tc.code || !strings.Contains(page, `<p class="error">`+htmlText(tc.msg)) {
				t.Errorf("status %d (want %d), page lacks %q:\n%s", code, tc.code, tc.msg, page)
			}
			if _, err := os.Lstat(filepath.Join(filepath.Dir(f.env.Home), "escape")); err == nil {
				t.Errorf("a file escaped the home")
			}
		})
	}
}

// htmlText is s as html/template writes it in text.
func htmlText(s string) string {
	return strings.NewReplacer("'", "&#39;", `"`, "&#34;").Replace(s)
}

func TestSeveralFilesInOneFormAndATakenNameGetsANumber(t *testing.T) {
	f := newFixture(t)
	code, _, page := f.upload("", upload{"log.txt", "one"}, upload{"log.txt", "two"})
	if code != http.StatusOK {
		t.Fatalf("status %d:\n%s", code, page)
	}
	for name, want := range map[string]string{"log.txt": "one", "log-1.txt": "two"} {
		if got, _ := f.uploaded(name); got != want {
			t.Errorf("%s holds %q, want %q", name, got, want)
		}
	}
	if strings.Contains(page, "Type the path into") {
		t.Errorf("an upload without a session offers to type into one:\n%s", page)
	}
}

func TestAnUploadAfterTheAgentRemovedUploadsLandsInTheNewDirectory(t *testing.T) {
	f := newFixture(t)
	f.upload("", upload{"a", "1"})
	up := filepath.Join(f.env.Home, "uploads")
	if err := os.RemoveAll(up); err != nil {
		t.Fatal(err)
	}
	if code, _, page := f.upload("", upload{"b", "2"}); code != http.StatusOK {
		t.Fatalf("status %d:\n%s", code, page)
	}
	if got, ok := f.uploaded("b"); !ok || got != "2" {
		t.Errorf("after removal: %q %v", got, ok)
	}
}

func TestACrossSiteUploadIsRefused(t *testing.T) {
	f := newFixture(t)
	ct, body := uploadForm(t, "", upload{"x", "x"})
	code, _, _ := f.send(http.MethodPost, "/uploads", body, header("Content-Type", ct, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"))
	if code != http.StatusForbidden {
		t.Errorf("status %d, want 403", code)
	}
	if _, ok := f.uploaded("x"); ok {
		t.Errorf("a cross-site upload was stored")
	}
}

func TestPasteTypesTheQuotedPathIntoTheSessionWithoutEnter(t *testing.T) {
	f := newFixture(t)
	type typed struct{ session, text string }
	var got []typed
	f.srv.typePath = func(_ context.Context, session, text string) error {
		got = append(got, typed{session, text})
		return nil
	}
	f.upload("main", upload{"it's a log.txt", "x"}, upload{"plain.txt", "y"})
	code, h, page := f.post("/uploads/paste", url.Values{"session": {"main"}, "name": {"it's a log.txt"}})
	if code != http.StatusSeeOther || h.Get("Location") != "/uploads?session=main&typed=it%27s+a+log.txt" {
		t.Fatalf("status %d, Location %q:\n%s", code, h.Get("Location"), page)
	}
	f.post("/uploads/paste", url.Values{"session": {"main"}, "name": {"plain.txt"}})
	up := filepath.Join(f.env.Home, "uploads")
	want := []typed{{"main", "'" + up + `/it'\''s a log.txt'`}, {"main", up + "/plain.txt"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("typed %q, want %q", got, want)
	}
	_, _, page = f.do(http.MethodGet, "/uploads?session=main&typed=plain.txt", header())
	if !strings.Contains(page, "Typed the path of plain.txt into main.") {
		t.Errorf("the page after typing does not say so:\n%s", page)
	}
	for _, tc := range []struct {
		form url.Values
		code int
	}{
		{url.Values{"session": {"main"}, "name": {"nosuch"}}, http.StatusNotFound},
		{url.Values{"session": {"main"}, "name": {"../.config/agent-box/env"}}, http.StatusNotFound},
		{url.Values{"session": {"bad name"}, "name": {"plain.txt"}}, http.StatusBadRequest},
	} {
		if code, _, _ := f.post("/uploads/paste", tc.form); code != tc.code {
			t.Errorf("%v: status %d, want %d", tc.form, code, tc.code)
		}
	}
	if len(got) != 2 {
		t.Errorf("a refused paste typed something: %q", got)
	}
}

func TestTheUploadPageRefusesABadSessionName(t *testing.T) {
	f := newFixture(t)
	if code, _, _ := f.do(http.MethodGet, "/uploads?session=%3Cscript%3E", header()); code != http.StatusBadRequest {
		t.Errorf("status %d, want 400", code)
	}
	code, _, page := f.do(http.MethodGet, "/uploads?session=main", header())
	if code != http.StatusOK || !strings.Contains(page, `<h1>Upload for main</h1>`) || !strings.Contains(page, "At most 64 MiB per file, 512 MiB in all.") {
		t.Errorf("status %d:\n%s", code, page)
	}
}

func TestAnUploadAnnouncedOverTheLimitIsRefusedBeforeItIsRead(t *testing.T) {
	f := newFixture(t)
	ct, body := uploadForm(t, "", upload{"big", "tiny"})
	c, err := net.Dial("tcp", f.web.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	// announced over the limit, then only the start of the form: the
	// answer must come without the rest
	fmt.Fprintf(c, "POST /uploads HTTP/1.1\r\nHost: %s\r\nX-Agent-Box-User: %s\r\nSec-Fetch-Site: same-origin\r\nOrigin: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		testHost, testUser, testOrigin, ct, f.srv.uploadBodyLimit()+1)
	c.Write(body.Bytes())
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer before the rest of the body: %v", err)
	}
	defer res.Body.Close()
	page, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(page), "Too large: at most 64 MiB per file.") {
		t.Errorf("status %d:\n%s", res.StatusCode, page)
	}
	if _, ok := f.uploaded("big"); ok {
		t.Error("an upload announced over the limit was stored")
	}
}
