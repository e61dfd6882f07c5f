package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/approval"
	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/clientaddr"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/httpserve"
	"github.com/agent-box/agent-box/internal/runtime/notify"
	"github.com/agent-box/agent-box/internal/runtime/pending"
)

// Approvals (docs/web-contract.md, "Approvals"): an agent's hook asks on
// the status listener and waits; a person answers on the box origin (the
// inbox's forms) or through a notification's action URL.

// approvalPost is the status listener's POST of approvals.path from
// user's uid: the request (approval.Request, JSON) is registered, or
// found again by its id, and the answer is the decision (200, JSON) once
// a person takes it, or "none" at the request's deadline. A hook whose
// connection closes (it went away, or the supervisor that relays it
// restarts) has the reattach grace to ask again, then its request ends; a
// shutdown leaves it for the restarted service (the connection is cut,
// and the hook asks again). 400 for a
// body that is not a request, 409 for an id of another user or content,
// 410 for an ended one, 429 beyond the user's pending requests.
func (s *Server) approvalPost(w http.ResponseWriter, r *http.Request, user string) {
	data, err := io.ReadAll(io.LimitReader(r.Body, int64(contract.Approvals.MaxBodyBytes)+1))
	if err != nil || len(data) > contract.Approvals.MaxBodyBytes {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	var req approval.Request
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "not a request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := req.Check(); err != nil {
		http.Error(w, "not a request: "+err.Error(), http.StatusBadRequest)
		return
	}
	var actions []string
	for _, l := range s.notifyLogins {
		if s.cfg.Logins[l].Actions && s.cfg.mayOpen(l, user) {
			actions = append(actions, l)
		}
	}
	now := s.clock.Now()
	asked, err := s.pending.Ask(user, req, now, s.cfg.ApprovalWait, s.cfg.ActionLifetime, actions)
	switch {
	case errors.Is(err, pending.ErrFull), errors.Is(err, pending.ErrBusy):
		http.Error(w, err.Error(), http.StatusTooManyRequests)
		return
	case errors.Is(err, pending.ErrSpent):
		http.Error(w, err.Error(), http.StatusGone)
		return
	case errors.Is(err, pending.ErrNotYours), errors.Is(err, pending.ErrChanged):
		http.Error(w, err.Error(), http.StatusConflict)
		return
	case err != nil:
		s.log.Printf("%v", err) // written in memory; the next change writes again
	}
	if asked.Fresh {
		s.log.Printf("%s: session %s's agent asks to use %s (request %s)", user, req.Session, escape.Quote(req.Tool, 64), req.ID)
		s.notifyRequest(user, req, now, asked.Secrets)
	}
	// the answer may come long after the listener's deadlines
	if err := httpserve.Unbound(w); err != nil {
		s.log.Printf("%s: request %s: %v (the wait may be cut: its hook asks again)", user, req.ID, err)
	}
	timer := time.NewTimer(asked.Deadline.Sub(now))
	defer timer.Stop()
	var a approval.Answer
	select {
	case <-asked.Done:
		a = asked.Answer()
	case <-timer.C:
		a = approval.Answer{Decision: approval.None}
		s.log.Printf("%s: request %s: no decision within %s; the agent's own prompt takes over", user, req.ID, s.cfg.ApprovalWait)
	case <-r.Context().Done():
		s.pending.Leave(req.ID, false, s.clock.Now())
		s.log.Printf("%s: request %s: its hook's connection closed (it has %s to ask again)", user, req.ID, contract.Approvals.ReattachGrace)
		return
	case <-s.stopping:
		// no answer: the hook sees the connection cut and asks the
		// restarted service, which has the request
		panic(http.ErrAbortHandler)
	}
	body, _ := json.Marshal(a)
	w.Header().Set("Content-Type", "application/json")
	_, err = w.Write(append(body, '\n'))
	if err == nil {
		err = http.NewResponseController(w).Flush()
	}
	// delivered only when written: else the hook asks again and gets it
	if err := s.pending.Leave(req.ID, err == nil, s.clock.Now()); err != nil {
		s.log.Printf("%v", err)
	}
}

// requestView is one waiting request in the inbox.
type requestView struct {
	User string
	pending.Request
}

// Key is the request's key for the page's script (a new one is a new
// notification).
func (v requestView) Key() string { return "request " + v.ID }

// SinceUTC and SinceISO are the request's time, as an entry's.
func (v requestView) SinceUTC() string { return v.Created.UTC().Format("15:04 UTC") }
func (v requestView) SinceISO() string { return v.Created.UTC().Format(time.RFC3339) }

// Agent is how the page names the agent.
func (v requestView) Agent() string {
	switch v.Request.Agent {
	case "claude":
		return "Claude Code"
	case "codex":
		return "Codex"
	}
	return v.Request.Agent
}

// Shown is the request's input as the page shows it: long runs of blanks
// (which could push the rest of a command out of sight) said in words.
func (v requestView) Shown() string { return showBlanks(v.Input) }

var (
	blankRun = regexp.MustCompile(fmt.Sprintf(`[ \t]{%d,}`, contract.Approvals.BlankRun))
	lineRun  = regexp.MustCompile(`\n{3,}`)
)

func showBlanks(s string) string {
	s = blankRun.ReplaceAllStringFunc(s, func(m string) string { return fmt.Sprintf(" [%d blanks] ", len(m)) })
	return lineRun.ReplaceAllStringFunc(s, func(m string) string { return fmt.Sprintf("\n[%d empty lines]\n", len(m)-1) })
}

// requests is login's waiting requests at now: of the users the login
// may open, and no other.
func (s *Server) requests(login string, now time.Time) []requestView {
	var out []requestView
	for _, u := range s.cfg.Logins[login].Users {
		for _, r := range s.pending.Waiting(u, now) {
			out = append(out, requestView{User: u, Request: r})
		}
	}
	return out
}

// decide is POST authPage(decidePage) of the box origin: a logged-in
// person's decision on a request of a user the login may open (the
// form's user, request and decision); then back to the box page.
func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	now := s.clock.Now()
	sess, ok := s.session(r, "", now)
	if !ok {
		s.message(w, http.StatusForbidden, "Not logged in", "Log in to answer an agent.")
		return
	}
	if err := r.ParseForm(); err != nil {
		s.message(w, http.StatusBadRequest, "Bad request", "The form could not be read.")
		return
	}
	user, id, d := r.PostForm.Get("user"), r.PostForm.Get("request"), r.PostForm.Get("decision")
	if !s.cfg.mayOpen(sess.Login, user) {
		s.message(w, http.StatusForbidden, "Not allowed", "This login may not answer that user's agents.")
		return
	}
	if err := s.pending.Decide(user, id, d, sess.Login, now); err != nil {
		s.log.Printf("login %s: a decision %s on %s's request %s refused: %v", sess.Login, escape.Quote(d, 16), user, escape.Quote(id, 40), err)
		s.message(w, http.StatusConflict, "Not answered", refusal(err))
		return
	}
	s.log.Printf("login %s: %s on %s's request %s", sess.Login, d, user, id)
	redirect(w, http.StatusSeeOther, "/")
}

// act is POST of a notification's action URL (approvals.actPrefix and
// the token's secret) on the box origin: no login, the URL is the
// capability; it decides its one request, once, before it expires, while
// its login may still open the user and still has actions. The answer is
// plain text (the notifying app shows it).
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	now := s.clock.Now()
	secret := strings.TrimPrefix(r.URL.Path, contract.Approvals.ActPrefix)
	if !pending.ValidSecret(secret) {
		httpserve.Plain(w, http.StatusNotFound, "no such action")
		return
	}
	a, err := s.pending.ByToken(secret, now)
	switch {
	case errors.Is(err, pending.ErrExpired):
		s.log.Printf("an expired action URL was used (from %s)", clientaddr.FromHeader(r.Header).Log)
		httpserve.Plain(w, http.StatusGone, "this action has expired")
		return
	case err != nil:
		s.log.Printf("an action URL of no waiting request was used (from %s)", clientaddr.FromHeader(r.Header).Log)
		httpserve.Plain(w, http.StatusGone, "this request was already answered, or no longer waits")
		return
	}
	l, ok := s.cfg.Logins[a.Login]
	if !ok || !l.Notify || !l.Actions || !s.cfg.mayOpen(a.Login, a.User) {
		httpserve.Plain(w, http.StatusForbidden, "this login may no longer answer that user's agents")
		return
	}
	if err := s.pending.Decide(a.User, a.ID, a.Decision, a.Login+" (notification)", now); err != nil {
		s.log.Printf("login %s: the action URL's %s on %s's request %s refused: %v", a.Login, a.Decision, a.User, a.ID, err)
		httpserve.Plain(w, http.StatusGone, refusal(err))
		return
	}
	s.log.Printf("login %s: %s on %s's request %s, through a notification's action (from %s)", a.Login, a.Decision, a.User, a.ID, clientaddr.FromHeader(r.Header).Log)
	httpserve.Plain(w, http.StatusOK, decidedText[a.Decision])
}

var decidedText = map[string]string{
	approval.Allow:        "allowed",
	approval.AllowSession: "allowed for the session",
	approval.Deny:         "denied",
}

// refusal is a refused decision's text for a person.
func refusal(err error) string {
	if errors.Is(err, pending.ErrAnswered) {
		return "This request was already answered."
	}
	if errors.Is(err, pending.ErrNoRequest) {
		return "This request no longer waits: its agent was answered in its terminal, or its time ran out."
	}
	return "The decision was refused: " + err.Error()
}

// actionLabels are the notification's button labels per decision.
var actionLabels = map[string]string{
	approval.Allow:        "Allow",
	approval.AllowSession: "Allow for session",
	approval.Deny:         "Deny",
}

// notifyRequest sends, for every login with notifications that may open
// user, the request's notification: its session entered needs-you
// (permission), with the request's tool and input (cut short) and, for a
// login with actions, an action URL per decision the request offers, but
// only Deny when the text was cut (a person cannot allow what the
// notification did not show).
func (s *Server) notifyRequest(user string, req approval.Request, now time.Time, secrets map[string]map[string]string) {
	for _, l := range s.notifyLogins {
		if !s.cfg.mayOpen(l, user) {
			continue
		}
		text := req.Tool + ": " + req.Input
		e := notify.Event{
			Login: l, User: user, Session: req.Session, State: string(attention.NeedsYou), Reason: "permission",
			Link:    s.cfg.originURL(origin{User: user}) + contract.TerminalLink(req.Session),
			Time:    now.UTC().Format(time.RFC3339),
			Request: approval.Clean(text, contract.Approvals.NotifyTextBytes),
		}
		// what the notification cannot show whole, it cannot allow: Deny
		// only (the box page shows it whole)
		whole := !req.Cut && e.Request == text
		for _, d := range approval.Decisions {
			if secret := secrets[l][d]; secret != "" && (d == approval.Deny || whole) {
				e.Actions = append(e.Actions, notify.Action{Decision: d, Label: actionLabels[d], URL: "https://" + s.cfg.Domain + contract.Approvals.ActPrefix + secret})
			}
		}
		s.feed.Send(e.Feed())
	}
}
