package web

import (
	"errors"
	"html/template"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/httpserve"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/uploads"
	"github.com/agent-box/agent-box/internal/runtime/webui"
)

// uploadScript lets a person drop files anywhere on the upload page (they
// become the form's files and the form is sent), and says at once when a
// file is over the cap (data-max) instead of sending it to be refused.
// Picking and sending work without it; the daemon checks either way.
const uploadScript = `const f=document.getElementById("upload"),i=f.querySelector("input[type=file]"),b=document.body,m=+f.dataset.max;` +
	`function big(){const x=[...i.files].find(x=>x.size>m);if(!x)return false;` +
	`let p=document.getElementById("toolarge");if(!p){p=document.createElement("p");p.id="toolarge";p.className="error";f.before(p)}` +
	`p.textContent="Too large: "+x.name+" has "+x.size+" bytes; at most "+f.dataset.maxText+" per file.";return true}` +
	`f.addEventListener("submit",e=>{if(big())e.preventDefault()});` +
	`addEventListener("dragover",e=>{e.preventDefault();b.classList.add("drop")});` +
	`addEventListener("dragleave",()=>b.classList.remove("drop"));` +
	`addEventListener("drop",e=>{e.preventDefault();b.classList.remove("drop");if(e.dataTransfer.files.length){i.files=e.dataTransfer.files;if(!big())f.submit()}});`

// uploadCSP is pageCSP with the drop script allowed by its hash.
var uploadCSP = pageCSP + "; script-src " + hashSource(uploadScript)

var uploadPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("upload").Funcs(pageFuncs).Parse(webui.Layout() + `{{template "page-head" (page (print .User ": upload"))}}<h1>Upload{{if .Session}} for {{.Session}}{{end}}</h1>
<p><a href="/">Sessions</a>{{if .Session}} · <a href="{{term}}/?arg={{.Session}}">Terminal of {{.Session}}</a>{{end}}</p>
{{if .Error}}<p class="error">{{.Error}}</p>{{end}}
{{if .Done}}<p class="done">{{.Done}}</p>{{end}}
{{range .Stored}}<p class="done">Uploaded <code>{{.Path}}</code> ({{.Size}}).</p>
{{if $.Session}}<form method="post" action="/uploads/paste"><input type="hidden" name="session" value="{{$.Session}}"><input type="hidden" name="name" value="{{.Name}}">
<button>Type the path into {{$.Session}}</button> (without Enter: add what the agent should do with it)</form>{{end}}
{{end}}
<form id="upload" method="post" action="/uploads" enctype="multipart/form-data" data-max="{{.MaxBytes}}" data-max-text="{{.Max}}">
{{if .Session}}<input type="hidden" name="session" value="{{.Session}}">{{end}}
<p>Files land in <code>~/{{.Dir}}</code>, the directory the agents see (never overwritten: a taken name gets a number). At most {{.Max}} per file, {{.Quota}} in all.</p>
<p><label>Choose files <input type="file" name="file" multiple required></label> <button>Upload</button></p>
<p>Or drop files anywhere on this page.</p></form>
<script>{{.Script}}</script>
{{template "page-foot"}}`))
})

type storedRow struct {
	Name, Path, Size string
}

type uploadData struct {
	User, Session, Dir string
	Max, Quota         string
	MaxBytes           int64
	Script             template.JS
	Error, Done        string
	Stored             []storedRow
}

func (s *Server) uploadData(session string) uploadData {
	return uploadData{
		User: s.cfg.User, Session: session, Dir: uploads.DirName,
		Max: uploads.Size(s.uploads.Max), Quota: uploads.Size(s.uploads.Quota), MaxBytes: s.uploads.Max,
		Script: template.JS(uploadScript),
	}
}

// uploadForm is GET /uploads[?session=NAME]: the upload page (of a
// session: then each upload's path can be typed into it).
func (s *Server) uploadForm(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	session := q.Get("session")
	if session != "" && !registry.ValidName(session) {
		plain(w, http.StatusBadRequest, "not a session name")
		return
	}
	d := s.uploadData(session)
	if name := q.Get("typed"); session != "" && uploads.CheckName(name) == nil {
		d.Done = "Typed the path of " + name + " into " + session + "."
	}
	s.uploadAnswer(w, http.StatusOK, d)
}

// drainLimit is how much of a refused upload's rest is read before the
// answer.
const drainLimit = 1 << 20

// uploadBodyLimit bounds an upload request: every file within the quota,
// and the form's own bytes.
func (s *Server) uploadBodyLimit() int64 { return s.uploads.Quota + 1<<20 }

// uploadPost is POST /uploads: a multipart form of an optional "session"
// field, then one or more "file" parts, each stored in ~/uploads as it
// streams in. The first refusal ends the request; what was stored before
// it is listed with it.
func (s *Server) uploadPost(w http.ResponseWriter, r *http.Request) {
	if err := httpserve.Unbound(w); err != nil {
		s.log.Printf("upload: %v", err)
	}
	d := s.uploadData("")
	fail := func(code int, msg string) {
		d.Error = msg
		s.uploadAnswer(w, code, d)
	}
	if r.ContentLength > s.uploadBodyLimit() {
		fail(http.StatusRequestEntityTooLarge, "Too large: at most "+uploads.Size(s.uploads.Max)+" per file.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.uploadBodyLimit())
	mr, err := r.MultipartReader()
	if err != nil {
		fail(http.StatusBadRequest, "Not an upload form (multipart/form-data expected).")
		return
	}
	for {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fail(partError(err))
			return
		}
		switch p.FormName() {
		case "session":
			v, err := io.ReadAll(io.LimitReader(p, 65))
			if err != nil || !registry.ValidName(string(v)) {
				fail(http.StatusBadRequest, "Not a session name.")
				return
			}
			d.Session = string(v)
		case "file":
			name, ok := rawFileName(p)
			if !ok {
				fail(http.StatusBadRequest, "A file part without a file name.")
				return
			}
			if name == "" && len(d.Stored) == 0 { // the form sent with no file chosen
				fail(http.StatusBadRequest, "Choose a file first.")
				return
			}
			st, err := s.uploads.Store(name, -1, p)
			if err != nil {
				code, msg := s.storeError(err)
				// a client sends its whole form before it reads the
				// answer: take the rest of a small one, close on a large one
				if n, _ := io.CopyN(io.Discard, r.Body, drainLimit); n == drainLimit {
					w.Header().Set("Connection", "close")
				}
				fail(code, msg)
				return
			}
			s.log.Printf("upload: stored ~/%s/%s (%d bytes)", uploads.DirName, escape.String(st.Name), st.Size)
			d.Stored = append(d.Stored, storedRow{Name: st.Name, Path: st.Path, Size: uploads.Size(st.Size)})
		default:
			fail(http.StatusBadRequest, "An upload form has a session and files, nothing else.")
			return
		}
	}
	if len(d.Stored) == 0 {
		fail(http.StatusBadRequest, "Choose a file first.")
		return
	}
	s.uploadAnswer(w, http.StatusOK, d)
}

// rawFileName is the part's file name as the client sent it:
// Part.FileName would cut a path to its last element, and a name that is
// a path is refused, not rewritten.
func rawFileName(p *multipart.Part) (string, bool) {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil {
		return "", false
	}
	name, ok := params["filename"]
	return name, ok
}

func partError(err error) (int, string) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return http.StatusRequestEntityTooLarge, "Too large: the upload exceeds the quota."
	}
	return http.StatusBadRequest, "The upload form could not be read."
}

// storeError maps a refusal of the uploads directory to its answer.
func (s *Server) storeError(err error) (int, string) {
	switch {
	case errors.Is(err, uploads.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, "Too large: at most " + uploads.Size(s.uploads.Max) + " per file."
	case errors.Is(err, uploads.ErrQuota):
		return http.StatusInsufficientStorage, "Quota full: " + strings.TrimPrefix(err.Error(), uploads.ErrQuota.Error()+": ") + "."
	case errors.Is(err, uploads.ErrBadName):
		return http.StatusBadRequest, "Bad name: " + strings.TrimPrefix(err.Error(), uploads.ErrBadName.Error()+": ") + "."
	case errors.Is(err, uploads.ErrNotDir):
		return http.StatusConflict, strings.TrimPrefix(err.Error(), uploads.ErrNotDir.Error()+": ") + "."
	case errors.As(err, new(*http.MaxBytesError)): // the request's own bound, while a file streamed
		return partError(err)
	}
	s.log.Printf("upload: %v", err)
	return http.StatusInternalServerError, "The upload could not be stored (the daemon's log says why)."
}

func (s *Server) uploadAnswer(w http.ResponseWriter, code int, d uploadData) {
	s.pageCSP(w, code, uploadPage(), d, uploadCSP)
}

// pasteWait bounds the wait for a session's pane before typing a path.
const pasteWait = 5 * time.Second

// uploadPaste is POST /uploads/paste: the path of an upload typed into a
// session (quoted for a shell when it needs it; no Enter).
func (s *Server) uploadPaste(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, formLimit)
	session, name := r.PostFormValue("session"), r.PostFormValue("name")
	d := s.uploadData("")
	if !registry.ValidName(session) {
		d.Error = "Not a session name."
		s.uploadAnswer(w, http.StatusBadRequest, d)
		return
	}
	d.Session = session
	if !s.uploads.Exists(name) {
		d.Error = "No such upload in ~/" + uploads.DirName + "."
		s.uploadAnswer(w, http.StatusNotFound, d)
		return
	}
	path := s.uploads.Home + "/" + uploads.DirName + "/" + name
	if err := s.typePath(r.Context(), session, shellQuote(path)); err != nil {
		s.log.Printf("upload: path not typed into %s: %v", session, err)
		d.Error = "The path could not be typed into " + session + ": is it running?"
		s.uploadAnswer(w, http.StatusConflict, d)
		return
	}
	http.Redirect(w, r, "/uploads?session="+url.QueryEscape(session)+"&typed="+url.QueryEscape(name), http.StatusSeeOther)
}

// shellQuote is p as one shell word: unchanged when only safe bytes are
// in it, else single-quoted.
func shellQuote(p string) string {
	safe := true
	for _, c := range []byte(p) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/._-+@:,=", c) >= 0) {
			safe = false
			break
		}
	}
	if safe {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}
