package auth

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// Identity headers of a verified request; Caddy's forward_auth copies them
// to the request it passes on (copy_headers), after removing a client's.
var (
	userHeader    = contract.Headers.User
	sessionHeader = contract.Headers.Session
)

// Verify is the handler of the verify listener: GET /verify?user=U for
// Caddy's forward_auth on U's origin, /verify?user=U&app=A on the origin
// of U's app A (docs/web-contract.md, "Listener verify").
func (s *Server) Verify() http.Handler { return http.HandlerFunc(s.verify) }

func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != contract.Routes.Verify.Path {
		http.NotFound(w, r)
		return
	}
	if !allow(w, r, http.MethodGet) {
		return
	}
	// 1. a configured user (or app of it), asked for on its own origin
	q := r.URL.Query()
	us, as := q["user"], q["app"]
	o, ok := origin{}, len(us) == 1 && len(as) <= 1 && len(q) == 1+len(as)
	if ok {
		o.User = us[0]
		if len(as) == 1 {
			o.App = as[0]
		}
		ok = s.cfg.isUser(o.User) && (o.App == "" || s.cfg.isApp(o.User, o.App)) && strings.ToLower(r.Host) == s.cfg.originHost(o)
	}
	if !ok {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	// 2. a cross-origin request (a WebSocket handshake above all) is refused
	if origins := r.Header.Values("Origin"); len(origins) > 0 && (len(origins) != 1 || !s.sameOrigin(r, origins[0], o)) {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	// 3. a live child session of this origin
	now := s.clock.Now()
	if sess, ok := s.session(r, o.key(), now); ok {
		w.Header().Set(userHeader, o.User)
		w.Header().Set(sessionHeader, sess.ID)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	// 4. a browser navigation goes to the login (an app's through its
	// origin's own /auth/login, which binds it to this browser), anything
	// else is refused
	if r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("X-Forwarded-Method") == http.MethodGet {
		next := localPath(r.Header.Get("X-Forwarded-Uri"))
		if o.App != "" {
			redirect(w, http.StatusFound, s.cfg.originURL(o)+authPage("login")+"?"+url.Values{"next": {next}}.Encode())
			return
		}
		redirect(w, http.StatusFound, s.loginURL(o, "", next))
		return
	}
	http.Error(w, "unauthorized", http.StatusUnauthorized)
}

// sameOrigin reports whether origin is o's. "null" counts only with
// Sec-Fetch-Site: same-origin: a browser sends Origin: null for a form
// POST from a page under Referrer-Policy: no-referrer (every page here),
// and Sec-Fetch-Site, which no page script can set, still says where the
// form was. A WebSocket always carries its page's real origin.
func (s *Server) sameOrigin(r *http.Request, from string, o origin) bool {
	if from == s.cfg.originURL(o) {
		return true
	}
	site := r.Header.Values("Sec-Fetch-Site")
	return from == "null" && len(site) == 1 && site[0] == "same-origin"
}
