package auth

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/webui"
)

// The box's cookies (contract: Caddy passes on only these). bindCookie
// binds a hand-over code to the browser that completes it on the origin
// it opens: that origin sets it itself (__Host-: no Domain, Path=/,
// Secure, HttpOnly, SameSite=Lax), so no other origin can.
var (
	cookieName = contract.Cookies.Session
	bindPath   = contract.Cookies.HandoverPath
	bindCookie = contract.Cookies.Bind
)

// appBindLifetime is how long an app origin's binding cookie lasts: the
// time to log in on the box origin and come back. A user origin's lasts
// the code's lifetime.
const appBindLifetime = 10 * time.Minute

// authPage is the path of the auth service's page name.
var authPage = contract.AuthPage

const (
	formLimit = 16 << 10 // a form body
	// maxCookies bounds the cookies of one of our names looked at in one
	// request. A browser holds about 180 cookies per site; a script on
	// another origin of the box could add some of our names (nameless
	// cookies whose value looks like one, or other paths), so every one a
	// browser can hold is looked at: a lookup by id, then one hash.
	maxCookies = 256
)

// Pages is the handler of the pages listener: the box origin and /auth/*
// of every user origin and every app origin behind the login, told apart
// by Host.
func (s *Server) Pages() http.Handler {
	cop := http.NewCrossOriginProtection()
	// a notification's action URL is its own capability, POSTed by the
	// notifying app (ntfy's web app: from its origin)
	cop.AddInsecureBypassPattern("POST " + contract.Approvals.ActPrefix)
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, io.LimitReader(r.Body, formLimit))
		s.message(w, http.StatusForbidden, "Refused", "A request from another site was refused.")
	}))
	inner := cop.Handler(http.HandlerFunc(s.pages))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if strings.ToLower(r.Host) == s.cfg.Domain {
			h.Set("Content-Security-Policy", s.boxCSP)
		} else {
			h.Set("Content-Security-Policy", s.userCSP)
		}
		r.Body = http.MaxBytesReader(w, r.Body, formLimit)
		inner.ServeHTTP(w, r)
	})
}

func (s *Server) pages(w http.ResponseWriter, r *http.Request) {
	host := strings.ToLower(r.Host)
	if host == s.cfg.Domain {
		s.boxOrigin(w, r)
		return
	}
	if o, ok := s.cfg.originOf(host); ok {
		s.originPages(w, r, o)
		return
	}
	s.notFound(w)
}

func (s *Server) boxOrigin(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/":
		if allow(w, r, http.MethodGet) {
			s.home(w, r)
		}
	case authPage("login"):
		if r.Method == http.MethodPost {
			s.login(w, r)
		} else if allow(w, r, http.MethodGet, http.MethodPost) {
			s.loginPage(w, r)
		}
	case authPage("open"):
		if allow(w, r, http.MethodPost) {
			s.open(w, r)
		}
	case authPage("bind"):
		if allow(w, r, http.MethodGet) {
			s.bindCode(w, r)
		}
	case authPage("logout"):
		if allow(w, r, http.MethodPost) {
			s.logout(w, r, "")
		}
	case authPage("password"):
		if r.Method == http.MethodPost {
			s.changePassword(w, r)
		} else if allow(w, r, http.MethodGet, http.MethodPost) {
			s.passwordPage(w, r)
		}
	case authPage("style.css"):
		if allow(w, r, http.MethodGet) {
			asset(w, "text/css; charset=utf-8", webui.StyleSheet)
		}
	case authPage("favicon.svg"):
		if allow(w, r, http.MethodGet) {
			asset(w, "image/svg+xml", webui.Favicon)
		}
	case authPage(manifestName):
		if allow(w, r, http.MethodGet) {
			asset(w, "application/manifest+json", string(manifest(s.cfg.Domain)))
		}
	case authPage(contract.Attention.Inbox.Page):
		if allow(w, r, http.MethodGet) {
			s.inboxStream(w, r)
		}
	case authPage(contract.Approvals.DecidePage):
		if allow(w, r, http.MethodPost) {
			s.decide(w, r)
		}
	case authPage(contract.Approvals.Reply.Page):
		if allow(w, r, http.MethodPost) {
			s.replyPost(w, r)
		}
	default:
		if strings.HasPrefix(r.URL.Path, contract.Approvals.ActPrefix) {
			if allow(w, r, http.MethodPost) {
				s.act(w, r)
			}
			return
		}
		s.notFound(w)
	}
}

// originPages is /auth/* of a user's or an app's origin.
func (s *Server) originPages(w http.ResponseWriter, r *http.Request, o origin) {
	switch r.URL.Path {
	case bindPath:
		if r.Method == http.MethodPost {
			s.handover(w, r, o)
		} else if allow(w, r, http.MethodGet, http.MethodPost) {
			s.handoverPage(w, r, o)
		}
	case authPage("login"):
		if !allow(w, r, http.MethodGet) {
			return
		}
		next := localPath(r.URL.Query().Get("next"))
		if o.App == "" {
			redirect(w, http.StatusFound, s.loginURL(o, "", next))
			return
		}
		// An app's origin binds the hand-over to come to this browser
		// itself: the box origin may be another site.
		secret := randomText(32)
		s.setBind(w, secret, int(appBindLifetime/time.Second))
		redirect(w, http.StatusFound, s.loginURL(o, bindHash(secret), next))
	case authPage("logout"):
		if allow(w, r, http.MethodPost) {
			s.logout(w, r, o.key())
		}
	case authPage("style.css"):
		if allow(w, r, http.MethodGet) {
			asset(w, "text/css; charset=utf-8", webui.StyleSheet)
		}
	case authPage("favicon.svg"):
		if allow(w, r, http.MethodGet) {
			asset(w, "image/svg+xml", webui.Favicon)
		}
	default:
		s.notFound(w)
	}
}

// allow answers 405 unless r's method is one of methods (GET admits HEAD)
// and reports whether to go on.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m || m == http.MethodGet && r.Method == http.MethodHead {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// asset answers the product's stylesheet or icon (package webui), on
// every origin.
func asset(w http.ResponseWriter, ctype, body string) {
	w.Header().Set("Content-Type", ctype)
	io.WriteString(w, body)
}

func redirect(w http.ResponseWriter, status int, to string) {
	w.Header().Set("Location", to)
	w.WriteHeader(status)
}

// loginURL is the box origin's login form for origin o (an app's with
// the hash of its binding secret), then next.
func (s *Server) loginURL(o origin, bind, next string) string {
	q := url.Values{"user": {o.User}, "next": {next}}
	if o.App != "" {
		q.Set("app", o.App)
		q.Set("bind", bind)
	}
	return "https://" + s.cfg.Domain + authPage("login") + "?" + q.Encode()
}

// localPath is p if it is a local path (/..., not //..., no scheme, no
// backslash, no control, space or non-ASCII byte), else "/".
func localPath(p string) string {
	if len(p) == 0 || len(p) > 2048 || p[0] != '/' || len(p) > 1 && p[1] == '/' {
		return "/"
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || u.User != nil {
		return "/"
	}
	return p
}

func (s *Server) render(w http.ResponseWriter, status int, name string, d pageData) {
	d.Domain = s.cfg.Domain
	var buf bytes.Buffer
	if err := pages().ExecuteTemplate(&buf, name, d); err != nil {
		s.log.Printf("page %s: %v", name, err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (s *Server) message(w http.ResponseWriter, status int, title, msg string) {
	s.render(w, status, "message", pageData{Title: title, Message: msg})
}

func (s *Server) notFound(w http.ResponseWriter) {
	s.message(w, http.StatusNotFound, "Not found", "There is nothing here.")
}

// session returns the live session named by one of r's cookies for origin
// ("" for the box origin) whose login may still open it, and records the
// request as its activity.
func (s *Server) session(r *http.Request, origin string, now time.Time) (Session, bool) {
	n := 0
	for _, c := range r.Cookies() {
		if c.Name != cookieName {
			continue
		}
		if n++; n > maxCookies {
			break
		}
		sess, ok := s.store.find(c.Value)
		if !ok || sess.Origin != origin || !s.cfg.mayOpenKey(sess.Login, origin) {
			continue
		}
		if _, alive := s.store.alive(sess.ID, now); alive {
			if s.store.touch(sess.ID, now) {
				s.persistLogged(now)
			}
			return sess, true
		}
	}
	return Session{}, false
}

// anySession returns the session a cookie names for origin, alive or not
// (for logout).
func (s *Server) anySession(r *http.Request, origin string) (Session, bool) {
	for _, c := range r.Cookies() {
		if c.Name != cookieName {
			continue
		}
		if sess, ok := s.store.find(c.Value); ok && sess.Origin == origin {
			return sess, true
		}
	}
	return Session{}, false
}

func (s *Server) setCookie(w http.ResponseWriter, sess Session, secret string, now time.Time) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: sess.ID + "." + secret, Path: "/",
		Expires: sess.Expires.UTC(), MaxAge: max(1, int(sess.Expires.Sub(now)/time.Second)),
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode,
	})
}

func clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: "", Path: "/", MaxAge: -1,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode,
	})
}

// home is GET / of the box origin.
func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(r, "", s.clock.Now())
	if !ok {
		s.render(w, http.StatusOK, "login", pageData{Title: "Log in", Next: "/"})
		return
	}
	s.render(w, http.StatusOK, "home", pageData{Title: "agent-box", Home: true, Login: sess.Login, Users: s.cfg.Logins[sess.Login].Users, Inbox: s.inboxData(sess.Login, s.clock.Now())})
}

// target is the origin a box-origin form names (user, and app with the
// hash of its binding secret): ok is false when user names no user, or
// app or bind no app of it behind the login; an app without its bind is
// none (only the app's origin can start its hand-over).
func (s *Server) target(user, app, bind string) (origin, bool) {
	if !s.cfg.isUser(user) {
		return origin{}, false
	}
	if app == "" && bind == "" {
		return origin{User: user}, true
	}
	if !s.cfg.isApp(user, app) || !validBindHash(bind) {
		return origin{}, false
	}
	return origin{User: user, App: app}, true
}

// targetData fills a page's fields for origin o.
func (s *Server) targetData(d pageData, o origin, bind string) pageData {
	d.User, d.App, d.Bind = o.User, o.App, bind
	if o.User != "" {
		d.Target = s.cfg.originHost(o)
	}
	return d
}

// loginPage is GET /auth/login?user=U[&app=A&bind=H]&next=P: the form, or,
// for a live box session, a button that opens U or its app A (GET changes
// nothing, so it cannot hand over by itself).
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	next, bind := localPath(q.Get("next")), q.Get("bind")
	o, ok := s.target(q.Get("user"), q.Get("app"), bind)
	if !ok {
		o, bind = origin{}, ""
	}
	if sess, live := s.session(r, "", s.clock.Now()); live && ok {
		s.render(w, http.StatusOK, "continue", s.targetData(pageData{Title: "agent-box", Login: sess.Login, Next: next, May: s.cfg.mayOpenKey(sess.Login, o.key())}, o, bind))
		return
	}
	s.render(w, http.StatusOK, "login", s.targetData(pageData{Title: "Log in", Next: next}, o, bind))
}

// login is POST /auth/login.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	name, password := r.PostFormValue("login"), r.PostFormValue("password")
	next, bind := localPath(r.PostFormValue("next")), r.PostFormValue("bind")
	o, ok := s.target(r.PostFormValue("user"), r.PostFormValue("app"), bind)
	if !ok {
		o, bind = origin{}, ""
	}
	form := s.targetData(pageData{Title: "Log in", Login: name, Next: next}, o, bind)
	switch res := s.attempt(r, name, password); {
	case res.gone:
		return
	case res.wait > 0:
		secs := retryAfter(w, res.wait)
		form.Message = "Too many attempts. Try again in " + secs + " s."
		s.render(w, http.StatusTooManyRequests, "login", form)
		return
	case res.busy:
		secs := retryAfter(w, busyRetry)
		form.Message = "The box is busy checking other logins. Try again in " + secs + " s."
		s.render(w, http.StatusServiceUnavailable, "login", form)
		return
	case !res.good:
		form.Message = "Wrong login or password."
		s.render(w, http.StatusUnauthorized, "login", form)
		return
	}
	now := s.clock.Now()
	sess, secret := s.store.create(name, nil, "", now, s.cfg.SessionLifetime)
	s.persistLogged(now)
	s.setCookie(w, sess, secret, now)
	if ok && s.cfg.mayOpenKey(name, o.key()) {
		s.handOver(w, sess, o, bind, next, now)
		return
	}
	if r.PostFormValue("user") != "" {
		next = "/" // a user this login may not open, or no such user
	}
	redirect(w, http.StatusSeeOther, next) // with no user, next is the box's own page
}

// open is POST /auth/open (user, [app, bind,] next) on the box origin.
func (s *Server) open(w http.ResponseWriter, r *http.Request) {
	next, bind := localPath(r.PostFormValue("next")), r.PostFormValue("bind")
	o, ok := s.target(r.PostFormValue("user"), r.PostFormValue("app"), bind)
	now := s.clock.Now()
	sess, live := s.session(r, "", now)
	if !live {
		q := url.Values{"user": {""}, "next": {next}}
		if ok {
			q.Set("user", o.User)
			if o.App != "" {
				q.Set("app", o.App)
				q.Set("bind", bind)
			}
		}
		redirect(w, http.StatusSeeOther, authPage("login")+"?"+q.Encode())
		return
	}
	if !ok || !s.cfg.mayOpenKey(sess.Login, o.key()) {
		s.message(w, http.StatusForbidden, "Not allowed", "This login may not open that agent user or app. An app is opened from its own address.")
		return
	}
	s.handOver(w, sess, o, bind, next, now)
}

// handOver answers 303 to o's hand-over page with a fresh one-time code.
// An app's origin set its own binding cookie, whose hash is bind; a code
// for a user's origin is pending: that origin binds it to its browser
// first (handoverPage, then bindCode), so nothing here sets a cookie for
// another origin.
func (s *Server) handOver(w http.ResponseWriter, box Session, o origin, bind, next string, now time.Time) {
	if o.App == "" {
		bind = ""
	}
	c := s.codes.issue(box.ID, o.key(), bind, now)
	if c == "" {
		w.Header().Set("Retry-After", "60")
		s.message(w, http.StatusServiceUnavailable, "Busy", "Too many hand-overs are pending. Try again in a minute.")
		return
	}
	redirect(w, http.StatusSeeOther, s.cfg.originURL(o)+bindPath+"?"+url.Values{"code": {c}, "next": {next}}.Encode())
}

// bindCode is GET /auth/bind?code=C&h=H&next=N on the box origin, the
// second step of a hand-over to a user's origin: the origin set its
// binding cookie (hash H) in this browser; the box binds pending code C
// to it if C was made for this browser's box session, then sends the
// browser back to the origin to take it. A code another login (or
// another browser) asked for is refused here, so a link someone else
// made opens nothing in this browser.
func (s *Server) bindCode(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	c, h, next := q.Get("code"), q.Get("h"), localPath(q.Get("next"))
	now := s.clock.Now()
	sess, live := s.session(r, "", now)
	key, ok := "", false
	if live && len(c) == secretLen && validBindHash(h) {
		key, ok = s.codes.bindTo(c, sess.ID, h, now)
	}
	o, valid := keyOrigin(key)
	if !ok || !valid || o.App != "" {
		s.message(w, http.StatusForbidden, "Link not valid here", "This link was not made in this browser, was used already or has expired. Open the agent user again from the box.")
		return
	}
	redirect(w, http.StatusSeeOther, s.cfg.originURL(o)+bindPath+"?"+url.Values{"code": {c}, "next": {next}}.Encode())
}

// setBind sets (maxAge > 0) or clears (maxAge < 0) this origin's binding
// cookie (a user's or an app's origin): its own, __Host- (no Domain,
// Path=/), so no other origin, a sibling app on the same site included,
// can set one; Caddy passes it only to the auth service's /auth/* and
// removes it before an app.
func (s *Server) setBind(w http.ResponseWriter, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: bindCookie, Value: value, Path: "/", MaxAge: maxAge,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode,
	})
}

// cookieValues are the values of the first maxCookies cookies named name.
func cookieValues(r *http.Request, name string) []string {
	var vs []string
	for _, c := range r.Cookies() {
		if c.Name == name && len(vs) < maxCookies {
			vs = append(vs, c.Value)
		}
	}
	return vs
}

// handoverPage is GET /auth/handover on a user's or an app's origin: a
// form that posts the code back, submitted by the one hashed script (or
// by hand).
func (s *Server) handoverPage(w http.ResponseWriter, r *http.Request, o origin) {
	q := r.URL.Query()
	c := q.Get("code")
	if len(c) != secretLen {
		s.message(w, http.StatusForbidden, "Link not valid", "This link is not valid. Open the agent user again from the box.")
		return
	}
	next := localPath(q.Get("next"))
	if o.App == "" && s.codes.pending(c, o.key(), s.clock.Now()) {
		// A user's origin binds the code to this browser first: its own
		// cookie here, its hash to the box origin, which binds the code
		// only for the box session that asked for it (bindCode).
		secret := randomText(32)
		s.setBind(w, secret, int(codeLifetime/time.Second))
		redirect(w, http.StatusFound, "https://"+s.cfg.Domain+authPage("bind")+"?"+url.Values{"code": {c}, "h": {bindHash(secret)}, "next": {next}}.Encode())
		return
	}
	s.render(w, http.StatusOK, "handover", s.targetData(pageData{Title: "Opening " + s.cfg.originHost(o), Code: c, Next: next}, o, ""))
}

// handover is POST /auth/handover on a user's or an app's origin: the
// code becomes a child session cookie of its box session.
func (s *Server) handover(w http.ResponseWriter, r *http.Request, o origin) {
	c, next := r.PostFormValue("code"), localPath(r.PostFormValue("next"))
	now := s.clock.Now()
	boxID, ok := s.codes.take(c, o.key(), cookieValues(r, bindCookie), now)
	var box Session
	if ok {
		box, ok = s.store.alive(boxID, now)
	}
	if !ok || box.Origin != "" || !s.cfg.mayOpenKey(box.Login, o.key()) {
		s.message(w, http.StatusForbidden, "Link not valid here", "This link was used already, has expired, is not for this origin or was made in another browser. Open the agent user or the app again.")
		return
	}
	child, secret := s.store.create(box.Login, &box, o.key(), now, s.cfg.SessionLifetime)
	s.persistLogged(now)
	s.setCookie(w, child, secret, now)
	s.setBind(w, "", -1)
	redirect(w, http.StatusSeeOther, next)
}

// logout is POST /auth/logout: on the box origin or a user's origin the
// whole box session ends, with every child; on an app's origin only that
// origin's child session (an app's own page can post there).
func (s *Server) logout(w http.ResponseWriter, r *http.Request, origin string) {
	now := s.clock.Now()
	clearCookie(w)
	if sess, ok := s.anySession(r, origin); ok {
		if strings.HasPrefix(origin, appKeyPrefix) {
			// An app's page is same-origin with the app's /auth/logout:
			// it may end the person's session on that app, never the
			// box session and every other origin's.
			s.store.endOne(sess.ID)
		} else {
			s.store.endFamily(sess)
		}
		if err := s.persistLogged(now); err != nil {
			// Ended in memory, but a restart would bring it back: say so.
			s.message(w, http.StatusInternalServerError, "Logout not saved",
				"This session ended, but the box could not record that: after a restart of its login service the session could be valid again. Log out again later, or ask the operator to run agent-box web revoke (the service's log says what failed).")
			return
		}
	}
	if origin == "" {
		redirect(w, http.StatusSeeOther, "/")
		return
	}
	redirect(w, http.StatusSeeOther, "https://"+s.cfg.Domain+"/")
}
