// Package caddycheck checks Caddy's adapted configuration against the web contract.
//
// It checks Caddy's adapted JSON configuration
// (`caddy adapt`) against what docs/web-contract.md requires of the web
// surface's routes, the cookies each backend gets among them (Caddy's own
// regexp replacements applied to a browser's Cookie header). `caddy validate` alone proves little: it accepts a
// config whose dials hold placeholders or whose per-user route lacks
// forward_auth. The Go tests run it on the golden Caddyfile with Debian's
// caddy; the flake's golden check runs it (cmd/check-caddy-config) on the
// Caddyfile NixOS really installs.
package caddycheck

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Want is what the configuration must serve: the domain (host[:port]),
// the agent users with an origin, those with webhooks, and the apps with
// their domain ("": Domain).
type Want struct {
	Domain     string
	Users      []string
	Hooks      []string
	AppsDomain string
	Apps       []App
}

// App is an app of a user: its origin is <name>--<user>.<apps domain>.
type App struct {
	User, Name string
	Public     bool
}

func (a App) label() string { return a.Name + "--" + a.User }

func appDial(a App) string { return "unix//run/agent-box-app/" + a.label() + ".sock" }

// The sockets, as docs/web-contract.md names them.
const (
	pagesDial  = "unix//run/agent-box-auth/pages.sock"
	verifyDial = "unix//run/agent-box-auth/verify.sock"
	clientVar  = "{http.request.remote.host}"
)

func webDial(user string) string { return "unix//run/agent-box-web/" + user + ".sock" }

func hookDial(user string) string { return "unix//run/agent-box-hook/" + user + ".sock" }

type config struct {
	Admin struct {
		Listen string `json:"listen"`
	} `json:"admin"`
	Apps struct {
		HTTP struct {
			Servers map[string]server `json:"servers"`
		} `json:"http"`
	} `json:"apps"`
}

type server struct {
	Listen    []string `json:"listen"`
	Routes    []route  `json:"routes"`
	Protocols []string `json:"protocols"`
}

type route struct {
	Group  string           `json:"group"`
	Match  []map[string]any `json:"match"`
	Handle []handler        `json:"handle"`
}

type handler struct {
	Handler   string                  `json:"handler"`
	MaxSize   int64                   `json:"max_size"` // request_body
	Routes    []route                 `json:"routes"`
	Upstreams []struct{ Dial string } `json:"upstreams"`
	Rewrite   *struct {
		Method string `json:"method"`
		URI    string `json:"uri"`
	} `json:"rewrite"`
	Headers *struct {
		Request *struct {
			Set     map[string][]string      `json:"set"`
			Delete  []string                 `json:"delete"`
			Replace map[string][]replacement `json:"replace"`
		} `json:"request"`
	} `json:"headers"`
	Request *struct { // a "headers" handler's request operations
		Set    map[string][]string `json:"set"`
		Delete []string            `json:"delete"`
	} `json:"request"`
	HandleResponse []struct {
		Match *struct {
			StatusCode []int `json:"status_code"`
		} `json:"match"`
		Routes []route `json:"routes"`
	} `json:"handle_response"`
}

// replacement is one header_up FIELD SEARCH REPLACE (Caddyfile: a regexp).
type replacement struct {
	Search       string `json:"search"`
	SearchRegexp string `json:"search_regexp"`
	Replace      string `json:"replace"`
}

// proxy is one reverse_proxy handler found in the tree, with the path
// matchers above it and what runs before it in its route list.
type proxy struct {
	h      handler
	paths  []string
	before []handler // handlers of earlier matcher-less routes of the same list, and earlier handlers of its route
}

func hostPort(domain string) (host, port string) {
	host, port, ok := strings.Cut(domain, ":")
	if !ok {
		port = "443"
	}
	return host, port
}

// Check returns every way the adapted config (JSON) departs from the
// contract; none means it holds.
func Check(adapted []byte, want Want) []string {
	var c config
	if err := json.Unmarshal(adapted, &c); err != nil {
		return []string{fmt.Sprintf("not Caddy JSON: %v", err)}
	}
	var probs []string
	bad := func(f string, a ...any) { probs = append(probs, fmt.Sprintf(f, a...)) }
	if !strings.HasPrefix(c.Admin.Listen, "unix//") {
		bad("admin listens on %q, want a unix socket (a TCP admin API hands every local user the config)", c.Admin.Listen)
	}
	host, port := hostPort(want.Domain)
	hosts := map[string]string{host: ""}
	for _, u := range want.Users {
		hosts[u+"."+host] = u
	}
	appsDomain := want.AppsDomain
	if appsDomain == "" {
		appsDomain = want.Domain
	}
	appsHost, appsPort := hostPort(appsDomain)
	if appsPort != port {
		bad("the apps' domain %s has another port than %s: one server listens on one port", appsDomain, want.Domain)
	}
	apps := map[string]App{}
	for _, a := range want.Apps {
		apps[a.label()+"."+appsHost] = a
	}
	seen := map[string]bool{}
	dials := map[string]bool{}
	for name, s := range c.Apps.HTTP.Servers {
		if !slices.Equal(s.Protocols, []string{"h1", "h2"}) {
			bad("server %s: protocols %v, want exactly h1 h2 (no HTTP/3 over UDP)", name, s.Protocols)
		}
		if !slices.Equal(s.Listen, []string{":" + port}) {
			bad("server %s listens on %v, want [:%s]", name, s.Listen, port)
		}
		for _, r := range s.Routes {
			hs := hostsOf(r)
			if len(hs) != 1 {
				bad("a top-level route matches hosts %v, want exactly one origin per route", hs)
				continue
			}
			h := hs[0]
			u, ok := hosts[h]
			a, isApp := apps[h]
			if !ok && !isApp {
				bad("route for host %q, which is no origin of %s", h, want.Domain)
				continue
			}
			seen[h] = true
			ps := proxies(r.Handle, nil, nil)
			for _, p := range ps {
				for _, up := range p.h.Upstreams {
					dials[up.Dial] = true
					if strings.ContainsAny(up.Dial, "{}") {
						bad("%s: dial %q holds a placeholder", h, up.Dial)
					}
				}
			}
			if isApp {
				probs = append(probs, checkApp(h, a, ps, want.Users)...)
				continue
			}
			probs = append(probs, checkOrigin(h, u, ps, want.Users, want.Hooks)...)
		}
	}
	for h := range hosts {
		if !seen[h] {
			bad("no route for origin %s", h)
		}
	}
	for h := range apps {
		if !seen[h] {
			bad("no route for the app origin %s", h)
		}
	}
	wantDials := map[string]bool{pagesDial: true}
	if len(want.Users) > 0 {
		wantDials[verifyDial] = true
	}
	for _, u := range want.Users {
		wantDials[webDial(u)] = true
	}
	for _, u := range want.Hooks {
		wantDials[hookDial(u)] = true
	}
	for _, a := range want.Apps {
		wantDials[appDial(a)] = true
		if !a.Public {
			wantDials[verifyDial] = true
		}
	}
	for d := range dials {
		if !wantDials[d] {
			bad("unexpected dial %q", d)
		}
	}
	for d := range wantDials {
		if !dials[d] {
			bad("nothing dials %q", d)
		}
	}
	sort.Strings(probs)
	return probs
}

func hostsOf(r route) []string {
	var hs []string
	for _, m := range r.Match {
		if v, ok := m["host"].([]any); ok {
			for _, h := range v {
				if s, ok := h.(string); ok {
					hs = append(hs, s)
				}
			}
		}
	}
	return hs
}

func pathsOf(r route) []string {
	var ps []string
	for _, m := range r.Match {
		if v, ok := m["path"].([]any); ok {
			for _, p := range v {
				if s, ok := p.(string); ok {
					ps = append(ps, s)
				}
			}
		}
	}
	return ps
}

// proxies walks handlers (one route's handle list, with the path matchers
// above and the handlers that ran before) and returns the reverse proxies.
func proxies(hs []handler, paths []string, before []handler) []proxy {
	var out []proxy
	for i, h := range hs {
		prior := append(slices.Clone(before), hs[:i]...)
		switch h.Handler {
		case "reverse_proxy":
			out = append(out, proxy{h: h, paths: paths, before: prior})
		case "subroute":
			out = append(out, walk(h.Routes, paths, prior)...)
		}
	}
	return out
}

func walk(rs []route, paths []string, before []handler) []proxy {
	var out []proxy
	prior := slices.Clone(before)
	for _, r := range rs {
		p := append(slices.Clone(paths), pathsOf(r)...)
		out = append(out, proxies(r.Handle, p, prior)...)
		if len(r.Match) == 0 && r.Group == "" {
			prior = append(prior, r.Handle...) // always runs, for what follows
		}
	}
	return out
}

// The box's own cookies, as docs/web-contract.md names them (written here
// apart from the runtime's contract, which this check checks).
const (
	sessionCookie = "__Host-agentbox"
	// bindCookie binds a hand-over to the browser on the origin it opens
	// (a user's or an app's); retiredBind was the user origins' before
	// (Domain=D, which a sibling app could toss): a foreign cookie now.
	bindCookie  = "__Host-agentbox-bind"
	retiredBind = "__Secure-agentbox-handover-"
)

// cookieProbe is a Cookie header with the box's cookies among look-alikes
// and foreign ones, as a browser may send it.
func cookieProbe(users []string) string {
	parts := []string{"foreign=1", sessionCookie + "EVIL=2", sessionCookie + "=ID.SECRET", "__host-agentbox=3", "junk=a=b", bindCookie + "=AB", bindCookie + "x=4"}
	for _, u := range users {
		parts = append(parts, retiredBind+u+"=B"+u)
	}
	return strings.Join(append(parts, "Authorization=6", "last=5"), "; ")
}

// foreignCookies is what an app must get of cookieProbe: every cookie but
// the box's own (the look-alikes are the app's).
func foreignCookies(users []string) []string {
	req := http.Request{Header: http.Header{"Cookie": {cookieProbe(users)}}}
	var out []string
	for _, c := range req.Cookies() {
		if c.Name == sessionCookie || c.Name == bindCookie {
			continue
		}
		out = append(out, c.Name+"="+c.Value)
	}
	return out
}

// cookiesPassed is the set of cookie names the backend of h gets when a
// browser sends probe: Caddy applies each regexp replacement of the Cookie
// header (Go's ReplaceAllString, as Caddy does), or removes it.
func cookiesPassed(h handler, probe string) ([]string, error) {
	v := probe
	if h.Headers != nil && h.Headers.Request != nil {
		if slices.Contains(h.Headers.Request.Delete, "Cookie") {
			return nil, nil
		}
		for _, r := range h.Headers.Request.Replace["Cookie"] {
			if r.SearchRegexp == "" {
				return nil, fmt.Errorf("a Cookie replacement that is no regexp (%q)", r.Search)
			}
			re, err := regexp.Compile(r.SearchRegexp)
			if err != nil {
				return nil, fmt.Errorf("a Cookie regexp Go cannot compile: %v", err)
			}
			v = re.ReplaceAllString(v, r.Replace)
		}
	}
	req := http.Request{Header: http.Header{"Cookie": {v}}}
	var names []string
	for _, c := range req.Cookies() {
		names = append(names, c.Name+"="+c.Value)
	}
	return names, nil
}

// passesOnly reports (as a problem, or "") whether h passes exactly the
// want cookies of the probe, with their values.
func passesOnly(h handler, users []string, want ...string) string {
	got, err := cookiesPassed(h, cookieProbe(users))
	if err != nil {
		return err.Error()
	}
	if !slices.Equal(got, want) {
		return fmt.Sprintf("passes the cookies %v of a browser's %q, want only %v", got, cookieProbe(users), want)
	}
	return ""
}

func setsClient(h handler) bool {
	return h.Headers != nil && h.Headers.Request != nil && slices.Equal(h.Headers.Request.Set["X-Agent-Box-Client"], []string{clientVar})
}

func deletes(h handler, name string) bool {
	if h.Handler == "headers" && h.Request != nil && slices.Contains(h.Request.Delete, name) {
		return true
	}
	return h.Headers != nil && h.Headers.Request != nil && slices.Contains(h.Headers.Request.Delete, name)
}

// isForwardAuth reports a reverse_proxy shaped like forward_auth for user u:
// GET rewritten to /verify?user=u on the verify socket, copying both
// identity headers on a 2xx.
func isForwardAuth(h handler, u string) bool {
	if h.Handler != "reverse_proxy" || h.Rewrite == nil || h.Rewrite.Method != "GET" || h.Rewrite.URI != "/verify?user="+u {
		return false
	}
	if len(h.Upstreams) != 1 || h.Upstreams[0].Dial != verifyDial || !setsClient(h) {
		return false
	}
	for _, hr := range h.HandleResponse {
		if hr.Match == nil || !slices.Equal(hr.Match.StatusCode, []int{2}) {
			continue
		}
		for _, r := range hr.Routes {
			for _, x := range r.Handle {
				// copy_headers: a headers handler setting both from the response
				if x.Handler == "headers" && x.Request != nil {
					s := x.Request.Set
					if slices.Equal(s["X-Agent-Box-User"], []string{"{http.reverse_proxy.header.X-Agent-Box-User}"}) &&
						slices.Equal(s["X-Agent-Box-Session"], []string{"{http.reverse_proxy.header.X-Agent-Box-Session}"}) {
						return true
					}
				}
			}
		}
	}
	return false
}

// isAppForwardAuth reports a reverse_proxy shaped like forward_auth for
// app a: GET rewritten to /verify?user=U&app=A on the verify socket, with
// the client's address (the app is told nobody's identity).
func isAppForwardAuth(h handler, a App) bool {
	return h.Handler == "reverse_proxy" && h.Rewrite != nil && h.Rewrite.Method == "GET" &&
		h.Rewrite.URI == "/verify?user="+a.User+"&app="+a.Name &&
		len(h.Upstreams) == 1 && h.Upstreams[0].Dial == verifyDial && setsClient(h)
}

// checkApp checks an app's origin: a public app is one proxy to its
// socket; any other has /auth/* to the auth pages and forward_auth before
// its socket. The app gets every cookie but the box's, and Authorization.
func checkApp(h string, a App, ps []proxy, users []string) []string {
	var probs []string
	bad := func(f string, x ...any) { probs = append(probs, fmt.Sprintf(h+": "+f, x...)) }
	session := sessionCookie + "=ID.SECRET"
	reached := false
	for _, p := range ps {
		if !a.Public && isAppForwardAuth(p.h, a) {
			if pr := passesOnly(p.h, users, session); pr != "" {
				bad("forward_auth %s", pr)
			}
			continue
		}
		if len(p.h.Upstreams) != 1 {
			bad("a reverse_proxy with %d upstreams", len(p.h.Upstreams))
			continue
		}
		switch dial := p.h.Upstreams[0].Dial; {
		case dial == pagesDial && !a.Public:
			if !slices.Equal(p.paths, []string{"/auth/*"}) {
				bad("the auth pages are reached on paths %v, want only /auth/*", p.paths)
			}
			if !setsClient(p.h) {
				bad("the proxy to the auth pages does not set X-Agent-Box-Client from {remote_host}")
			}
			if pr := passesOnly(p.h, users, session, bindCookie+"=AB"); pr != "" {
				bad("the proxy to the auth pages %s", pr)
			}
		case dial == appDial(a):
			reached = true
			if deletes(p.h, "Authorization") {
				bad("the proxy to %s removes Authorization, the app's own", dial)
			}
			if pr := passesOnly(p.h, users, foreignCookies(users)...); pr != "" {
				bad("the proxy to %s %s", dial, pr)
			}
			if a.Public {
				if len(p.paths) != 0 || len(ps) != 1 {
					bad("a public app is reached on paths %v beside %d other proxies, want all its paths and nothing else", p.paths, len(ps)-1)
				}
				continue
			}
			if !slices.ContainsFunc(p.before, func(b handler) bool { return isAppForwardAuth(b, a) }) {
				bad("%s is reached without forward_auth to /verify?user=%s&app=%s before it", dial, a.User, a.Name)
			}
		default:
			bad("dials %q, which this origin must not reach", dial)
		}
	}
	if !reached {
		bad("nothing reaches the app's socket %s", appDial(a))
	}
	return probs
}

func checkOrigin(h, u string, ps []proxy, users, hookUsers []string) []string {
	var probs []string
	bad := func(f string, a ...any) { probs = append(probs, fmt.Sprintf(h+": "+f, a...)) }
	session := sessionCookie + "=ID.SECRET"
	for _, p := range ps {
		if isForwardAuth(p.h, u) {
			if pr := passesOnly(p.h, users, session); pr != "" {
				bad("forward_auth %s", pr)
			}
			continue
		}
		if len(p.h.Upstreams) != 1 {
			bad("a reverse_proxy with %d upstreams", len(p.h.Upstreams))
			continue
		}
		dial := p.h.Upstreams[0].Dial
		switch {
		case dial == pagesDial:
			if u != "" && !slices.Equal(p.paths, []string{"/auth/*"}) {
				bad("the auth pages are reached on paths %v, want only /auth/*", p.paths)
			}
			if !setsClient(p.h) {
				bad("the proxy to the auth pages does not set X-Agent-Box-Client from {remote_host}")
			}
			wantCookies := []string{session}
			if u != "" {
				wantCookies = append(wantCookies, bindCookie+"=AB")
			}
			if pr := passesOnly(p.h, users, wantCookies...); pr != "" {
				bad("the proxy to the auth pages %s", pr)
			}
		case u != "" && dial == webDial(u):
			if !deletes(p.h, "Cookie") || !deletes(p.h, "Authorization") {
				bad("the proxy to %s does not remove Cookie and Authorization", dial)
			}
			var fa, delUser, delSession = -1, -1, -1
			for i, b := range p.before {
				switch {
				case isForwardAuth(b, u):
					fa = i
				case deletes(b, "X-Agent-Box-User"):
					delUser = i
				case deletes(b, "X-Agent-Box-Session"):
					delSession = i
				}
			}
			if fa < 0 {
				bad("%s is reached without forward_auth to /verify?user=%s before it", dial, u)
			}
			if delUser < 0 || delUser > fa || delSession < 0 || delSession > fa {
				bad("the client's X-Agent-Box-User and X-Agent-Box-Session are not removed before forward_auth")
			}
		case u == "" && strings.HasPrefix(dial, "unix//run/agent-box-hook/") && slices.ContainsFunc(hookUsers, func(v string) bool { return dial == hookDial(v) }):
			// the one route without forward_auth: only POST /V/hook/* of
			// the box origin, body capped, no credential passed on
			v := strings.TrimSuffix(strings.TrimPrefix(dial, "unix//run/agent-box-hook/"), ".sock")
			if !slices.Equal(p.paths, []string{"/" + v + "/hook/*"}) {
				bad("%s is reached on paths %v, want only /%s/hook/*", dial, p.paths, v)
			}
			if !deletes(p.h, "Cookie") || !deletes(p.h, "Authorization") {
				bad("the proxy to %s does not remove Cookie and Authorization", dial)
			}
			if !setsClient(p.h) {
				bad("the proxy to %s does not set X-Agent-Box-Client from {remote_host} (its per-client limits)", dial)
			}
			if !slices.ContainsFunc(p.before, func(b handler) bool { return b.Handler == "request_body" && b.MaxSize > 0 }) {
				bad("the body sent to %s is not capped (request_body max_size)", dial)
			}
		default:
			bad("dials %q, which this origin must not reach", dial)
		}
	}
	return probs
}

// NixOSCaddyfile is the Caddyfile nixpkgs' services.caddy writes for the
// module's settings (globalConfig = "import <global>", extraConfig =
// "import <sites>", its default log block), up to `caddy fmt` whitespace.
// The offline checks and the VM tier's guest use it, so what they run is
// what a NixOS host runs.
func NixOSCaddyfile(global, sites string) string {
	return "{\n\timport " + global + "\n\tlog {\n\t\tlevel ERROR\n\t}\n}\nimport " + sites + "\n"
}
