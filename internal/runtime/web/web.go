// Package web is the per-user web daemon, `agent-box web serve`
// (docs/web-contract.md, "The web daemon"). It runs as the agent user U
// behind Caddy and the auth service's forward_auth, and serves U's origin
// https://U.D: the list of U's sessions, and /term/... proxied to U's ttyd
// on its private socket. It trusts nothing U's other processes control:
// the ttyd socket's peer is checked (uid and unit cgroup) before a request
// is written to it, the query ttyd sees is rebuilt from a registry name,
// and no cookie, Authorization or X-Agent-Box-* header ever reaches ttyd.
package web

import (
	"context"
	"io"
	"net/http"
	"net/http/httputil"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/appctl"
	"github.com/agent-box/agent-box/internal/runtime/badconfig"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/hooks"
	"github.com/agent-box/agent-box/internal/runtime/httpserve"
	"github.com/agent-box/agent-box/internal/runtime/journal"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/uploads"
)

// Environment variables of the web daemon (beyond those of paths).
var (
	EnvDomain     = contract.Env.WebDomain.Name  // D, host[:port]; required
	EnvTTYDSocket = contract.Env.TTYDSocket.Name // default DefaultTTYDSocket(U)
	EnvTTYD       = contract.Env.TTYD.Name       // the ttyd program of agent-box-term@U; required
	EnvAssets     = contract.Env.WebAssets.Name  // the workspace's browser libraries; "" leaves it out
)

// How often open terminals' login sessions are checked: the environment
// variable, the default and the bounds, from the contract.
var (
	EnvCheckInterval     = contract.Env.WebCheckInterval.Name
	DefaultAliveInterval = contract.Duration(contract.Web.TerminalCheckInterval.Default)
	MinAliveInterval     = contract.Duration(contract.Web.TerminalCheckInterval.Min)
	MaxAliveInterval     = contract.Duration(contract.Web.TerminalCheckInterval.Max)
)

// StatusSocket is the auth service's status socket (POST /alive). A
// variable for tests only.
var StatusSocket = contract.Sockets.AuthStatus.Path

// DefaultTTYDSocket is where U's ttyd listens (agent-box-term@U.service).
func DefaultTTYDSocket(user string) string {
	return contract.Sockets.TTYD.For(user)
}

// Config is one web daemon.
type Config struct {
	User   string // U: the user running the daemon
	UID    int    // U's uid
	Domain string // D: the box's domain as browsers use it, port included when not 443

	Env     paths.Env // U's paths: registry, observations, state.json, tmux socket
	Tmux    string    // absolute tmux for session states; "" leaves them unknown
	ProcEnv []string  // environment of tmux clients

	TTYDSocket   string // U's ttyd
	TTYD         string // the ttyd program agent-box-term@U runs (its page, the peer's executable)
	AssetsDir    string // the workspace's browser libraries; "": the list links ttyd's page only
	StatusSocket string // the auth service's status socket

	// InUnit checks that process pid (the ttyd socket's peer, already of
	// uid UID) runs in agent-box-term@U.service; nil is InTermUnit(User).
	InUnit func(pid int) error
	// IsTTYD checks that process pid runs the program TTYD; nil is
	// RunsProgram(TTYD).
	IsTTYD func(pid int) error
	// AliveInterval is how often the sessions of open WebSockets are
	// checked; 0 is DefaultAliveInterval.
	AliveInterval time.Duration
	// Limits are the listeners' timeouts; zero is httpserve.Bounded (tests
	// shorten them).
	Limits httpserve.Limits

	Log io.Writer // one line per refusal and per status-socket outage

	// Hooks are the user's webhooks (none: no hook listener); their
	// deliveries go under HooksDir (paths.Env.HooksDir).
	Hooks    hooks.Config
	HooksDir string
	// Apps manages the user's apps for the settings page; nil shows none.
	Apps *appctl.Ctl
	// WakeSettle is how long after starting a stopped session the notify
	// text waits before it is typed; 0 is DefaultWakeSettle.
	WakeSettle time.Duration
}

// DefaultWakeSettle gives a just-started agent time to draw its prompt.
const DefaultWakeSettle = 3 * time.Second

// configErrorf is a configuration the daemon refuses to start with
// (exit 12).
func configErrorf(format string, a ...any) error {
	return badconfig.Errorf("web serve", "", format, a...)
}

// FromEnv builds the daemon's configuration from its environment (getenv
// is os.Getenv in production) and e, the user's paths (as the CLI derives
// them). U is the user of the running uid, never $USER. Only AGENT_BOX_TMUX
// is ever executed for tmux: the daemon runs no tmux found through PATH.
// For the settings page's apps it runs systemctl and journalctl from the
// unit's PATH (the user's environment in the store), as `agent-box app`
// does.
func FromEnv(getenv func(string) string, e paths.Env) (Config, error) {
	uid := os.Getuid()
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return Config{}, configErrorf("the user of uid %d: %v", uid, err)
	}
	cfg := Config{
		User: u.Username, UID: uid, Env: e, Tmux: e.Tmux,
		Domain: getenv(EnvDomain), TTYDSocket: getenv(EnvTTYDSocket), TTYD: getenv(EnvTTYD), StatusSocket: StatusSocket,
		AssetsDir: getenv(EnvAssets),
		HooksDir:  e.HooksDir(),
		Apps:      &appctl.Ctl{User: u.Username},
	}
	if p := getenv(hooks.EnvConfig); p != "" {
		if !filepath.IsAbs(p) {
			return Config{}, configErrorf("%s must be an absolute path, got %s", hooks.EnvConfig, escape.Quote(p, 256))
		}
		if cfg.Hooks, err = hooks.Load(p, getenv("CREDENTIALS_DIRECTORY")); err != nil {
			return Config{}, badconfig.Wrap("web serve", err)
		}
	}
	if v := getenv(EnvCheckInterval); v != "" {
		d, err := contract.ParseDuration(v)
		if err != nil || d < MinAliveInterval || d > MaxAliveInterval {
			return Config{}, configErrorf("%s=%s: want a Go duration from %v to %v (how often the login sessions of open terminals are checked)",
				EnvCheckInterval, escape.Quote(v, 64), MinAliveInterval, MaxAliveInterval)
		}
		cfg.AliveInterval = d
	}
	if cfg.TTYDSocket == "" {
		cfg.TTYDSocket = DefaultTTYDSocket(cfg.User)
	}
	if cfg.Tmux != "" && !filepath.IsAbs(cfg.Tmux) {
		return Config{}, configErrorf("%s must be an absolute path, got %s", paths.EnvTmux, escape.Quote(cfg.Tmux, 256))
	}
	return cfg, cfg.check()
}

func (c Config) check() error {
	if c.Domain == "" {
		return configErrorf("%s is unset (the box's domain, for example box.example.com)", EnvDomain)
	}
	if err := contract.CheckDomain(c.Domain); err != nil {
		return configErrorf("%s: %v", EnvDomain, err)
	}
	if c.User == "" || strings.ContainsAny(c.User, "/:") || escape.String(c.User) != c.User {
		return configErrorf("user name %s cannot name an origin", escape.Quote(c.User, 64))
	}
	if !filepath.IsAbs(c.TTYDSocket) {
		return configErrorf("%s must be an absolute path, got %s", EnvTTYDSocket, escape.Quote(c.TTYDSocket, 256))
	}
	if !filepath.IsAbs(c.TTYD) {
		return configErrorf("%s must be the absolute path of the ttyd that %s runs, got %s", EnvTTYD, TermUnit(c.User), escape.Quote(c.TTYD, 256))
	}
	if c.AssetsDir != "" && !filepath.IsAbs(c.AssetsDir) {
		return configErrorf("%s must be an absolute path, got %s", EnvAssets, escape.Quote(c.AssetsDir, 256))
	}
	if !filepath.IsAbs(c.StatusSocket) {
		return configErrorf("the status socket must be an absolute path, got %s", escape.Quote(c.StatusSocket, 256))
	}
	return nil
}

// Server is the daemon's handler.
type Server struct {
	cfg     Config
	origin  string // https://U.D
	host    string // U.D
	mux     *http.ServeMux
	proxy   *httputil.ReverseProxy
	csp     string // of every /term/... answer from ttyd
	alive   *tracker
	log     *journal.Logger
	uploads *uploads.Dir
	// the live session list: what wakes its streams, and their bound
	changes         *changes
	streams         *streams
	eventsKeepAlive time.Duration
	// typePath types an upload's path into a session (no Enter).
	typePath func(ctx context.Context, session, text string) error
	hooks    *hooks.Receiver // nil without hooks
	waker    *hookWaker
}

// New checks cfg and returns the daemon's handler. Run s.Alive to check
// the sessions of open WebSockets (Serve does).
func New(cfg Config) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.InUnit == nil {
		cfg.InUnit = InTermUnit(cfg.User)
	}
	if cfg.IsTTYD == nil {
		cfg.IsTTYD = RunsProgram(cfg.TTYD)
	}
	if cfg.AliveInterval <= 0 {
		cfg.AliveInterval = DefaultAliveInterval
	}
	if cfg.Limits == (httpserve.Limits{}) {
		cfg.Limits = httpserve.Bounded
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	s := &Server{cfg: cfg, host: cfg.User + "." + cfg.Domain, log: journal.New(cfg.Log, "agent-box: web"),
		uploads: &uploads.Dir{Home: cfg.Env.Home, Max: uploads.MaxBytes, Quota: uploads.QuotaBytes}}
	s.origin = "https://" + s.host
	e := cfg.Env
	s.changes = newChanges([]string{e.ConfigDir, e.ObservationsDir(), e.ConversationsDir(), e.RuntimeDir}, EventsSettle, s.log)
	s.streams = &streams{max: EventsMaxStreams}
	s.eventsKeepAlive = EventsKeepAlive
	s.typePath = func(ctx context.Context, session, text string) error {
		return s.typeText(ctx, session, text, false, pasteWait)
	}
	hashes, err := TTYDPageHashes(cfg.TTYD)
	if err != nil {
		// The rest of the origin works; the terminal page runs no script.
		s.log.Printf("ttyd's page: %v; the terminal page will run no script", err)
	}
	s.csp = termCSP(s.host, hashes)
	s.alive = newTracker(s.log, newStatusClient(cfg.StatusSocket))
	if len(cfg.Hooks.Hooks) > 0 {
		if err := s.openHooks(); err != nil {
			return nil, err
		}
	}
	s.proxy = s.newProxy()
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /{$}", s.list)
	s.mux.HandleFunc("GET "+EventsPath, s.sessionEvents)
	s.mux.HandleFunc("GET "+AssetsRoute+"{name}", s.asset)
	s.mux.HandleFunc("GET /settings", s.settings)
	// Every POST must be same-origin (Sec-Fetch-Site, else Origin against
	// Host); no GET changes anything.
	csrf := http.NewCrossOriginProtection()
	s.mux.Handle("POST /settings/sessions", csrf.Handler(http.HandlerFunc(s.sessionsPost)))
	s.mux.Handle("POST /settings/secrets", csrf.Handler(http.HandlerFunc(s.secretsPost)))
	s.mux.Handle("POST /settings/apps", csrf.Handler(http.HandlerFunc(s.appsPost)))
	s.mux.HandleFunc("GET /uploads", s.uploadForm)
	s.mux.Handle("POST /uploads", csrf.Handler(http.HandlerFunc(s.uploadPost)))
	s.mux.Handle("POST /uploads/paste", csrf.Handler(http.HandlerFunc(s.uploadPaste)))
	s.mux.HandleFunc("GET /downloads/", s.downloads)
	s.mux.HandleFunc("GET /downloads", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/downloads/", http.StatusMovedPermanently)
	})
	s.mux.HandleFunc(contract.Routes.Terminal.Path, s.term)
	s.mux.HandleFunc(contract.Routes.Terminal.Path+"/", s.term)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		plain(w, http.StatusNotFound, "not found")
	})
	return s, nil
}

// Alive checks the session of every open WebSocket and session-list
// stream each AliveInterval and closes those whose session has ended, and
// watches the files of the session list, until ctx ends.
func (s *Server) Alive(ctx context.Context) {
	go s.changes.run(ctx)
	s.alive.run(ctx, s.cfg.AliveInterval)
}

// User header and session header, set by Caddy from forward_auth's answer.
var (
	hdrUser    = contract.Headers.User
	hdrSession = contract.Headers.Session
)

type ctxKey struct{}

// ServeHTTP checks the user header, removes every credential-bearing
// header and dispatches. The security headers every answer carries are
// set before it runs (httpserve.Handler).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if v := r.Header.Values(hdrUser); len(v) != 1 || v[0] != s.cfg.User {
		got := "none"
		if len(v) > 0 {
			got = escape.Quote(strings.Join(v, ", "), 64)
		}
		s.log.Refuse("wrong-user", "%s %s (got %s)", r.Method, escape.Quote(r.URL.Path, 128), got)
		plain(w, http.StatusForbidden, "forbidden")
		return
	}
	session := ""
	if v := r.Header.Values(hdrSession); len(v) == 1 {
		session = v[0]
	}
	strip(r.Header)
	s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, session)))
}

// strip removes what must never reach ttyd: cookies, credentials and the
// headers of our own (identity, session, client address).
func strip(h http.Header) {
	for k := range h {
		if p := contract.Headers.Prefix; len(k) >= len(p) && strings.EqualFold(k[:len(p)], p) {
			delete(h, k)
		}
	}
	h.Del("Cookie")
	h.Del("Authorization")
	h.Del("Proxy-Authorization")
}

// plain writes a short text answer (never anything a client sent).
func plain(w http.ResponseWriter, code int, msg string) { httpserve.Plain(w, code, msg) }
