package auth

import (
	"context"
	"errors"
	"io"
	"net"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/badconfig"
	"github.com/agent-box/agent-box/internal/runtime/board"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/httpserve"
	"github.com/agent-box/agent-box/internal/runtime/journal"
	"github.com/agent-box/agent-box/internal/runtime/loginlimit"
	"github.com/agent-box/agent-box/internal/runtime/notify"
	"github.com/agent-box/agent-box/internal/runtime/pending"
	"github.com/agent-box/agent-box/internal/runtime/pwhash"
)

// Clock is the time source; tests pass a fake one.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Options configure a Server.
type Options struct {
	Config   *Config   // from LoadConfig
	StateDir string    // $STATE_DIRECTORY: sessions.json lives here
	Log      io.Writer // stderr: the journal
	Clock    Clock     // nil: the system clock
}

// Server is the auth service: its handlers share one session table.
type Server struct {
	cfg    *Config
	clock  Clock
	log    *journal.Logger
	store  *store
	codes  *codes
	limits *loginlimit.Limiter
	queue  *loginlimit.Queue
	board  *board.Board
	dummy  pwhash.Hash
	// pending is the agents' permission requests that wait for a person;
	// replies the persons' replies that wait for the supervisors.
	pending *pending.Store
	replies *replies

	// changed wakes the inbox streams: a state reported, a session ended.
	changed *board.Wakeup
	streams *board.Streams
	// keepAlive is the inbox streams' keep-alive interval (tests shorten it).
	keepAlive time.Duration
	// stopping ends the inbox streams when Serve's context ends.
	stopping <-chan struct{}
	// notifyLogins are the logins with notifications, sorted; feed sends
	// theirs to the notify service (Serve runs it when there are any).
	notifyLogins []string
	feed         *notify.Feed

	// derive is the password hash function; tests count its calls.
	derive pwhash.DeriveFunc
	// userName maps a peer's uid to a user name (os/user).
	userName func(uid int) (string, error)

	boxCSP, userCSP string
}

// New loads the session table from StateDir and drops the sessions the
// configuration no longer allows.
func New(o Options) (*Server, error) {
	if o.Config == nil {
		return nil, errors.New("auth: no configuration")
	}
	if o.StateDir == "" {
		return nil, &badconfig.Error{What: configWhat, Err: errors.New("STATE_DIRECTORY is unset (StateDirectory=agent-box-auth)")}
	}
	changed := board.NewWakeup()
	s := &Server{
		cfg: o.Config, clock: o.Clock, log: journal.New(o.Log, "agent-box-auth"),
		codes: newCodes(), limits: loginlimit.NewLimiter(), queue: loginlimit.NewQueue(), board: board.New(changed),
		dummy: pwhash.Dummy(o.Config.hashes), derive: pwhash.Derive, userName: lookupUserName,
		changed: changed, streams: board.NewStreams(), keepAlive: contract.Duration(contract.Attention.Inbox.KeepAlive),
	}
	if s.clock == nil {
		s.clock = systemClock{}
	}
	for l, login := range o.Config.Logins {
		if login.Notify {
			s.notifyLogins = append(s.notifyLogins, l)
		}
	}
	sort.Strings(s.notifyLogins)
	s.feed = notify.NewFeed(contract.Sockets.NotifyFeed.Path, s.log)
	if s.cfg.hashes == nil {
		s.cfg.hashes = map[string]pwhash.Hash{}
	}
	s.boxCSP, s.userCSP = csp(s.cfg)
	st, warn, err := loadStore(filepath.Join(o.StateDir, "sessions.json"), s.cfg.IdleTimeout)
	if err != nil {
		return nil, err
	}
	if warn != nil {
		s.log.Printf("warning: %v", warn)
	}
	st.ended = changed
	s.store = st
	ps, warn, err := pending.Open(filepath.Join(o.StateDir, "approvals.json"), s.clock.Now(), changed.Fire)
	if err != nil {
		return nil, err
	}
	if warn != nil {
		s.log.Printf("warning: %v", warn)
	}
	s.pending, s.replies = ps, newReplies()
	now := s.clock.Now()
	if n := st.reconcile(s.cfg, now); n > 0 {
		s.log.Printf("ended %d sessions the configuration no longer allows", n)
	}
	if err := st.persist(now); err != nil {
		return nil, err
	}
	return s, nil
}

// csp returns the Content-Security-Policy of the box origin and of the
// user and app origins. A form's redirect is subject to form-action
// (Chrome), so the box origin, whose login and open forms are answered
// with a redirect to a user's or an app's origin, lists every one of them;
// their logout goes to the box origin. Each origin runs only its pages' hashed scripts: the
// hand-over's on user origins, the hand-over's and the inbox's (with its
// event stream, connect-src 'self') on the box origin.
func csp(c *Config) (box, usr string) {
	var fa strings.Builder
	for _, u := range c.Users {
		fa.WriteString(" " + c.originURL(origin{User: u}))
		for _, a := range c.Apps[u] {
			fa.WriteString(" " + c.originURL(origin{User: u, App: a}))
		}
	}
	handover, inbox := scriptHash(handoverScript), scriptHash(inboxScript)
	box = "default-src 'none'; form-action 'self'" + fa.String() + "; style-src 'self'; img-src 'self'; manifest-src 'self'; script-src " + handover + " " + inbox + "; connect-src 'self'"
	usr = "default-src 'none'; form-action 'self' https://" + c.Domain + "; style-src 'self'; img-src 'self'; script-src " + handover
	return box, usr
}

// lookupUserName is the uid -> name mapping of the passwd database.
func lookupUserName(uid int) (string, error) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

// persistLogged writes the table and logs a failure (the table in memory
// stays authoritative; the next change writes again).
func (s *Server) persistLogged(now time.Time) error {
	err := s.store.persist(now)
	if err != nil {
		s.log.Printf("%v", err)
	}
	return err
}

// Listener names, in the order Serve takes them (LISTEN_FDNAMES).
var ListenerNames = []string{
	*contract.Sockets.AuthVerify.FDName,
	*contract.Sockets.AuthPages.FDName,
	*contract.Sockets.AuthStatus.FDName,
	*contract.Sockets.AuthControl.FDName,
}

// shutdownTimeout bounds the wait for requests in flight at SIGTERM.
const shutdownTimeout = 10 * time.Second

// Serve answers on the four listeners until ctx ends, then shuts down
// gracefully (the requests in flight finish) and writes the session table.
// Every listener is bounded (httpserve.Bounded); the status and control
// listeners know their peer's uid.
func (s *Server) Serve(ctx context.Context, verify, pages, status, control net.Listener) error {
	s.log.Printf("serving https://%s/ for %d users and %d logins, %d sessions", s.cfg.Domain, len(s.cfg.Users), len(s.cfg.Logins), s.store.count())
	s.stopping = ctx.Done()
	if len(s.notifyLogins) > 0 {
		go s.feed.Run(ctx)
	}
	ls := []httpserve.Listener{
		{L: verify, Handler: s.Verify()},
		{L: pages, Handler: s.Pages()},
		{L: status, Handler: s.Status(), ConnContext: peerContext},
		{L: control, Handler: s.Control(), ConnContext: peerContext},
	}
	for i := range ls {
		ls[i].Name, ls[i].Limits = ListenerNames[i], httpserve.Bounded
	}
	first := httpserve.Serve(ctx, shutdownTimeout, s.log.ErrorLog(), ls...)
	if err := s.store.persist(s.clock.Now()); err != nil && first == nil {
		first = err
	}
	return first
}

type peerKey struct{}

// peerContext records the connecting process's uid (SO_PEERCRED), or -1.
func peerContext(ctx context.Context, c net.Conn) context.Context {
	uid := -1
	if uc, ok := c.(*net.UnixConn); ok {
		if raw, err := uc.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) {
				if cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
					uid = int(cred.Uid)
				}
			})
		}
	}
	return context.WithValue(ctx, peerKey{}, uid)
}

func peerUID(ctx context.Context) int {
	if uid, ok := ctx.Value(peerKey{}).(int); ok {
		return uid
	}
	return -1
}
