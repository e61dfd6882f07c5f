package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/sessionstate"
	"github.com/agent-box/agent-box/internal/runtime/webui"
)

// pageCSP is the Content-Security-Policy of the daemon's own pages: their
// look is the product's one stylesheet and icon (package webui), which the
// auth service serves under /auth/ on this origin too.
var pageCSP = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

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
	"events":      func() string { return EventsPath },
	"asset":       func(name string) string { return AssetsRoute + name },
	"termStyle":   func() string { return termStyle },
	"ask":         ask,
	// page and workspacePage are what a page of this daemon says of itself
	// to the one layout (webui.Layout); every page here has tables.
	"page": func(title string) webui.Page { return webui.Page{Title: title, Wide: true} },
	"workspacePage": func(title string, workspace bool) webui.Page {
		p := webui.Page{Title: title, Wide: true}
		if workspace {
			p.Styles, p.Modules = []string{AssetsRoute + termStyle}, []string{AssetsRoute + "workspace.mjs"}
		}
		return p
	},
}

// pageScript is the one script of the list and settings pages: it keeps
// the list live from the event stream (the rows are the daemon's own
// HTML), updates each "up" time every 30 s from its datetime, and asks
// before a button with data-confirm sends its form (then the form says
// so, confirm=yes, and the daemon's own confirmation page is skipped;
// without the script that page asks).
const pageScript = `const t=document.getElementById("sessions");` +
	`if(t&&window.EventSource){const e=new EventSource(t.dataset.events);` +
	`e.addEventListener("sessions",m=>{t.innerHTML=m.data;up()});` +
	`e.addEventListener("end",()=>{e.close();location.reload()});` +
	`e.addEventListener("closed",m=>{e.close();t.dataset.closed=m.data})}` +
	`function up(){for(const x of document.querySelectorAll("time[data-up]")){const s=Math.max(0,(Date.now()-Date.parse(x.dateTime))/1e3|0);` +
	`x.textContent=s>=86400?(s/86400|0)+"d "+(s/3600%24|0)+"h":s>=3600?(s/3600|0)+"h "+(s/60%60|0)+"m":s>=60?(s/60|0)+"m "+s%60+"s":s+"s"}}` +
	`setInterval(up,30000);` +
	`document.addEventListener("submit",e=>{const f=e.target,b=e.submitter,m=b&&b.dataset.confirm;if(!m)return;` +
	`if(!confirm(m)){e.preventDefault();return}const i=document.createElement("input");i.type="hidden";i.name="confirm";i.value="yes";f.append(i)})`

// scriptCSP is pageCSP with the page script allowed (the settings page);
// listCSP allows its event stream too.
var (
	scriptCSP = pageCSP + "; script-src " + hashSource(pageScript)
	listCSP   = scriptCSP + "; connect-src 'self'"
)

var listPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("list").Funcs(pageFuncs).Parse(webui.Layout() + `{{template "page-head" (workspacePage (print .User ": sessions") .Workspace)}}<h1>Sessions of {{.User}}</h1>
{{if .Error}}<p>The session list cannot be read: {{.Error}}</p>
{{else}}<table><thead><tr><th>Session</th><th>Agent</th><th>State</th><th>Up</th><th>Restarts</th><th></th></tr></thead>
<tbody id="sessions" data-events="{{events}}">{{template "rows" .Sessions}}</tbody></table>{{end}}
{{if .Workspace}}<section id="workspace" data-socket="{{term}}/ws" hidden><div id="tabs" role="tablist"></div><div id="terms"></div>
<div id="keys">{{range .Keys}}<button type="button" title="{{.Title}}" data-send="{{.Send}}">{{.Label}}</button>{{end}}</div>
<p class="hint">The wheel scrolls the session's history (tmux); drag selects and copies there, Shift-drag selects in the browser (Ctrl-Shift-C copies it); a link opens and is copied. A click on a session with Ctrl opens ttyd's own page.</p></section>{{end}}
<p><a href="/settings">Settings</a> (sessions, secrets, password) · <a href="/downloads/">Downloads</a> (files in <code>~/downloads</code>) · <a href="/uploads">Upload</a> (files into <code>~/uploads</code>)</p>
<form method="post" action="{{auth "logout"}}"><button type="submit">Log out</button></form>
<script>{{.Script}}</script>
{{template "page-foot"}}{{define "rows"}}{{range .}}<tr class="{{.State}}"><td><a href="{{.Link}}" data-session="{{.Name}}">{{.Name}}</a></td><td>{{.Agent}}</td><td>{{.State}}{{with .Attention}} · {{.}}{{end}}</td><td>{{if .Since}}<time data-up datetime="{{.Since}}">{{.Up}}</time>{{end}}</td><td>{{.Restarts}}</td><td>{{template "actions" .}}</td></tr>
{{else}}<tr><td colspan="6">No sessions. Add one on the settings page or with <code>agent-box session add NAME</code>.</td></tr>
{{end}}{{end}}
{{define "actions"}}<a href="/uploads?session={{.Name}}">Upload</a>
<form method="post" action="/settings/sessions" class="inline"><input type="hidden" name="name" value="{{.Name}}"><input type="hidden" name="back" value="/">
<button name="action" value="restart" data-confirm="{{ask "restart" .Name}}">Restart</button>
<button name="action" value="remove" data-confirm="{{ask "remove" .Name}}">Remove</button></form>{{end}}
`))
})

type listRow struct {
	Name, Agent, State string
	Attention          string // "needs-you (bell)"; "" when none
	Link               string
	Since, Up          string // the running pane's launch (RFC 3339) and how long ago
	Restarts           int
}

// sessionRows reads U's sessions as the list's rows; the error is why the
// list cannot be read.
func (s *Server) sessionRows(ctx context.Context) ([]listRow, error) {
	entries, err := sessionstate.List(ctx, s.cfg.Env, s.cfg.Tmux, s.cfg.ProcEnv)
	rows := make([]listRow, 0, len(entries))
	for _, e := range entries {
		row := listRow{
			Name: e.Name, Agent: escape.String(e.Agent), State: e.State,
			Link: contract.TerminalLink(e.Name), Restarts: e.Restarts,
		}
		if a := e.Attention; a != nil {
			row.Attention = escape.String(a.String())
		}
		if e.State == sessionstate.Running && e.LastStart != nil {
			row.Since = e.LastStart.UTC().Format(time.RFC3339)
			row.Up = uptime(time.Since(*e.LastStart))
		}
		rows = append(rows, row)
	}
	return rows, err
}

// listRows is the list's rows as the page has them (for the stream); an
// unreadable list is one row that says so.
func (s *Server) listRows(ctx context.Context) string {
	rows, err := s.sessionRows(ctx)
	if err != nil {
		return "<tr><td colspan=\"6\">The session list cannot be read: " + template.HTMLEscapeString(err.Error()) + "</td></tr>"
	}
	var b bytes.Buffer
	if err := listPage().ExecuteTemplate(&b, "rows", rows); err != nil {
		s.log.Printf("session list rows: %v", err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// list is GET /: U's sessions, each linking to its terminal, kept live by
// the page script from the event stream.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	data := struct {
		User      string
		Script    template.JS
		Sessions  []listRow
		Error     string
		Workspace bool
		Keys      any
	}{User: s.cfg.User, Script: template.JS(pageScript), Workspace: s.cfg.AssetsDir != "", Keys: keyBar}
	code := http.StatusOK
	rows, err := s.sessionRows(r.Context())
	if err != nil {
		s.log.Printf("session list: %v", err)
		data.Error, code = err.Error(), http.StatusInternalServerError
	}
	data.Sessions = rows
	csp := listCSP
	if data.Workspace {
		csp = s.workspaceCSP()
	}
	s.pageCSP(w, code, listPage(), data, csp)
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
