package auth

import (
	"net/http"
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
// Caddy's forward_auth (docs/web-contract.md, "Listener verify").
func (s *Server) Verify() http.Handler { return http.HandlerFunc(s.verify) }

func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != contract.Routes.Verify.Path {
		http.NotFound(w, r)
		return
	}
	if !allow(w, r, http.MethodGet) {
		return
	}
	// 1. a configured user, asked for on its own origin
	us := r.URL.Query()["user"]
	if len(us) != 1 || !s.cfg.isUser(us[0]) || strings.ToLower(r.Host) != us[0]+"."+s.cfg.Domain {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	u := us[0]
	// 2. a cross-origin request (a WebSocket handshake above all) is refused
	if origins := r.Header.Values("Origin"); len(origins) > 0 && (len(origins) != 1 || !s.sameOrigin(r, origins[0], u)) {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	// 3. a live child session of this origin
	now := s.clock.Now()
	if sess, ok := s.session(r, u, now); ok {
		w.Header().Set(userHeader, u)
		w.Header().Set(sessionHeader, sess.ID)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	// 4. a browser navigation goes to the login, anything else is refused
	if r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("X-Forwarded-Method") == http.MethodGet {
		redirect(w, http.StatusFound, s.loginURL(u, localPath(r.Header.Get("X-Forwarded-Uri"))))
		return
	}
	http.Error(w, "unauthorized", http.StatusUnauthorized)
}

// sameOrigin reports whether origin is U's. "null" counts only with
// Sec-Fetch-Site: same-origin: a browser sends Origin: null for a form
// POST from a page under Referrer-Policy: no-referrer (every page here),
// and Sec-Fetch-Site, which no page script can set, still says where the
// form was. A WebSocket always carries its page's real origin.
func (s *Server) sameOrigin(r *http.Request, origin, u string) bool {
	if origin == s.cfg.userOrigin(u) {
		return true
	}
	site := r.Header.Values("Sec-Fetch-Site")
	return origin == "null" && len(site) == 1 && site[0] == "same-origin"
}
