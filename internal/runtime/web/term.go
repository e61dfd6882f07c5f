package web

import (
	"context"
	"errors"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/httpserve"
	"github.com/agent-box/agent-box/internal/runtime/peer"
	"github.com/agent-box/agent-box/internal/runtime/registry"
)

// newProxy is the reverse proxy to ttyd: a transport that dials only the
// ttyd socket (checking its peer), never a proxy from the environment.
func (s *Server) newProxy() *httputil.ReverseProxy {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           s.dialTTYD,
		DisableCompression:    true,
		MaxIdleConns:          4,
		IdleConnTimeout:       60 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
	}
	return &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = s.host
			// ttyd's -O compares Origin with Host: the Origin checked
			// against https://U.D must meet U.D, whatever Host came in.
			pr.Out.Host = s.host
			strip(pr.Out.Header)
		},
		ModifyResponse: func(res *http.Response) error {
			// nothing U's processes send may set a cookie on U's origin,
			// and no script but ttyd's own may run on it
			res.Header.Del("Set-Cookie")
			res.Header.Set("Content-Security-Policy", s.csp)
			return nil
		},
		ErrorHandler: s.proxyError,
	}
}

func (s *Server) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	var pe *peer.Error
	switch {
	case errors.As(err, &pe):
		s.log.Refuse("ttyd-peer", "%s %s: %v", r.Method, escape.Quote(r.URL.Path, 128), err)
	case errors.Is(err, context.Canceled):
		// the client went away, or the session ended (Alive)
	default:
		s.log.Printf("ttyd: %s %s: %v", r.Method, escape.Quote(r.URL.Path, 128), err)
	}
	plain(w, http.StatusBadGateway, "the terminal is not available")
}

// isUpgrade reports a request that asks to switch protocols in any way.
func isUpgrade(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" || headerHasToken(r.Header, "Connection", "upgrade")
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// validSessionID matches a session id of the auth service (the contract).
func validSessionID(id string) bool { return contract.Names.WebSessionID.Match(id) }

// term proxies /term/... to ttyd. The page /term/ and every WebSocket
// carry exactly one arg, a session name the registry holds; ttyd gets
// exactly that arg and nothing else. Every other path (ttyd's token, the
// /term redirect) reaches ttyd with no query at all: ttyd reads arg only on
// a WebSocket, and its page fetches token without one. A WebSocket must
// come from U's origin and name its box session, which is checked every
// AliveInterval.
func (s *Server) term(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.log.Refuse("method", "%s %s", escape.Quote(r.Method, 16), escape.Quote(r.URL.Path, 128))
		w.Header().Set("Allow", "GET, HEAD")
		plain(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	ws := isUpgrade(r)
	session, _ := r.Context().Value(ctxKey{}).(string)
	if ws {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || !headerHasToken(r.Header, "Connection", "upgrade") {
			s.log.Refuse("upgrade", "%s: not a WebSocket handshake (Upgrade %s)", escape.Quote(r.URL.Path, 128), escape.Quote(r.Header.Get("Upgrade"), 32))
			plain(w, http.StatusBadRequest, "bad request")
			return
		}
		if o := r.Header.Values("Origin"); len(o) != 1 || o[0] != s.origin {
			s.log.Refuse("origin", "%s: Origin %s, want %s", escape.Quote(r.URL.Path, 128), escape.Quote(strings.Join(o, ", "), 128), s.origin)
			plain(w, http.StatusForbidden, "forbidden")
			return
		}
		if !validSessionID(session) {
			s.log.Refuse("no-session", "%s: a WebSocket without a valid %s header", escape.Quote(r.URL.Path, 128), hdrSession)
			plain(w, http.StatusForbidden, "forbidden")
			return
		}
	}
	query := ""
	name := ""
	if ws || r.URL.Path == contract.Routes.Terminal.Path+"/" {
		var code int
		var why string
		name, code, why = s.sessionArg(r.URL.RawQuery)
		if code != 0 {
			s.log.Refuse("query", "%s: %s", escape.Quote(r.URL.Path, 128), why)
			plain(w, code, "bad request: "+why)
			return
		}
		query = "arg=" + url.QueryEscape(name)
	}
	out := r.Clone(r.Context())
	out.URL.RawQuery = query
	out.URL.ForceQuery = false
	if !ws {
		s.proxy.ServeHTTP(w, out)
		return
	}
	// a terminal lasts as long as its login session (Alive), never
	// until a deadline: net/http clears them when the proxy hijacks the
	// connection; this covers the handshake with ttyd before that
	if err := httpserve.Unbound(w); err != nil {
		s.log.Printf("terminal %s: %v", name, err)
		plain(w, http.StatusInternalServerError, "the terminal cannot be opened")
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	done := s.alive.add(session, name, cancel)
	defer done()
	s.proxy.ServeHTTP(w, out.WithContext(ctx))
}

// sessionArg returns the one session name of a query, or the status and
// reason of its refusal. The reason quotes only what a name may hold.
func (s *Server) sessionArg(rawQuery string) (string, int, string) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", http.StatusBadRequest, "the query does not parse"
	}
	args := q["arg"]
	if len(args) != 1 {
		return "", http.StatusBadRequest, "want exactly one arg (a session name)"
	}
	name := args[0]
	if !registry.ValidName(name) {
		return "", http.StatusBadRequest, "arg " + escape.Quote(name, 64) + " is not a session name"
	}
	reg, err := registry.Load(s.cfg.Env.Registry())
	if err != nil {
		s.log.Printf("registry: %v", err)
		return "", http.StatusInternalServerError, "the registry cannot be read"
	}
	if _, ok := reg.Find(name); !ok {
		return "", http.StatusBadRequest, "no session " + escape.Quote(name, 64)
	}
	return name, 0, ""
}
