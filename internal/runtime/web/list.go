package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/sessionstate"
)

// pageStyle is the one inline style of the daemon's pages; the CSP allows
// it by hash and allows nothing else (no script, no other source).
const pageStyle = `body{font-family:system-ui,sans-serif;margin:2em;max-width:50em}` +
	`table{border-collapse:collapse}td,th{padding:.3em 1em;text-align:left;border-bottom:1px solid #ccc}` +
	`.stopped,.unknown,.absent,.dead{color:#777}`

// pageCSP is the Content-Security-Policy of the daemon's own pages.
var pageCSP = "default-src 'none'; style-src " + hashSource(pageStyle) +
	"; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// hashSource is the CSP source that allows the inline text s.
func hashSource(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// pageFuncs give the pages the contract's routes and names.
var pageFuncs = template.FuncMap{
	"auth":        contract.AuthPage,
	"term":        func() string { return contract.Routes.Terminal.Path },
	"namePattern": func() string { return contract.Names.Session.Pattern },
}

var listPage = template.Must(template.New("list").Funcs(pageFuncs).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{{.User}}: sessions</title><style>{{.Style}}</style></head>
<body><h1>Sessions of {{.User}}</h1>
{{if .Error}}<p>The session list cannot be read: {{.Error}}</p>
{{else if not .Sessions}}<p>No sessions. Add one with <code>agent-box session add NAME</code>.</p>
{{else}}<table><thead><tr><th>Session</th><th>Agent</th><th>State</th><th></th></tr></thead><tbody>
{{range .Sessions}}<tr class="{{.State}}"><td><a href="{{.Link}}">{{.Name}}</a></td><td>{{.Agent}}</td><td>{{.State}}</td><td><a href="/uploads?session={{.Name}}">Upload</a></td></tr>
{{end}}</tbody></table>{{end}}
<p><a href="/settings">Settings</a> (sessions, secrets, password) · <a href="/downloads/">Downloads</a> (files in <code>~/downloads</code>) · <a href="/uploads">Upload</a> (files into <code>~/uploads</code>)</p>
<form method="post" action="{{auth "logout"}}"><button type="submit">Log out</button></form>
</body></html>
`))

type listRow struct {
	Name, Agent, State string
	Link               string
}

// list is GET /: U's sessions, each linking to its terminal.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	data := struct {
		User     string
		Style    template.CSS
		Sessions []listRow
		Error    string
	}{User: s.cfg.User, Style: template.CSS(pageStyle)}
	code := http.StatusOK
	entries, err := sessionstate.List(r.Context(), s.cfg.Env, s.cfg.Tmux, s.cfg.ProcEnv)
	if err != nil {
		s.log.Printf("session list: %v", err)
		data.Error, code = err.Error(), http.StatusInternalServerError
	}
	for _, e := range entries {
		data.Sessions = append(data.Sessions, listRow{
			Name: e.Name, Agent: escape.String(e.Agent), State: e.State,
			Link: contract.TerminalLink(e.Name),
		})
	}
	s.page(w, code, listPage, data)
}

// page writes one of the daemon's own pages: t executed on data, whole or
// not at all, with the pages' CSP.
func (s *Server) page(w http.ResponseWriter, code int, t *template.Template, data any) {
	s.pageCSP(w, code, t, data, pageCSP)
}

// pageCSP is page with the Content-Security-Policy csp.
func (s *Server) pageCSP(w http.ResponseWriter, code int, t *template.Template, data any, csp string) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		s.log.Printf("page %s: %v", t.Name(), err)
		plain(w, http.StatusInternalServerError, "internal error")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp)
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}
