package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"sync"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/webui"
)

// handoverScript is the hand-over page's one inline script: it submits
// the page's form.
const handoverScript = `document.getElementById("handover").submit();`

// inboxScript is the box page's one inline script: it keeps the inbox
// live from its event stream. The items are the auth service's own
// html/template output (user names, the contract's state and reason
// names, times: each <time> shown in the browser's zone after its first
// word, "since" or "until", with the day when it is not today), so they
// are set as HTML; an "end" event (the session
// ended) reloads the page, which then asks for a login; a "closed" event
// (too many pages of the login) stops it with a note. With the person's
// permission (asked for by a button: browsers grant it only on a click),
// an entry that was not in the list before becomes a browser notification
// (its shown text: user, state, time; never the session's name). A reply
// being typed into an entry's field is kept across the list's updates.
const inboxScript = `const list = document.getElementById("inbox");
const note = document.getElementById("inbox-note");
const ask = document.getElementById("inbox-notify");
const local = () => {
  for (const t of list.querySelectorAll("time")) {
    const d = new Date(t.dateTime), day = d.toDateString() === new Date().toDateString() ? {} : {month: "short", day: "numeric"};
    t.textContent = t.textContent.split(" ")[0] + " " + d.toLocaleString([], {...day, hour: "2-digit", minute: "2-digit"});
  }
};
const keys = () => new Set([...list.querySelectorAll("li[data-key]")].map((li) => li.dataset.key));
local();
let seen = keys();
if ("Notification" in window && Notification.permission === "default") {
  ask.hidden = false;
  ask.addEventListener("click", () => Notification.requestPermission().then(() => { ask.hidden = true; }));
}
const events = new EventSource(list.dataset.events);
events.addEventListener("inbox", (e) => {
  const typed = new Map();
  for (const i of list.querySelectorAll("li[data-key] input[name=text]")) {
    if (i.value) typed.set(i.closest("li").dataset.key, [i.value, i === document.activeElement]);
  }
  list.innerHTML = e.data;
  for (const li of list.querySelectorAll("li[data-key]")) {
    const t = typed.get(li.dataset.key), i = li.querySelector("input[name=text]");
    if (t && i) {
      i.value = t[0];
      if (t[1]) i.focus();
    }
  }
  local();
  note.textContent = "Live.";
  const before = seen;
  seen = keys();
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  for (const li of list.querySelectorAll("li[data-key]")) {
    if (before.has(li.dataset.key)) continue;
    const n = new Notification("agent-box", {body: li.querySelector("span").textContent, tag: li.dataset.key});
    n.onclick = () => window.focus();
  }
});
events.addEventListener("end", () => { events.close(); location.reload(); });
events.addEventListener("closed", (e) => { events.close(); note.textContent = "Live updates stopped: " + e.data + ". Reload the page to resume."; });
events.onerror = () => {
  note.textContent = events.readyState === EventSource.CLOSED ? "The live list stopped: reload the page." : "Reconnecting…";
};`

// scriptHash is the CSP source of a script, computed from the bytes the
// page carries.
func scriptHash(script string) string {
	sum := sha256.Sum256([]byte(script))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

const layout = `{{define "head"}}{{template "page-head" .Page}}<h1>{{.Title}}</h1>
{{with .Message}}<p class="error" role="alert">{{.}}</p>
{{end}}{{end}}
{{define "foot"}}{{template "page-foot"}}{{end}}
{{define "logout"}}<form method="post" action="{{auth "logout"}}"><button>Log out</button></form>
{{end}}`

// pageData is what every page template reads.
type pageData struct {
	Title   string
	Message string
	Domain  string
	Login   string   // the login typed, or the one logged in
	User    string   // the user to open after logging in
	App     string   // with User: the app of User to open
	Bind    string   // with App: the hash of the app origin's binding secret
	Target  string   // the host of what opens after logging in
	Next    string   // a local path
	Users   []string // what the login may open
	Code    string
	May     bool // the login may open User
	Inbox   inboxList
	// Home: the box page, which names the manifest (the box origin is an
	// installable app)
	Home bool
}

// Page is what the one page layout reads of an auth page.
func (d pageData) Page() webui.Page {
	p := webui.Page{Title: d.Title}
	if d.Home {
		p.Manifest = authPage(manifestName)
	}
	return p
}

// manifestName is the box origin's web app manifest under /auth/.
const manifestName = "manifest.webmanifest"

// manifest is the box origin's web app manifest: the inbox as an app a
// phone can put on its home screen (the box's name, its start page and
// icon).
func manifest(domain string) []byte {
	b, _ := json.Marshal(map[string]any{
		"name": "agent-box · " + domain, "short_name": "agent-box", "id": "/", "start_url": "/", "scope": "/",
		"display": "standalone", "background_color": webui.Background, "theme_color": webui.Surface,
		"icons": []map[string]string{{"src": authPage("favicon.svg"), "sizes": "any", "type": "image/svg+xml", "purpose": "any"}},
	})
	return append(b, '\n')
}

var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("pages").Funcs(template.FuncMap{"auth": authPage, "decide": func() string { return authPage(contract.Approvals.DecidePage) },
		"reply": func() string { return authPage(contract.Approvals.Reply.Page) }, "replyMax": func() int { return contract.Conversations.PromptMaxBytes }}).Parse(webui.Layout() + layout + `
{{define "login"}}{{template "head" .}}<form method="post" action="{{auth "login"}}">
<label>Login <input type="text" name="login" value="{{.Login}}" autocomplete="username" autocapitalize="none" required autofocus></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<input type="hidden" name="user" value="{{.User}}">
{{with .App}}<input type="hidden" name="app" value="{{.}}">
<input type="hidden" name="bind" value="{{$.Bind}}">
{{end}}<input type="hidden" name="next" value="{{.Next}}">
<button>Log in</button>
</form>
{{with .Target}}<p class="quiet">Then on to {{.}}.</p>
{{end}}{{template "foot" .}}{{end}}

{{define "inbox"}}{{range .Requests}}<li class="urgent request" data-key="{{.Key}}"><span><b>{{.User}}</b> asks for a permission <time datetime="{{.SinceISO}}">since {{.SinceUTC}}</time></span>
<figure class="agent-text"><figcaption>{{.Agent}} in session <code>{{.Session}}</code> asks to use <code>{{.Tool}}</code>: the agent's words, not agent-box's</figcaption><pre>{{.Shown}}</pre>{{if .AllowsSession}}<figcaption>"Allow for this session" also gives the agent these rules of its own:</figcaption><pre>{{.Rules}}</pre>{{end}}</figure>
{{if .Cut}}<p class="error">The agent's input is longer than agent-box shows: it cannot be allowed from here. Deny it, or answer it in its terminal.</p>
{{end}}<form method="post" action="{{decide}}" class="decide"><input type="hidden" name="user" value="{{.User}}"><input type="hidden" name="request" value="{{.ID}}">{{if .Offers "allow"}}<button name="decision" value="allow">Allow</button>{{end}}{{if .AllowsSession}}<button name="decision" value="allow-session">Allow for this session</button>{{end}}<button name="decision" value="deny" class="danger">Deny</button></form></li>
{{end}}{{range .Entries}}<li class="{{if .Urgent}}urgent{{else}}later{{end}}" data-key="{{.Key}}"><form method="post" action="{{auth "open"}}"><span><b>{{.User}}</b> {{.State}}{{if .Status.Try}}{{if .UntilUTC}} <time datetime="{{.UntilISO}}">until {{.UntilUTC}}</time>{{else}}, resumed{{end}} (try {{.Status.Try}}){{end}} <time datetime="{{.SinceISO}}">since {{.SinceUTC}}</time></span><input type="hidden" name="user" value="{{.User}}"><input type="hidden" name="next" value="{{.Next}}"><button>Open</button></form>{{if .CanReply}}
<form method="post" action="{{reply}}" class="reply"><input type="hidden" name="user" value="{{.User}}"><input type="hidden" name="session" value="{{.Session}}"><input type="text" name="text" maxlength="{{replyMax}}" placeholder="Reply: typed into the session, then Enter" aria-label="Reply to {{.User}}'s agent" autocomplete="off" required><button>Send</button></form>{{end}}</li>
{{else}}{{if not .Requests}}<li class="quiet">Nothing needs you.</li>
{{end}}{{end}}{{end}}

{{define "home"}}{{template "head" .}}<p>Logged in as {{.Login}}.</p>
{{if .Users}}<h2>Inbox</h2>
<ul id="inbox" data-events="{{auth "inbox"}}">
{{template "inbox" .Inbox}}</ul>
<p id="inbox-note" class="quiet" role="status"></p>
<p><button id="inbox-notify" type="button" hidden>Notify me in this browser</button></p>
<script>` + inboxScript + `</script>
<h2>Agent users</h2>
<ul>
{{range .Users}}<li><form method="post" action="{{auth "open"}}"><span>{{.}}</span><input type="hidden" name="user" value="{{.}}"><input type="hidden" name="next" value="/"><button>Open</button></form></li>
{{end}}</ul>
{{else}}<p>This login may open no agent user.</p>
{{end}}{{template "logout" .}}{{template "foot" .}}{{end}}

{{define "continue"}}{{template "head" .}}<p>Logged in as {{.Login}}.</p>
{{if .May}}<form method="post" action="{{auth "open"}}">
<input type="hidden" name="user" value="{{.User}}">
{{with .App}}<input type="hidden" name="app" value="{{.}}">
<input type="hidden" name="bind" value="{{$.Bind}}">
{{end}}<input type="hidden" name="next" value="{{.Next}}">
<button>Open {{if .App}}{{.App}} of {{end}}{{.User}}</button>
</form>
{{else}}<p>This login may not open {{if .App}}{{.App}} of {{end}}{{.User}}.</p>
{{end}}<p><a href="/">All agent users</a></p>
{{template "logout" .}}{{template "foot" .}}{{end}}

{{define "handover"}}{{template "head" .}}<form id="handover" method="post" action="{{auth "handover"}}">
<input type="hidden" name="code" value="{{.Code}}">
<input type="hidden" name="next" value="{{.Next}}">
<button>Continue to {{if .App}}{{.App}} of {{end}}{{.User}}</button>
</form>
<script>` + handoverScript + `</script>
{{template "foot" .}}{{end}}

{{define "password"}}{{template "head" .}}<p>Logged in as {{.Login}}.</p>
<form method="post" action="{{auth "password"}}">
<label>Current password <input type="password" name="old" autocomplete="current-password" required autofocus></label>
<label>New password <input type="password" name="new" autocomplete="new-password" minlength="8" required></label>
<label>New password again <input type="password" name="repeat" autocomplete="new-password" minlength="8" required></label>
<button>Change</button>
</form>
<p class="quiet">Your other sessions end; this one stays. An operator's new hashedPasswordFile replaces a password changed here.</p>
<p><a href="/">Back to the box</a></p>
{{template "foot" .}}{{end}}

{{define "changed"}}{{template "head" .}}<p>The password of {{.Login}} is changed. Every other session of this login has ended.</p>
<p><a href="/">Back to the box</a></p>
{{template "foot" .}}{{end}}

{{define "message"}}{{template "head" .}}<p><a href="https://{{.Domain}}/">Back to the box</a></p>
{{template "foot" .}}{{end}}
`))
})
