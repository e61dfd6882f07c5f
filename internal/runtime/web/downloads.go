package web

import (
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/httpserve"
	"github.com/agent-box/agent-box/internal/runtime/webui"
)

// DownloadsDir is the directory of U's home that /downloads/ serves.
const DownloadsDir = "downloads"

// downloadCSP is the Content-Security-Policy of every downloaded file: a
// browser that renders one anyway runs it in a unique, script-less origin.
const downloadCSP = "sandbox; default-src 'none'"

var downloadsPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("downloads").Funcs(pageFuncs).Parse(webui.Layout() + `{{template "page-head" (page (print .User ": " .Title))}}<h1>{{.Title}}</h1>
<p><a href="/">Sessions</a>{{if .Up}} · <a href="{{.Up}}">Up</a>{{end}}</p>
{{if .Missing}}<p>Nothing to download: <code>~/{{.Dir}}</code> does not exist. Files an agent puts there are listed here.</p>
{{else if not .Entries}}<p><code>~/{{.Dir}}</code> is empty.</p>
{{else}}<table><thead><tr><th>Name</th><th>Size</th><th>Modified (UTC)</th></tr></thead><tbody>
{{range .Entries}}<tr><td><a href="{{.Link}}">{{.Name}}</a></td><td>{{.Size}}</td><td>{{.Modified}}</td></tr>
{{end}}</tbody></table>{{end}}
{{template "page-foot"}}`))
})

type downloadRow struct {
	Name, Link, Size, Modified string
}

// downloads is GET /downloads/...: U's ~/downloads through an os.Root, so
// no symlink and no ".." leads out of it. A directory is listed; a regular
// file is sent as an attachment (Range works, nothing is read whole into
// memory); anything else, or anything outside, is 404.
func (s *Server) downloads(w http.ResponseWriter, r *http.Request) {
	rel, ok := strings.CutPrefix(r.URL.Path, "/downloads/")
	if !ok || !validRel(rel) {
		plain(w, http.StatusNotFound, "not found")
		return
	}
	dir := filepath.Join(s.cfg.Env.Home, DownloadsDir)
	root, err := os.OpenRoot(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && rel == "" {
			s.renderDownloads(w, rel, nil, true)
			return
		}
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Printf("downloads: %v", err)
		}
		plain(w, http.StatusNotFound, "not found")
		return
	}
	defer root.Close()
	name := "."
	if rel != "" {
		name = strings.TrimSuffix(rel, "/")
	}
	// O_NONBLOCK: a FIFO the agent left there must not hang the open.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		plain(w, http.StatusNotFound, "not found")
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		plain(w, http.StatusNotFound, "not found")
		return
	}
	switch {
	case st.IsDir():
		if rel != "" && !strings.HasSuffix(rel, "/") {
			http.Redirect(w, r, "/downloads/"+escapePath(rel)+"/", http.StatusMovedPermanently)
			return
		}
		entries, err := f.ReadDir(-1)
		if err != nil {
			s.log.Printf("downloads: listing %s: %v", escape.Quote(name, 256), err)
			plain(w, http.StatusInternalServerError, "the directory cannot be read")
			return
		}
		s.renderDownloads(w, rel, entries, false)
	case st.Mode().IsRegular():
		if strings.HasSuffix(rel, "/") {
			plain(w, http.StatusNotFound, "not found")
			return
		}
		// a large file over a slow link may take longer than a page
		if err := httpserve.Unbound(w); err != nil {
			s.log.Printf("downloads: %s: %v", escape.Quote(name, 256), err)
			plain(w, http.StatusInternalServerError, "the file cannot be sent")
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", contentDisposition(path.Base(rel)))
		h.Set("Content-Security-Policy", downloadCSP)
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		// ServeContent reads what the range asks for, in chunks.
		http.ServeContent(w, r, "", st.ModTime(), f)
	default:
		plain(w, http.StatusNotFound, "not found")
	}
}

// validRel accepts a relative path of plain names ("" is the top), each
// without a NUL, "." or ".." (the mux has already cleaned the path).
func validRel(rel string) bool {
	if rel == "" {
		return true
	}
	for _, p := range strings.Split(strings.TrimSuffix(rel, "/"), "/") {
		if p == "" || p == "." || p == ".." || strings.ContainsRune(p, 0) {
			return false
		}
	}
	return true
}

func escapePath(rel string) string {
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// contentDisposition is always an attachment: an ASCII fallback name and
// the exact name in RFC 5987 form.
func contentDisposition(name string) string {
	var ascii strings.Builder
	for _, c := range name {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '%' || c == ';' {
			ascii.WriteByte('_')
		} else {
			ascii.WriteRune(c)
		}
	}
	return `attachment; filename="` + ascii.String() + `"; filename*=UTF-8''` + extValue(name)
}

// extValue percent-encodes every byte of s that is not an attr-char of
// RFC 5987.
func extValue(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

func (s *Server) renderDownloads(w http.ResponseWriter, rel string, entries []fs.DirEntry, missing bool) {
	data := struct {
		User, Title, Dir, Up string
		Missing              bool
		Entries              []downloadRow
	}{User: s.cfg.User, Dir: path.Join(DownloadsDir, rel), Missing: missing}
	data.Title = "Downloads"
	if rel != "" {
		data.Title = "Downloads: " + escape.String(strings.TrimSuffix(rel, "/"))
		up := path.Dir(strings.TrimSuffix(rel, "/"))
		data.Up = "/downloads/"
		if up != "." {
			data.Up += escapePath(up) + "/"
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue
		}
		row := downloadRow{Name: escape.String(e.Name()), Link: "/downloads/" + escapePath(rel+e.Name())}
		switch {
		case info.IsDir():
			row.Name += "/"
			row.Link += "/"
		case info.Mode().IsRegular():
			row.Size = strconv.FormatInt(info.Size(), 10)
		case info.Mode()&fs.ModeSymlink != 0:
			row.Size = "link"
		default:
			continue // FIFOs, sockets, devices: nothing to download
		}
		row.Modified = info.ModTime().UTC().Format(time.DateTime)
		data.Entries = append(data.Entries, row)
	}
	s.page(w, http.StatusOK, downloadsPage(), data)
}
