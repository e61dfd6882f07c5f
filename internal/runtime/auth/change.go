package auth

import (
	"crypto/rand"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agent-box/agent-box/internal/runtime/clientaddr"
	"github.com/agent-box/agent-box/internal/runtime/loginlimit"
	"github.com/agent-box/agent-box/internal/runtime/pwhash"
)

// MinNewPassword is the shortest password /auth/password accepts (the
// operator's hash-password accepts any).
const MinNewPassword = 8

// hashOf is the hash a login's password is checked against: the one it
// was changed to on the box origin while the configured hash it replaced
// is still configured, else the configured one.
func (s *Server) hashOf(login string) (pwhash.Hash, bool) {
	h, ok := s.cfg.hashes[login]
	if !ok {
		return pwhash.Hash{}, false
	}
	if text, ok := s.store.changedPassword(login, fingerprint(h)); ok {
		if ch, err := pwhash.ParseHash(text); err == nil {
			return ch, true
		}
	}
	return h, true
}

// passwordPage is GET /auth/password on the box origin: the form, for a
// live box session; else the login, then back here.
func (s *Server) passwordPage(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(r, "", s.clock.Now())
	if !ok {
		redirect(w, http.StatusFound, authPage("login")+"?"+url.Values{"next": {authPage("password")}}.Encode())
		return
	}
	s.render(w, http.StatusOK, "password", pageData{Title: "Change the password", Login: sess.Login})
}

// changePassword is POST /auth/password (old, new, repeat) on the box
// origin. The old password is checked like a login (same limits, backoff
// and failed-login line); the new one is stored hashed with the sha256 of
// the configured hash it replaces, and every other session of the login
// ends (this box session and its user origins stay).
func (s *Server) changePassword(w http.ResponseWriter, r *http.Request) {
	now := s.clock.Now()
	sess, ok := s.session(r, "", now)
	if !ok {
		redirect(w, http.StatusSeeOther, authPage("login")+"?"+url.Values{"next": {authPage("password")}}.Encode())
		return
	}
	old, pw, repeat := r.PostFormValue("old"), r.PostFormValue("new"), r.PostFormValue("repeat")
	form := pageData{Title: "Change the password", Login: sess.Login}
	fail := func(code int, msg string) {
		form.Message = msg
		s.render(w, code, "password", form)
	}
	switch {
	case pw != repeat:
		fail(http.StatusBadRequest, "The new password and its repetition differ.")
		return
	case utf8.RuneCountInString(pw) < MinNewPassword:
		fail(http.StatusBadRequest, "The new password needs at least "+strconv.Itoa(MinNewPassword)+" characters.")
		return
	case len(pw) > pwhash.MaxLen || len(old) > pwhash.MaxLen:
		fail(http.StatusBadRequest, "A password is longer than "+strconv.Itoa(pwhash.MaxLen)+" bytes.")
		return
	}
	switch res := s.attempt(r, sess.Login, old); {
	case res.gone:
		return
	case res.wait > 0:
		secs := retryAfter(w, res.wait)
		fail(http.StatusTooManyRequests, "Too many attempts. Try again in "+secs+" s.")
		return
	case res.busy:
		secs := retryAfter(w, busyRetry)
		fail(http.StatusServiceUnavailable, "The box is busy checking other logins. Try again in "+secs+" s.")
		return
	case !res.good:
		fail(http.StatusUnauthorized, "The current password is wrong.")
		return
	}
	if err := s.queue.Acquire(r.Context(), false); err != nil {
		if errors.Is(err, loginlimit.ErrBusy) {
			retryAfter(w, busyRetry)
			fail(http.StatusServiceUnavailable, "The box is busy checking logins; the password is unchanged. Try again in a few seconds.")
		}
		return // else the client is gone
	}
	salt := make([]byte, pwhash.SaltLen)
	rand.Read(salt)
	nh := pwhash.Hash{Iterations: pwhash.MinIterations, Salt: salt, Key: s.derive(pw, salt, pwhash.MinIterations, nil)}
	s.queue.Release(false)
	now = s.clock.Now()
	n := s.store.setPassword(sess.Login, nh, fingerprint(s.cfg.hashes[sess.Login]), sess.ID)
	if err := s.persistLogged(now); err != nil {
		fail(http.StatusInternalServerError, "The new password could not be stored; the old one stays in use after a restart.")
		return
	}
	s.log.Printf("changed the password of login %s; ended %d other sessions", sess.Login, n)
	form.Message = ""
	s.render(w, http.StatusOK, "changed", form)
}

// attemptResult is how one password check ended: refused before hashing
// by the limits (wait) or the hashing queue (busy), the client gone, or
// checked (good).
type attemptResult struct {
	good, gone, busy bool
	wait             time.Duration
}

// attempt checks password for login as a login does: the limits of the
// client and of (login, client), for a configured login and any other name
// alike; one hash (the dummy for an unknown login) through the hashing
// queue; and, for every attempt that fails or is refused, the one
// failed-login line fail2ban reads.
func (s *Server) attempt(r *http.Request, login, password string) attemptResult {
	cl := clientaddr.FromHeader(r.Header)
	h, known := s.hashOf(login)
	if !known {
		h = s.dummy
	}
	name := logName(login) // the pair's login: a login name or "-"
	ad := s.limits.Admit(cl.Key, name, s.clock.Now())
	if !ad.OK {
		s.log.Line(failedLoginLine(login, cl.Log))
		return attemptResult{wait: ad.Wait}
	}
	if err := s.queue.Acquire(r.Context(), ad.Suspect); err != nil {
		busy := errors.Is(err, loginlimit.ErrBusy)
		s.limits.Cancel(cl.Key, name, busy, s.clock.Now())
		if !busy {
			return attemptResult{gone: true}
		}
		s.log.Line(failedLoginLine(login, cl.Log))
		return attemptResult{busy: true}
	}
	var pause func()
	if ad.Suspect {
		pause = s.queue.Yield // a suspect's hash waits while others hash
	}
	good := h.Check(s.derive, password, pause) && known
	s.queue.Release(ad.Suspect)
	s.limits.Done(cl.Key, name, good, s.clock.Now())
	if !good {
		s.log.Line(failedLoginLine(login, cl.Log))
		return attemptResult{}
	}
	return attemptResult{good: true}
}

// busyRetry is the Retry-After of an attempt the hashing queue refused.
const busyRetry = 5 * time.Second

// retryAfter sets Retry-After for wait (whole seconds, at least 1) and
// returns it as text.
func retryAfter(w http.ResponseWriter, wait time.Duration) string {
	secs := strconv.Itoa(max(1, int((wait+time.Second-1)/time.Second)))
	w.Header().Set("Retry-After", secs)
	return secs
}
