// Package contractdocs renders the docs' tables of the contract
// (internal/runtime/contract): names and formats, environment variables,
// exit codes, sockets, routes, cookies and headers, limits. Each table
// sits in a doc between
//
//	<!-- BEGIN contract NAME: generated from ... -->
//	<!-- END contract NAME -->
//
// and its test keeps it current (`go test ./internal/contractdocs -update`).
// The prose around the tables is written by hand.
package contractdocs

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// Block is one generated table: the doc it is in, its name and its text.
type Block struct {
	File string // relative to the repository root
	Name string
	Text string
}

// Begin and End are a block's marker lines.
func Begin(name string) string {
	return "<!-- BEGIN contract " + name + ": generated from internal/runtime/contract/contract.json by `go test ./internal/contractdocs -update` -->"
}

func End(name string) string { return "<!-- END contract " + name + " -->" }

const (
	runtimeDoc = "docs/runtime-contract.md"
	webDoc     = "docs/web-contract.md"
)

// Blocks are every generated table, in a fixed order.
func Blocks() []Block {
	c := contract.All()
	return []Block{
		{runtimeDoc, "names", names(c)},
		{runtimeDoc, "variables", variables(c)},
		{runtimeDoc, "attention states", attentionStates(c)},
		{runtimeDoc, "attention reasons", attentionReasons(c)},
		{runtimeDoc, "attention events", attentionEvents(c)},
		{runtimeDoc, "exit codes", exitCodes(c)},
		{runtimeDoc, "apps", apps(c)},
		{runtimeDoc, "session limits", sessionLimits(c)},
		{webDoc, "sockets", sockets(c)},
		{webDoc, "routes", routes(c)},
		{webDoc, "cookies and headers", cookiesAndHeaders(c)},
		{webDoc, "limits", limits(c)},
		{webDoc, "attention report", attentionReport(c)},
		{webDoc, "inbox", inbox(c)},
		{webDoc, "notify", notifyLimits(c)},
		{webDoc, "approvals", approvals(c)},
		{webDoc, "agents client", agentsClient(c)},
		{webDoc, "session events", sessionEvents(c)},
		{webDoc, "web assets", webAssets(c)},
		{webDoc, "uploads", uploadLimits(c)},
	}
}

// code is s as Markdown code (a backtick inside s gets longer fences).
func code(s string) string {
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

// cell escapes what a table cell cannot hold.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

type table struct {
	b strings.Builder
}

func newTable(head ...string) *table {
	t := &table{}
	t.row(head...)
	t.b.WriteString("|" + strings.Repeat("---|", len(head)) + "\n")
	return t
}

func (t *table) row(cells ...string) {
	t.b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

// fields calls f with the JSON key and value of each field of struct v.
func fields[T any](v any, f func(key string, x T)) {
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		key, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
		f(key, rv.Field(i).Interface().(T))
	}
}

func names(c *contract.Contract) string {
	t := newTable("Name", "Pattern (the whole value)", "What")
	fields(c.Names, func(key string, n contract.Name) {
		t.row(key, code(cell(n.Pattern)), cell(n.What))
	})
	t.row("duration", code(cell(c.Formats.Duration.Pattern)), cell(c.Formats.Duration.What))
	d := c.Formats.Domain
	t.row("domain", code(cell(d.Pattern)), cell(fmt.Sprintf("%s; the host at most %d bytes", d.What, d.MaxHostLength)))
	return t.b.String()
}

func variables(c *contract.Contract) string {
	t := newTable("Variable", "Read by", "Meaning")
	fields(c.Env, func(_ string, v contract.Var) {
		t.row(code(v.Name), cell(v.Reader), cell(v.What))
	})
	return t.b.String()
}

func attentionStates(c *contract.Contract) string {
	t := newTable("State", "Meaning")
	fields(c.Attention.States, func(_ string, x contract.Term) {
		t.row(code(x.Name), cell(x.What))
	})
	return t.b.String()
}

func attentionReasons(c *contract.Contract) string {
	t := newTable("Reason", "Given for")
	for _, x := range c.Attention.Reasons {
		t.row(code(x.Name), cell(x.What))
	}
	return t.b.String()
}

// attentionEvents: per setup, the agent's events and the state each means.
func attentionEvents(c *contract.Contract) string {
	a := c.Attention
	ev := newTable("Setup", "Event (hook or plugin event)", "Detail", "State (reason)")
	setups := make([]string, 0, len(a.AgentEvents))
	for s := range a.AgentEvents {
		setups = append(setups, s)
	}
	sort.Strings(setups)
	for _, s := range setups {
		ae := a.AgentEvents[s]
		keys := make([]string, 0, len(ae.Events))
		for k := range ae.Events {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			e := ae.Events[k]
			name, detail, _ := strings.Cut(k, ":")
			if detail != "" {
				detail = code(ae.DetailFields[name] + " = " + detail)
			}
			what := code(e.State)
			if e.Reason != "" {
				what += " (" + code(e.Reason) + ")"
			}
			ev.row(s, code(name), detail, what)
		}
	}
	return ev.b.String()
}

func exitCodes(c *contract.Contract) string {
	t := newTable("Code", "Meaning")
	fields(c.ExitCodes, func(_ string, e contract.ExitCode) {
		t.row(fmt.Sprint(e.Code), cell(e.Meaning))
	})
	return t.b.String()
}

func sockets(c *contract.Contract) string {
	t := newTable("Socket (`<user>`: the agent user)", "Created by", "Mode", "Group", "Clients")
	fields(c.Sockets, func(_ string, s contract.Socket) {
		mode := "—"
		switch {
		case s.Mode != nil:
			mode = *s.Mode + ", owner root"
		case s.DirMode != nil:
			mode = "in a " + *s.DirMode + " directory of its owner"
		}
		caddy := "root"
		switch {
		case s.Group != nil:
			caddy = code(*s.Group)
		case s.Caddy:
			caddy = "Caddy's (the module's drop-in sets `SocketGroup=`)"
		case s.Mode == nil:
			caddy = "—"
		}
		by := code(s.Unit)
		if s.FDName != nil {
			by += " (`FileDescriptorName=" + *s.FDName + "`)"
		}
		t.row(code(s.Path), by, mode, caddy, cell(s.Clients))
	})
	return t.b.String()
}

func routes(c *contract.Contract) string {
	t := newTable("Route", "What")
	fields(c.Routes, func(_ string, r contract.Route) {
		t.row(code(r.Path), cell(r.What))
	})
	return t.b.String()
}

func cookiesAndHeaders(c *contract.Contract) string {
	t := newTable("Name", "What")
	t.row(code(c.Cookies.Session), "cookie: the login session on every origin (`__Host-`: no `Domain`)")
	t.row(code(c.Cookies.Bind), fmt.Sprintf("cookie: binds a hand-over code to the browser that completes it on the origin it opens, a user's or an app's (set by that origin; `__Host-`: no `Domain`, `Path=/`, so no other origin, a sibling app on the same site included, can set it; the box origin keeps only its sha256 with the code; Caddy passes it only to that origin's `%s` and removes it before an app)", c.Routes.AuthPages.Path))
	t.row(code(c.Headers.User), "header: the verified agent user; Caddy's `forward_auth` copies it, after removing a client's")
	t.row(code(c.Headers.Session), "header: the verified login session's id; copied like the user")
	t.row(code(c.Headers.Client), "header: the client address Caddy saw (`{remote_host}`), for the limits and the failed-login line")
	return t.b.String()
}

func attentionReport(c *contract.Contract) string {
	r := c.Attention.Report
	t := newTable("Rule", "Value")
	t.row("path (PUT, status listener)", code(r.Path))
	t.row("at most", fmt.Sprintf("%d bytes, %d sessions", r.MaxBytes, r.MaxSessions))
	t.row("a limited session's try (`NAME limited REASON UNTIL TRY`)", fmt.Sprintf("1 to %d", r.MaxTry))
	t.row("rate per agent user (a token bucket)", fmt.Sprintf("%d at once, %d more per second; beyond: 429 with `Retry-After: 1`", r.Burst, r.PerSecond))
	t.row("a supervisor sends it again without a change", "every "+code(r.ResendEvery))
	return t.b.String()
}

func inbox(c *contract.Contract) string {
	in := c.Attention.Inbox
	t := newTable("Rule", "Value")
	states := make([]string, len(in.States))
	for i, s := range in.States {
		states[i] = code(s)
	}
	t.row("the event stream (GET, box origin)", code(contract.AuthPage(in.Page)))
	t.row("the states listed, in this order", strings.Join(states, ", "))
	t.row("a keep-alive comment, and the session checked", "every "+code(in.KeepAlive))
	t.row("a user whose last report is older is not listed", code(in.StaleAfter))
	t.row("open streams per login", fmt.Sprintf("%d; one more ends the oldest", in.MaxStreams))
	return t.b.String()
}

func notifyLimits(c *contract.Contract) string {
	n := c.Attention.Notify
	t := newTable("Rule", "Value")
	t.row("the feed socket (datagrams, from the auth service)", fmt.Sprintf("%s, root:%s %s", code(c.Sockets.NotifyFeed.Path), code(*c.Sockets.NotifyFeed.Group), code(*c.Sockets.NotifyFeed.Mode)))
	t.row("a login's URL", fmt.Sprintf("the credential %s, one line, at most %d bytes", code(c.Credentials.NotifyPrefix+"<login>"), n.URLMaxBytes))
	t.row("an event (one datagram)", fmt.Sprintf("at most %d bytes", n.MaxEventBytes))
	t.row("waiting per login and agent user", fmt.Sprintf("%d; one more drops that user's oldest (logged); the users of a login take turns, so another user's first notification waits behind at most one of each user with some waiting", n.Queue))
	t.row("tries per notification", fmt.Sprintf("%d, each at most %s; waits %s, doubling up to %s", n.Attempts, code(n.Timeout), code(n.BackoffFirst), code(n.BackoffMax)))
	return t.b.String()
}

func approvals(c *contract.Contract) string {
	a := c.Approvals
	t := newTable("Rule", "Value")
	var events []string
	for setup, e := range a.AgentEvents {
		events = append(events, code(setup)+": "+code(e))
	}
	sort.Strings(events)
	t.row("the agents' hooks that wait for a decision", strings.Join(events, ", "))
	t.row("a request (POST: the supervisor's approval socket, then the status listener)", fmt.Sprintf("%s; a body of at most %d bytes; the tool at most %d bytes, its input at most %d (cut with an ellipsis)", code(a.Path), a.MaxBodyBytes, a.MaxToolBytes, a.MaxInputBytes))
	t.row("a tool's name", fmt.Sprintf("%s (any other character becomes `_`)", code(a.ToolPattern)))
	t.row("the rules \"allow for this session\" would set, shown", fmt.Sprintf("at most %d bytes (longer ones are not offered)", a.MaxRulesBytes))
	t.row("a notification's text of the request", fmt.Sprintf("at most %d bytes; a longer one carries Deny only", a.NotifyTextBytes))
	t.row("blanks the page says in words", fmt.Sprintf("a run of %d or more (`[N blanks]`)", a.BlankRun))
	t.row("waiting requests per agent user", fmt.Sprintf("%d; one more: 429", a.MaxPending))
	t.row("connections waiting on one request", fmt.Sprintf("%d (a hook's and its retry's); one more: 429", a.MaxConnections))
	t.row("requests a supervisor relays at once", fmt.Sprintf("%d; one more: 429", a.MaxRelays))
	t.row("the wait for a decision (`web.approvals.wait`)", fmt.Sprintf("%s by default, %s to %s; then the answer is `none` and the agent's own prompt takes over", code(a.Wait.Default), code(a.Wait.Min), code(a.Wait.Max)))
	t.row("Claude's timeout of its hook", fmt.Sprintf("%d s (beyond the longest wait)", a.HookTimeoutSeconds))
	t.row("a hook's retry while the supervisor or the service restarts", "every "+code(a.RetryEvery))
	t.row("a request whose hook's connection closed", fmt.Sprintf("waits %s for its hook to ask again, then ends", code(a.ReattachGrace)))
	t.row("the decision on the box origin (POST)", code(contract.AuthPage(a.DecidePage))+" (`user`, `request`, `decision`)")
	rp := a.Reply
	states := make([]string, len(rp.States))
	for i, s := range rp.States {
		states[i] = code(s)
	}
	t.row("a reply (POST, box origin)", fmt.Sprintf("%s (`user`, `session`, `text`): to a session in %s; one line, at most %d bytes (the prompt's bound); at most %d waiting per agent user, each at most %s", code(contract.AuthPage(rp.Page)), strings.Join(states, " or "), c.Conversations.PromptMaxBytes, rp.MaxPending, code(rp.MaxAge)))
	t.row("the supervisor's poll for replies (GET, status listener)", fmt.Sprintf("%s; answered at once when one waits, else `[]` after %s; Enter typed %s after the text", code(rp.Path), code(rp.Poll), code(rp.EnterAfter)))
	t.row("a notification's action URL (POST, no login)", fmt.Sprintf("%s<token>; lives %s by default (`web.approvals.actionLifetime`, %s to %s); decides once", code(a.ActPrefix), code(a.ActionLifetime.Default), code(a.ActionLifetime.Min), code(a.ActionLifetime.Max)))
	return t.b.String()
}

func agentsClient(c *contract.Contract) string {
	a := c.Web.AgentsClient
	t := newTable("Rule", "Value")
	t.row("the agents' source address (one client of the auth service's limits)", code(a.Address))
	t.row("the nftables table (`nft list table inet "+a.Table+"` shows it)", code("inet "+a.Table))
	t.row("the unit that loads it (`systemctl status "+c.Units.Clients+"`)", code(c.Units.Clients))
	return t.b.String()
}

func sessionEvents(c *contract.Contract) string {
	e := c.Web.SessionEvents
	t := newTable("Rule", "Value")
	t.row("the live session list (GET, each user origin)", code(e.Path))
	t.row("a keep-alive comment", "every "+code(e.KeepAlive))
	t.row("a burst of changes is read once, after its first by", code(e.Settle))
	t.row("open streams per web daemon", fmt.Sprintf("%d; one more ends the oldest", e.MaxStreams))
	return t.b.String()
}

func webAssets(c *contract.Contract) string {
	a := c.WebAssets
	t := newTable("npm package", "Version", "License", "Served at "+code(a.Route), "Integrity")
	for _, p := range a.Packages {
		names := make([]string, 0, len(p.Files))
		for _, n := range p.Files {
			names = append(names, n)
		}
		sort.Strings(names)
		for i, n := range names {
			names[i] = code(n)
		}
		t.row(code(p.Name), p.Version, p.License, strings.Join(names, ", "), code(p.Integrity))
	}
	return t.b.String()
}

func apps(c *contract.Contract) string {
	a := c.Apps
	t := newTable("Rule", "Value")
	t.row("an app's label (its unit's instance; app names hold no '-', so the first `--` splits it)", code(a.Label))
	t.row("its unit", code(a.Unit))
	t.row("its socket (root:caddy with the web surface, else root:root)", code(a.Socket.Path)+", mode "+code(a.Socket.Mode)+", from "+code(a.Socket.Unit)+" (FileDescriptorName="+code(a.Socket.FDName)+")")
	t.row("its program's directory (the user's, in one of root's; read-only to the app)", code(a.Dir))
	t.row("its state directory ("+code("$STATE_DIRECTORY")+")", code("/var/lib/"+a.StateDirectory))
	t.row("the program serves HTTP on", code(fmt.Sprintf("127.0.0.1:$%s", a.PortVariable))+fmt.Sprintf(" (%d), in the unit's own network namespace", a.Port))
	t.row("a start waits for the program's file to be quiet for", code(a.Settle))
	t.row("the delay before a restart (restartDelay)", code(a.RestartDelay.Default)+" by default, at least "+code(a.RestartDelay.Min)+"; doubling while the program exits within restartDelayMax of its start")
	t.row("the longest delay (restartDelayMax)", code(a.RestartDelayMax.Default)+" by default")
	t.row("limits of the unit (memoryMax, tasksMax)", code(a.MemoryMax)+", "+fmt.Sprint(a.TasksMax)+" by default")
	var verbs []string
	for _, v := range append(slices.Clone(a.Manage.Verbs), a.Manage.Reset) {
		verbs = append(verbs, code(v))
	}
	t.row("what a user may do to exactly its own apps' units without root (polkit "+code(a.Manage.PolkitAction)+", the rules in "+code("/etc/"+a.Manage.PolkitRules)+")", strings.Join(verbs, ", ")+" (the last before a start of a failed unit)")
	return t.b.String()
}

func sessionLimits(c *contract.Contract) string {
	l := c.Sessions
	t := newTable("Value", "Limit", "Why")
	t.row("one session argument", fmt.Sprintf("%d bytes", l.ArgMaxBytes), "one `execve` string: `MAX_ARG_STRLEN` (32 pages) less its NUL")
	t.row("a session's arguments together", fmt.Sprintf("%d bytes (%d KiB), each counted as `execve` counts it: its bytes, its NUL and a pointer of %d bytes", l.ArgsMaxBytes, l.ArgsMaxBytes>>10, l.ArgPointerBytes), "leaves `ARG_MAX` room for the rest (below)")
	t.row("a session's `cwd`", fmt.Sprintf("%d bytes", l.CwdMaxBytes), "`PATH_MAX` less its NUL: `chdir` refuses longer")
	t.row("sessions in the registry, and in the seed", fmt.Sprint(l.Max), "bounds the supervisor's work per reconcile")
	t.row("the seed file ("+code(c.Env.Seed.Name)+", `session add --file`)", fmt.Sprintf("%d bytes (%d MiB)", l.SeedMaxBytes, l.SeedMaxBytes>>20), "its cap")
	t.row("the runtime directory, a tmpfs of its own", fmt.Sprintf("%s, %d inodes", c.RuntimeTmpfs.Size, c.RuntimeTmpfs.Inodes), "its files take a few KiB; an agent that fills it fills only it, never `/run`")
	t.row("a user's tasks kept from its agents (the sessions unit's "+code("TasksMax=")+" is the user's "+code("tasksMax")+" less these)", fmt.Sprint(c.UserTasks.Reserve), "while the agents are at their cap, the supervisor still runs tmux (a `session rm` of the runaway applies) and the terminal's tmux client has room to start")
	t.row("a user's "+code("diskQuota")+" (its unit "+code(c.Units.Disk)+")", code(c.DiskQuota.Pattern)+fmt.Sprintf(" (M, G or T: powers of 1024), and one file per %d bytes of it", c.DiskQuota.BytesPerFile), "the bytes and files the user may own on each filesystem where it writes (its home, its units' private temporary directories, its apps' state; a tmpfs is charged to its memory instead): ext4's default share of inodes")
	u := c.UsageLimits
	t.row("a session limited by its account's usage limit tries again (services.agent-box.usageLimits)", fmt.Sprintf("at the reset its agent named, if within %s (an agent's own retry at least %s ahead, OpenCode's, names its time; a sooner one is no limit); else after %s, %d times longer each try up to %s; each try up to %s later; at most %d resumes a minute per user", code(u.MaxReset), code(u.AgentRetry), code(u.FirstWait), u.Growth, code(u.MaxWait), code(u.Jitter), u.PerMinute), "the restart gives the resumed conversation the resume prompt, "+code(u.ResumePrompt)+" by default (docs/operating.md, \"What happens at a usage limit\")")
	tr := u.TurnRead
	t.row("the end of a turn no hook tells, read from the agent's log (Codex's rollout file)", fmt.Sprintf("every %s while the file grows, its last %d bytes (%d MiB); while the newest turn is open, and for %s after the event that began the reads", code(tr.Every), tr.TailBytes, tr.TailBytes>>20, code(tr.Grace)), "a failed Codex turn fires no hook (\"Codex\"); a read costs a stat while the file does not grow")
	t.row("removed names the registry keeps (tombstones)", fmt.Sprint(l.MaxTombstones), "the supervisor prunes every one that keeps nothing away; a `session rm` beyond is refused, saying why")
	return t.b.String()
}

func uploadLimits(c *contract.Contract) string {
	u := c.Uploads
	t := newTable("Rule", "Value")
	t.row("where uploads land", code("~/"+u.Dir))
	t.row("a file", fmt.Sprintf("at most %d bytes (%d MiB); beyond: 413", u.MaxBytes, u.MaxBytes>>20))
	t.row("the quota: regular files directly in the directory, and uploads in progress", fmt.Sprintf("%d bytes (%d MiB); beyond: 507", u.QuotaBytes, u.QuotaBytes>>20))
	t.row("a name", fmt.Sprintf("at most %d bytes", u.NameMaxBytes))
	t.row("an upload in progress is named", code(u.TempPrefix+"<random>"))
	return t.b.String()
}

func limits(c *contract.Contract) string {
	t := newTable("Setting", "Default", "Accepted")
	w, h := c.Web, c.Webhooks
	t.row("`web.sessionLifetime`", code(w.SessionLifetime.Default), "a duration of at least "+code(w.SessionLifetime.Min))
	t.row("`web.idleTimeout`", code(w.IdleTimeout.Default), "a duration of at least "+code(w.IdleTimeout.Min))
	iv := w.TerminalCheckInterval
	t.row("`web.terminalCheckInterval`", code(iv.Default), fmt.Sprintf("a duration from %s to %s", code(iv.Min), code(iv.Max)))
	t.row("`web.webhookConcurrency`", fmt.Sprint(h.Concurrency.Default), fmt.Sprintf("%d to %d", h.Concurrency.Min, h.Concurrency.Max))
	t.row("`webhooks.<name>.maxBodySize`", fmt.Sprint(h.MaxBodySize.Default), fmt.Sprintf("%d to %d bytes", h.MaxBodySize.Min, h.MaxBodySize.Max))
	t.row("`webhooks.<name>.quota`", "(the option's)", fmt.Sprintf("at least 2 × `maxBodySize` + %d bytes", h.QuotaSlack))
	t.row("`webhooks.<name>.retention`", "(the option's)", "a duration of at least "+code(h.RetentionMin))
	t.row("`webhooks.<name>.notify`", "`null`", fmt.Sprintf("at most %d bytes, no control characters", h.NotifyMaxBytes))
	return t.b.String()
}
