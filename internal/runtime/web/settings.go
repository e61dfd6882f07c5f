package web

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/actions"
	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/appctl"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/envfile"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/sessionstate"
	"github.com/agent-box/agent-box/internal/runtime/webui"
)

// formLimit bounds a settings form (a session's arguments are at most
// registry's limit; a secret at most envfile's).
const formLimit = 256 << 10

var settingsPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("settings").Funcs(pageFuncs).Parse(webui.Layout() + `{{template "page-head" (page (print .User ": settings"))}}<h1>Settings of {{.User}}</h1>
<p><a href="/">Sessions</a> · <a href="/downloads/">Downloads</a> · <a href="{{.PasswordURL}}">Change your password</a> (on the box)</p>
{{if .Done}}<p class="done">{{.Done}}</p>{{end}}
{{if .Error}}<p class="error">{{.Error}}</p>{{end}}
<h2>Sessions</h2>
{{if .ListError}}<p class="error">The session list cannot be read: {{.ListError}}</p>
{{else if not .Sessions}}<p>No sessions.</p>
{{else}}<table><thead><tr><th>Name</th><th>Agent</th><th>Arguments</th><th>Directory</th><th>State</th><th>Up</th><th>Restarts</th><th>Last exit</th><th></th></tr></thead><tbody>
{{range .Sessions}}<tr class="{{.State}}"><td><a href="{{term}}/?arg={{.Name}}">{{.Name}}</a></td><td>{{.Agent}}</td><td>{{.Args}}</td><td>{{.Cwd}}</td><td>{{.State}}{{if .RestartToApply}} (restart to apply){{end}}{{if .Note}}<br><small>{{.Note}}</small>{{end}}</td><td>{{.Uptime}}</td><td>{{.Restarts}}</td><td>{{.LastExit}}</td>
<td><form method="post" action="/settings/sessions"><input type="hidden" name="name" value="{{.Name}}">
{{if .Stopped}}<button name="action" value="start">Start</button>{{else}}<button name="action" value="stop">Stop</button> <button name="action" value="restart" data-confirm="{{ask "restart" .Name}}">Restart</button> <button name="action" value="restart-fresh" data-confirm="{{ask "restart-fresh" .Name}}">New conversation</button>{{end}}
<button name="action" value="remove" data-confirm="{{ask "remove" .Name}}">Remove</button></form></td></tr>
{{end}}</tbody></table>{{end}}
<h3>Add a session</h3>
<form method="post" action="/settings/sessions"><input type="hidden" name="action" value="add">
<p><label>Name <input name="name" required maxlength="64" pattern="{{namePattern}}"></label>
<label>Agent <select name="agent">{{range .Agents}}<option{{if .Default}} selected{{end}}>{{.Name}}</option>{{end}}</select></label></p>
<p><label>Working directory <input name="cwd" placeholder="{{.Home}}"></label></p>
<p><label>Arguments, one per line<br><textarea name="args" rows="3" cols="50"></textarea></label></p>
<p><label>Kickoff prompt, given to the session's first conversation<br><textarea name="prompt" rows="4" cols="50" maxlength="{{.PromptMax}}"></textarea></label></p>
<p><button>Add</button></p></form>
{{if or .Apps .AppsError}}<h2>Apps</h2>
{{if .AppsError}}<p class="error">The apps cannot be read: {{.AppsError}}</p>{{end}}
{{range .Apps}}<h3>{{.Name}}</h3>
<table><tbody><tr class="{{if .Stopped}}stopped{{else}}running{{end}}"><td>{{.Active}}</td><td>{{if .Uptime}}up {{.Uptime}}{{end}}</td><td>{{.Status}}</td><td>launcher restarts: {{.Restarts}}</td>
<td><form method="post" action="/settings/apps"><input type="hidden" name="name" value="{{.Name}}">
{{if .Stopped}}<button name="action" value="start">Start</button>{{else}}<button name="action" value="restart">Restart</button> <button name="action" value="stop">Stop</button>{{end}}</form></td></tr></tbody></table>
<pre class="log">{{.Log}}</pre>
{{end}}{{end}}
<h2>Secrets</h2>
<p>Variables of <code>~/.config/agent-box/env</code>, given to every session when it starts. Values are never shown.</p>
{{if .EnvError}}<p class="error">The secrets cannot be read: {{.EnvError}}</p>
{{else if not .Keys}}<p>No secrets.</p>
{{else}}<table><tbody>{{range .Keys}}<tr><td><code>{{.}}</code></td><td><form method="post" action="/settings/secrets"><input type="hidden" name="key" value="{{.}}"><button name="action" value="remove">Remove</button></form></td></tr>
{{end}}</tbody></table>{{end}}
<form method="post" action="/settings/secrets"><input type="hidden" name="action" value="set">
<p><label>Key <input name="key" required pattern="[A-Za-z_][A-Za-z0-9_]*"></label>
<label>Value <input name="value" type="password" autocomplete="off"></label>
<button>Set</button></p></form>
<script>{{.Script}}</script>
{{template "page-foot"}}`))
})

// confirmPage asks before a session is restarted or removed (a page
// script asks in a dialog instead and sends confirm=yes).
var confirmPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("confirm").Funcs(pageFuncs).Parse(webui.Layout() + `{{template "page-head" (page (print .User ": " .Question))}}<h1>{{.Question}}</h1>
<p>{{.What}}</p>
<form method="post" action="/settings/sessions"><input type="hidden" name="name" value="{{.Name}}"><input type="hidden" name="action" value="{{.Action}}"><input type="hidden" name="back" value="{{.Back}}"><input type="hidden" name="confirm" value="yes">
<button>{{.Button}}</button> <a href="{{.Back}}">Cancel</a></form>
{{template "page-foot"}}`))
})

// confirmation is what an action asked about first says: its question
// (%s: the session), what follows, and the button that confirms.
type confirmation struct{ Question, What, Button string }

// confirmations are the actions asked about first; the confirmation page
// and the pages' dialogs (data-confirm, see ask) say the same.
var confirmations = map[string]confirmation{
	"restart":       {"Restart session %s?", "Its agent is ended and started again; an agent that can resumes its conversation.", "Restart"},
	"restart-fresh": {"Restart session %s with a new conversation?", "Its agent is ended and started again without resuming its conversation.", "New conversation"},
	"remove":        {"Remove session %s?", "Its agent is ended and the session is forgotten (its conversation file too).", "Remove"},
}

// ask is the dialog's text of action on session name (data-confirm).
func ask(action, name string) string {
	c := confirmations[action]
	return strings.Replace(c.Question, "%s", name, 1) + " " + c.What
}

// backTo is where a change returns to: the list ("/") or the settings page.
func backTo(f url.Values) string {
	if f.Get("back") == "/" {
		return "/"
	}
	return "/settings"
}

type settingsRow struct {
	Name, Agent, Args, Cwd, State, LastExit string
	Uptime                                  string // since the last launch, while running
	Restarts                                int
	Stopped                                 bool
	RestartToApply                          bool   // started with an older configuration
	Note                                    string // why its conversation started fresh, or what its last spawn found
}

type agentOption struct {
	Name    string
	Default bool
}

type settingsData struct {
	User, Home, PasswordURL string
	Script                  template.JS
	Done, Error             string
	ListError, EnvError     string
	Sessions                []settingsRow
	Agents                  []agentOption
	Keys                    []string
	PromptMax               int // the contract's limit of a kickoff prompt
	Apps                    []appRow
	AppsError               string
}

// doneMessages are what a redirect after a change may say (by code, so no
// text from the URL is ever shown).
var doneMessages = map[string]string{
	"added":       "Added session %s; the supervisor starts it within a second.",
	"stopped":     "Stopped session %s.",
	"started":     "Started session %s.",
	"restarted":   "Restarting session %s.",
	"fresh":       "Restarting session %s with a new conversation.",
	"removed":     "Removed session %s.",
	"set":         "Set %s; sessions started from now on get it.",
	"unset":       "Removed %s.",
	"app-start":   "Started app %s.",
	"app-stop":    "Stopped app %s.",
	"app-restart": "Restarted app %s.",
}

// settings is GET /settings.
func (s *Server) settings(w http.ResponseWriter, r *http.Request) {
	d := s.settingsData(r)
	q := r.URL.Query()
	if msg, ok := doneMessages[q.Get("done")]; ok {
		what := q.Get("name")
		if registry.ValidName(what) || envfile.CheckKey(what) == nil {
			d.Done = strings.Replace(msg, "%s", what, 1)
		}
	}
	s.pageCSP(w, http.StatusOK, settingsPage(), d, scriptCSP)
}

func (s *Server) settingsData(r *http.Request) settingsData {
	d := settingsData{
		User: s.cfg.User, Home: s.cfg.Env.Home, Script: template.JS(pageScript),
		PasswordURL: "https://" + s.cfg.Domain + contract.AuthPage("password"),
		PromptMax:   contract.Conversations.PromptMaxBytes,
	}
	entries, err := sessionstate.List(r.Context(), s.cfg.Env, s.cfg.Tmux, s.cfg.ProcEnv)
	if err != nil {
		d.ListError = err.Error()
	}
	for _, e := range entries {
		row := settingsRow{
			Name: e.Name, Agent: escape.String(e.Agent), Cwd: escape.String(e.Cwd), State: e.State,
			Restarts: e.Restarts, Stopped: e.Stopped, RestartToApply: e.RestartToApply, Note: escape.String(e.Note),
		}
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = escape.Quote(a, 128)
		}
		row.Args = strings.Join(args, " ")
		if e.State == sessionstate.Running && e.LastStart != nil {
			row.Uptime = uptime(time.Since(*e.LastStart))
		}
		if x := e.LastExit; x != nil {
			row.LastExit = "status " + strconv.Itoa(x.Status)
			if x.Signal != "" {
				row.LastExit = "signal " + escape.String(x.Signal)
			}
			row.LastExit += " at " + x.At.UTC().Format(time.DateTime)
		}
		d.Sessions = append(d.Sessions, row)
	}
	if table, def, err := actions.Agents(s.cfg.Env); err == nil {
		for _, n := range table.Names() {
			d.Agents = append(d.Agents, agentOption{Name: n, Default: n == def})
		}
	}
	keys, err := envfile.Keys(s.cfg.Env.EnvFile())
	if err != nil {
		d.EnvError = err.Error()
	}
	d.Keys = keys
	d.Apps, d.AppsError = s.appRows(r.Context())
	return d
}

// form parses a POSTed urlencoded form of at most formLimit bytes; on
// failure it has answered.
func (s *Server) form(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, formLimit)
	if err := r.ParseForm(); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			plain(w, http.StatusRequestEntityTooLarge, "the form is too large")
		} else {
			plain(w, http.StatusBadRequest, "the form does not parse")
		}
		return false
	}
	return true
}

// sessionsPost is POST /settings/sessions: add (with a kickoff prompt),
// stop, start, restart, restart-fresh (a new conversation) or remove,
// through the same code as the CLI.
func (s *Server) sessionsPost(w http.ResponseWriter, r *http.Request) {
	if !s.form(w, r) {
		return
	}
	f := r.PostForm
	name := f.Get("name")
	if c, ok := confirmations[f.Get("action")]; ok && f.Get("confirm") != "yes" && registry.ValidName(name) {
		s.page(w, http.StatusOK, confirmPage(), struct {
			User, Name, Action, Question, What, Button, Back string
		}{s.cfg.User, name, f.Get("action"), strings.Replace(c.Question, "%s", name, 1), c.What, c.Button, backTo(f)})
		return
	}
	var err error
	done := ""
	switch f.Get("action") {
	case "add":
		var table agents.Table
		var def string
		if table, def, err = actions.Agents(s.cfg.Env); err == nil {
			err = actions.Add(r.Context(), s.cfg.Env, table, def, actions.Spec{
				Name: name, Agent: f.Get("agent"), Cwd: strings.TrimSpace(f.Get("cwd")), Args: argLines(f.Get("args")),
				// a textarea sends CRLF line breaks
				Prompt: strings.ReplaceAll(f.Get("prompt"), "\r\n", "\n"),
			})
		}
		done = "added"
	case "stop":
		err, done = actions.SetStopped(r.Context(), s.cfg.Env, name, true), "stopped"
	case "start":
		err, done = actions.SetStopped(r.Context(), s.cfg.Env, name, false), "started"
	case "restart":
		if name == "" { // never "all" from a form
			err = &actions.InputError{Msg: "restart needs a session name"}
		} else {
			err = actions.Restart(s.cfg.Env, name)
		}
		done = "restarted"
	case "restart-fresh":
		err, done = actions.RestartFresh(r.Context(), s.cfg.Env, name), "fresh"
	case "remove":
		err, done = actions.Remove(r.Context(), s.cfg.Env, name), "removed"
	default:
		err = &actions.InputError{Msg: "unknown action " + escape.Quote(f.Get("action"), 32)}
	}
	s.answer(w, r, err, done, name)
}

// secretsPost is POST /settings/secrets: set or remove one key of the env
// file. The value is never logged, echoed or put in a redirect.
func (s *Server) secretsPost(w http.ResponseWriter, r *http.Request) {
	if !s.form(w, r) {
		return
	}
	f := r.PostForm
	key := f.Get("key")
	var err error
	done := ""
	switch f.Get("action") {
	case "set":
		if err = envfile.CheckKey(key); err == nil {
			err = envfile.Set(r.Context(), s.cfg.Env.EnvFile(), key, f.Get("value"))
		}
		done = "set"
	case "remove":
		if err = envfile.CheckKey(key); err == nil {
			err = envfile.Remove(r.Context(), s.cfg.Env.EnvFile(), key)
		}
		done = "unset"
	default:
		err = &actions.InputError{Msg: "unknown action " + escape.Quote(f.Get("action"), 32)}
	}
	s.answer(w, r, err, done, key)
}

// answer redirects to the settings page after a change, or shows it with
// the error (its text is the CLI's) and the status that fits.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, err error, done, name string) {
	if err == nil {
		if backTo(r.PostForm) == "/" {
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		http.Redirect(w, r, "/settings?"+url.Values{"done": {done}, "name": {name}}.Encode(), http.StatusSeeOther)
		return
	}
	var code int
	switch kind := actions.KindOf(err); {
	case errors.Is(err, appctl.ErrName):
		code = http.StatusBadRequest
	case errors.Is(err, appctl.ErrUnknown):
		code = http.StatusNotFound
	case kind == actions.Input, kind == actions.InvalidName, kind == actions.UnknownAgent:
		code = http.StatusBadRequest
	case kind == actions.Unknown:
		code = http.StatusNotFound
	case kind == actions.Duplicate:
		code = http.StatusConflict
	case kind == actions.Corrupt:
		code = http.StatusInternalServerError
	default: // the supervisor is not running, a lock timed out, polkit refused, ...
		code = http.StatusServiceUnavailable
		s.log.Printf("settings: %v", err)
	}
	d := s.settingsData(r)
	d.Error = err.Error()
	s.pageCSP(w, code, settingsPage(), d, scriptCSP)
}

// argLines is one argument per line of a textarea (CR LF or LF; a last
// empty line is dropped, inner empty lines are empty arguments).
func argLines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// uptime is d as "4d 3h", "3h 12m", "12m 5s" or "5s".
func uptime(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	sec := int64(d / time.Second)
	days, hours, mins := sec/86400, sec/3600%24, sec/60%60
	switch {
	case days > 0:
		return strconv.FormatInt(days, 10) + "d " + strconv.FormatInt(hours, 10) + "h"
	case hours > 0:
		return strconv.FormatInt(hours, 10) + "h " + strconv.FormatInt(mins, 10) + "m"
	case mins > 0:
		return strconv.FormatInt(mins, 10) + "m " + strconv.FormatInt(sec%60, 10) + "s"
	}
	return strconv.FormatInt(sec, 10) + "s"
}
