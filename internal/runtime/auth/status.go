package auth

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

const bodyLimit = 4 << 10 // a status or control request body

// Status is the handler of the status listener, whose every client's uid
// (SO_PEERCRED) must be a configured user U: POST /alive from U's web
// daemon (the session must be a live child session of U's origin); PUT
// of the contract's attention report path from U's supervisor (U's
// attention states); POST of approvals.path from U's supervisor (a
// permission request of one of its sessions, answered when a person
// decides); GET of the reply path from U's supervisor (the persons'
// replies to U's sessions).
func (s *Server) Status() http.Handler { return http.HandlerFunc(s.status) }

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	report := contract.Attention.Report.Path
	if r.URL.Path != "/alive" && r.URL.Path != report && r.URL.Path != contract.Approvals.Path && r.URL.Path != contract.Approvals.Reply.Path {
		http.NotFound(w, r)
		return
	}
	method := http.MethodPost
	switch r.URL.Path {
	case report:
		method = http.MethodPut
	case contract.Approvals.Reply.Path:
		method = http.MethodGet
	}
	if !allow(w, r, method) {
		return
	}
	name, ok := s.peerUser(r)
	if !ok {
		http.Error(w, "forbidden: not an agent user with the web surface", http.StatusForbidden)
		return
	}
	if r.URL.Path == report {
		s.attentionPut(w, r, name)
		return
	}
	if r.URL.Path == contract.Approvals.Path {
		s.approvalPost(w, r, name)
		return
	}
	if r.URL.Path == contract.Approvals.Reply.Path {
		s.repliesGet(w, r, name)
		return
	}
	s.alive(w, r, name)
}

// peerUser is the configured user whose uid connected.
func (s *Server) peerUser(r *http.Request) (string, bool) {
	uid := peerUID(r.Context())
	if uid < 0 {
		return "", false
	}
	name, err := s.userName(uid)
	if err != nil || !s.cfg.isUser(name) {
		return "", false
	}
	return name, true
}

func (s *Server) alive(w http.ResponseWriter, r *http.Request, name string) {
	q, ok := formBody(w, r)
	if !ok {
		return
	}
	id := q.Get("session")
	now := s.clock.Now()
	sess, alive := s.store.alive(id, now)
	if !validID(id) || !alive || sess.Origin != name || !s.cfg.mayOpen(sess.Login, name) {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	if s.store.touch(id, now) {
		s.persistLogged(now)
	}
	w.WriteHeader(http.StatusNoContent)
}

// Control is the handler of the control listener: POST /revoke from root.
func (s *Server) Control() http.Handler { return http.HandlerFunc(s.control) }

func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/revoke" {
		http.NotFound(w, r)
		return
	}
	if !allow(w, r, http.MethodPost) {
		return
	}
	if peerUID(r.Context()) != 0 {
		http.Error(w, "forbidden: root only", http.StatusForbidden)
		return
	}
	q, ok := formBody(w, r)
	if !ok {
		return
	}
	login := q.Get("login")
	if !loginName.Match(login) {
		http.Error(w, fmt.Sprintf("%q is not a login name", login), http.StatusBadRequest)
		return
	}
	n := s.store.endLogin(login)
	s.log.Printf("revoked %d sessions of login %s", n, login)
	if err := s.persistLogged(s.clock.Now()); err != nil {
		http.Error(w, fmt.Sprintf("ended %d sessions, but writing the session table failed: %v", n, err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, strconv.Itoa(n)+"\n")
}

// formBody reads a small urlencoded body.
func formBody(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	data, err := io.ReadAll(io.LimitReader(r.Body, bodyLimit+1))
	if err != nil || len(data) > bodyLimit {
		http.Error(w, "bad body", http.StatusBadRequest)
		return nil, false
	}
	q, err := url.ParseQuery(string(data))
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return nil, false
	}
	return q, true
}
