package web

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/journal"
)

// statusTimeout bounds one question to the status socket.
const statusTimeout = 10 * time.Second

// verdict is the status socket's answer about one session.
type verdict int

const (
	alive   verdict = iota // 204: the session lives
	ended                  // 404: it has ended (logout, expiry, revoke)
	unknown                // no answer, or one we do not understand
)

// statusClient asks the auth service's status socket whether a session is
// alive: POST /alive with session=<id>.
type statusClient struct {
	c *http.Client
}

func newStatusClient(socket string) *statusClient {
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns:    1,
		IdleConnTimeout: 2 * DefaultAliveInterval,
	}
	return &statusClient{c: &http.Client{Transport: tr, Timeout: statusTimeout}}
}

// ask returns the verdict on session id and, for unknown, why.
func (sc *statusClient) ask(ctx context.Context, id string) (verdict, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://status/alive",
		strings.NewReader("session="+url.QueryEscape(id)))
	if err != nil {
		return unknown, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := sc.c.Do(req)
	if err != nil {
		return unknown, err
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 4<<10))
	res.Body.Close()
	switch res.StatusCode {
	case http.StatusNoContent:
		return alive, nil
	case http.StatusNotFound:
		return ended, nil
	case http.StatusForbidden:
		// the auth service does not count this uid as a web user any more:
		// none of its sessions can be alive
		return ended, fmt.Errorf("the status socket does not know this user (403)")
	}
	return unknown, fmt.Errorf("the status socket answered %s", res.Status)
}

// tracker holds the open WebSockets by box session and closes those
// whose session the status socket says has ended.
type tracker struct {
	log    *journal.Logger
	status *statusClient

	mu   sync.Mutex
	open map[string]map[*wsEntry]struct{} // session id → its WebSockets
	down bool                             // the status socket failed; logged once

	rounds atomic.Int64 // rounds done, for tests
}

type wsEntry struct {
	name  string // the terminal's session name (for the log)
	close context.CancelFunc
}

func newTracker(log *journal.Logger, status *statusClient) *tracker {
	return &tracker{log: log, status: status, open: map[string]map[*wsEntry]struct{}{}}
}

// add registers a WebSocket of session id; closing it is cancelling the
// request's context, which makes httputil.ReverseProxy close the backend
// and then the client connection. The returned func unregisters it.
func (t *tracker) add(id, name string, cancel context.CancelFunc) func() {
	e := &wsEntry{name: name, close: cancel}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open[id] == nil {
		t.open[id] = map[*wsEntry]struct{}{}
	}
	t.open[id][e] = struct{}{}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.open[id], e)
		if len(t.open[id]) == 0 {
			delete(t.open, id)
		}
	}
}

// run checks every interval, until ctx ends; then every WebSocket is
// closed (their contexts derive from the server's, which ends too).
func (t *tracker) run(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t.round(ctx)
	}
}

// round asks once per session with open WebSockets. An ended session's
// WebSockets are closed. A status socket that does not answer leaves them
// open (the auth service restarting must not cut every terminal) and is
// logged once per outage.
func (t *tracker) round(ctx context.Context) {
	defer t.rounds.Add(1)
	t.mu.Lock()
	ids := make([]string, 0, len(t.open))
	for id := range t.open {
		ids = append(ids, id)
	}
	t.mu.Unlock()
	var failed error
	for _, id := range ids {
		v, err := t.status.ask(ctx, id)
		if ctx.Err() != nil {
			return
		}
		switch v {
		case unknown:
			if failed == nil {
				failed = err
			}
		case ended:
			if err != nil {
				t.log.Printf("%v", err)
			}
			t.closeSession(id)
		}
	}
	if len(ids) == 0 {
		return
	}
	t.mu.Lock()
	was := t.down
	t.down = failed != nil
	t.mu.Unlock()
	switch {
	case failed != nil && !was:
		t.log.Printf("status socket: %v; open terminals stay open until it answers", failed)
	case failed == nil && was:
		t.log.Printf("status socket answers again")
	}
}

func (t *tracker) closeSession(id string) {
	t.mu.Lock()
	var names []string
	for e := range t.open[id] {
		e.close()
		names = append(names, e.name)
	}
	delete(t.open, id)
	t.mu.Unlock()
	if len(names) > 0 {
		t.log.Printf("box session ended: closed the terminal of %s", strings.Join(names, ", "))
	}
}
