// Package httpserve is the one way the runtime's daemons serve HTTP on the listeners systemd gives them.
//
// It is the one way the runtime's daemons (the auth
// service, the web daemon) serve HTTP on the listeners systemd gives them:
// one server set-up with per-listener timeouts, the security headers of
// every answer set in one place, and a graceful shutdown.
//
// Invariants:
//   - every listener has a header timeout and an idle timeout, so a client
//     that opens a connection and sends nothing, or keeps an idle one,
//     holds it for a bounded time;
//   - a Bounded listener also has read and write deadlines per request,
//     counted from the moment its headers are in (not from the
//     connection's accept: Caddy dials connections ahead and keeps them in
//     its pool, and net/http counts a connection's first request from its
//     accept); a handler whose answer may legitimately last longer (a
//     WebSocket, a download, an upload, an event stream) calls Unbound
//     first, which clears both for that request only (the next request on
//     the connection gets them again); net/http clears them too when it
//     hands a connection over (Hijack: a WebSocket). Nothing else lifts
//     them: a terminal is never cut by a deadline and a slow client never
//     holds a bounded route;
//   - every answer carries Baseline's headers before the handler runs; a
//     handler adds its own Content-Security-Policy.
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Limits are a listener's timeouts; zero Read and Write mean none.
type Limits struct {
	ReadHeader time.Duration // a connection's first request line and headers, from its accept
	Read       time.Duration // the request's body, from its headers
	Write      time.Duration // the answer, from the request's headers
	Idle       time.Duration // a kept-alive connection between requests
}

// Bounded are the limits of a listener whose answers are short: pages,
// forms, the auth service's checks, webhook deliveries. Every listener is
// a unix socket only Caddy, root or the daemons reach; the header and idle
// timeouts are longer than Caddy's keep-alive for upstream connections
// (2 min), so that Caddy, not the daemon, closes a connection it holds
// unused: a daemon that closed it first made Caddy's next POST on it fail
// with a broken pipe (502), as the VM tier saw under load.
var Bounded = Limits{ReadHeader: 3 * time.Minute, Read: 15 * time.Second, Write: 30 * time.Second, Idle: 3 * time.Minute}

// MaxHeaderBytes bounds a request's headers on every listener.
const MaxHeaderBytes = 64 << 10

// Listener is one socket and what answers on it.
type Listener struct {
	Name    string // its LISTEN_FDNAMES name, for errors and logs
	L       net.Listener
	Handler http.Handler
	Limits  Limits
	// ConnContext, if set, adds to each connection's context (the peer's
	// credentials, for example).
	ConnContext func(context.Context, net.Conn) context.Context
	// EndWithServe makes Serve's context every request's parent, so that
	// long answers (WebSockets, streams) end when serving ends instead of
	// holding the shutdown to its limit; otherwise requests in flight
	// finish.
	EndWithServe bool
}

// Baseline sets the headers every answer of the runtime's daemons carries:
// no sniffing, no framing, no caching, no referrer.
func Baseline(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
}

// Plain writes a short text answer (never anything a client sent) under
// a policy that lets the browser load nothing.
func Plain(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	h.Del("Content-Length")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

// Handler is h behind Baseline: what every listener's server runs (tests
// that call a daemon's handler directly wrap it the same way).
func Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Baseline(w.Header())
		h.ServeHTTP(w, r)
	})
}

// Unbound clears the read and write deadlines of the request being
// answered on w: for a WebSocket (before the upgrade), a download, an
// upload or an event stream. The connection's next request is bounded
// again.
func Unbound(w http.ResponseWriter) error {
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Time{}); err != nil {
		return fmt.Errorf("clear the read deadline: %w", err)
	}
	if err := rc.SetWriteDeadline(time.Time{}); err != nil {
		return fmt.Errorf("clear the write deadline: %w", err)
	}
	return nil
}

// Server returns the http.Server of l: its limits (the request's read and
// write deadlines set as its handler starts), the baseline headers before
// l.Handler, errorLog for what net/http reports, and, with l.EndWithServe,
// base as every request's parent context.
func Server(base context.Context, l Listener, errorLog *log.Logger) *http.Server {
	h, lim := Handler(l.Handler), l.Limits
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			now := time.Now()
			rc := http.NewResponseController(w)
			if lim.Read > 0 {
				rc.SetReadDeadline(now.Add(lim.Read))
			}
			if lim.Write > 0 {
				rc.SetWriteDeadline(now.Add(lim.Write))
			}
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: lim.ReadHeader,
		IdleTimeout:       lim.Idle,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          errorLog,
		ConnContext:       l.ConnContext,
	}
	if l.EndWithServe {
		srv.BaseContext = func(net.Listener) context.Context { return base }
	}
	return srv
}

// Serve answers on every listener until ctx ends or one of them fails,
// then shuts all down, waiting at most shutdown for the requests in
// flight. It returns the first listener's failure, else nil.
func Serve(ctx context.Context, shutdown time.Duration, errorLog *log.Logger, ls ...Listener) error {
	servers := make([]*http.Server, len(ls))
	errc := make(chan error, len(ls))
	for i, l := range ls {
		servers[i] = Server(ctx, l, errorLog)
		go func() {
			if err := servers[i].Serve(l.L); !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("listener %q: %w", l.Name, err)
			}
		}()
	}
	var first error
	select {
	case <-ctx.Done():
	case first = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdown)
	defer cancel()
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); srv.Shutdown(sctx) }()
	}
	wg.Wait()
	return first
}

// OwnStream reports whether r may open an event stream: a stream ends the
// oldest of its kind beyond a bound, so a page of another origin that
// fires requests at it (an <img>, a no-cors fetch) with the person's
// cookies must not open one (docs/web-contract.md, "Event streams"). A
// browser that sends Sec-Fetch-Site (which no page can set) must say
// same-origin; a client without it (an older browser, a program) must ask
// for text/event-stream, as EventSource does and an <img> does not.
func OwnStream(r *http.Request) bool {
	if site := r.Header.Values("Sec-Fetch-Site"); len(site) > 0 {
		return len(site) == 1 && site[0] == "same-origin"
	}
	for _, a := range r.Header.Values("Accept") {
		for _, part := range strings.Split(a, ",") {
			if mt, _, _ := strings.Cut(strings.TrimSpace(part), ";"); strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
				return true
			}
		}
	}
	return false
}
