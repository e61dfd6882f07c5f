// Package notify carries notifications out: the feed from the auth service and the notify service that POSTs them.
//
// It carries notifications out (docs/web-contract.md,
// "Notifications"): the auth service sends each new inbox entry of a login
// that has a notify URL as one datagram to the notify feed socket; the
// notify service (agent-box notify serve, the only part of the web surface
// with outbound network) POSTs it as JSON to that login's URL, retrying
// with backoff from a bounded queue per login.
//
// An event holds names the contract checks and what the auth service
// made of them, never text from a terminal; the one text of an agent's is
// a permission request's tool and input, cleaned plain text
// (approval.Clean), so that a person can decide from the notification.
package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/approval"
	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// Event is one notification: a session of User entered State (with
// Reason) at Time; Link opens it (its terminal on the user's origin).
// Login, on the feed only, is whose URL it goes to.
type Event struct {
	Login   string `json:"login,omitempty"`
	User    string `json:"user"`
	Session string `json:"session"`
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"`
	Link    string `json:"link"`
	Time    string `json:"time"`
	// Request: a permission request's tool and input (the agent's text,
	// approval.Clean: plain, at most approvals.notifyTextBytes); Actions: its
	// action URLs, one per decision, each deciding once (docs/web-contract.md,
	// "Approvals").
	Request string   `json:"request,omitempty"`
	Actions []Action `json:"actions,omitempty"`
}

// Action is one button of a notification: an HTTP POST to URL takes
// Decision.
type Action struct {
	Decision string `json:"decision"`
	Label    string `json:"label"`
	URL      string `json:"url"`
}

// Feed is e as the auth service sends it: its JSON, Login included.
func (e Event) Feed() []byte { return plainJSON(e) }

// Payload is the body POSTed to the login's URL: e without Login.
func (e Event) Payload() []byte {
	e.Login = ""
	return plainJSON(e)
}

// plainJSON is e's JSON without HTML escapes: an agent's '<' stays one
// byte, so a request's text cannot swell an event past the datagram.
func plainJSON(e Event) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(e)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// NtfyActions is ntfy's Actions header of e's actions ("" for none): one
// HTTP POST button each, which clears the notification once it worked
// (ParseFeed keeps ',', ';' and quotes out of labels and URLs).
func (e Event) NtfyActions() string {
	var parts []string
	for _, a := range e.Actions {
		parts = append(parts, "http, "+a.Label+", "+a.URL+", method=POST, clear=true")
	}
	return strings.Join(parts, "; ")
}

// Title is a one-line summary (ntfy shows it as the title).
func (e Event) Title() string {
	return e.User + ": " + attention.Status{State: attention.State(e.State), Reason: e.Reason}.String()
}

// ParseFeed reads one datagram of the feed. Anything that is not an event
// of the contract's names (an unknown or missing field, a name outside its
// pattern, a state or reason the contract lacks, a link that is not an
// https URL, a time that is not RFC 3339) is an error.
func ParseFeed(data []byte) (Event, error) {
	lim := contract.Attention.Notify
	if len(data) > lim.MaxEventBytes {
		return Event{}, fmt.Errorf("%d bytes, more than %d", len(data), lim.MaxEventBytes)
	}
	var e Event
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&e); err != nil {
		return Event{}, fmt.Errorf("not an event: %w", err)
	}
	if d.More() {
		return Event{}, errors.New("not an event: more after it")
	}
	switch {
	case !contract.Names.Login.Match(e.Login):
		return Event{}, errors.New("no login name")
	case !contract.Names.WebUser.Match(e.User):
		return Event{}, errors.New("no user name")
	case !contract.Names.Session.Match(e.Session):
		return Event{}, errors.New("no session name")
	case !attention.Known(attention.State(e.State)):
		return Event{}, errors.New("no state of the contract")
	case e.Reason != "" && !attention.KnownReason(e.Reason):
		return Event{}, errors.New("no reason of the contract")
	}
	if u, err := url.Parse(e.Link); err != nil || u.Scheme != "https" || u.Host == "" || strings.ContainsAny(e.Link, " \t\r\n") {
		return Event{}, errors.New("the link is not an https URL")
	}
	if _, err := time.Parse(time.RFC3339, e.Time); err != nil {
		return Event{}, errors.New("the time is not RFC 3339")
	}
	if max := contract.Approvals.NotifyTextBytes; len(e.Request) > max || approval.Clean(e.Request, max) != e.Request {
		return Event{}, errors.New("the request is not clean text within its bound")
	}
	if len(e.Actions) > 0 && e.Request == "" {
		return Event{}, errors.New("actions without a request")
	}
	seen := map[string]bool{}
	for _, a := range e.Actions {
		u, err := url.Parse(a.URL)
		switch {
		case !approval.IsDecision(a.Decision) || seen[a.Decision]:
			return Event{}, errors.New("an action of no decision, or one twice")
		case a.Label == "" || len(a.Label) > 32 || strings.ContainsAny(a.Label, ",;\"\\\r\n") || approval.Clean(a.Label, 32) != a.Label:
			return Event{}, errors.New("an action's label is not a short plain text")
		case err != nil || u.Scheme != "https" || u.Host == "" || strings.ContainsAny(a.URL, " \t\r\n,;\""):
			return Event{}, errors.New("an action's URL is not an https URL")
		}
		seen[a.Decision] = true
	}
	return e, nil
}
