package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/journal"
	"github.com/agent-box/agent-box/internal/runtime/observe"
	"github.com/agent-box/agent-box/internal/runtime/registry"
)

// The supervisor tells the auth service its user's attention states (PUT
// of contract.Attention.Report.Path on the auth status socket, the
// report format of package attention): after every change, at most one
// request per coalesce window, and every resendEvery without one (a
// restarted auth service knows them again). Sending never holds up the
// event loop: the loop hands the newest report to the reporter's goroutine,
// which drops an older one it has not sent. Without an auth service (no
// web surface) a report fails at connect (no process, no wait) and the
// next change or resend tries again.

// coalesce is how long the reporter waits for a newer report before it
// sends one; reportTimeout bounds one request.
const (
	coalesce      = 50 * time.Millisecond
	reportTimeout = 5 * time.Second
	reportBackoff = 30 * time.Second
)

type reporter struct {
	socket string
	latest chan []byte // capacity 1: the newest unsent report
	log    *journal.Logger
	client *http.Client
	// after replaces time.After in tests
	after func(time.Duration) <-chan time.Time
	every time.Duration
}

// statusTransport dials the auth service's status socket: the reports,
// the permission requests relayed (approvals.go) and the reply poll
// (replies.go) each keep one.
func statusTransport(socket string) *http.Transport {
	var d net.Dialer
	return &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", socket)
	}, MaxIdleConns: 1}
}

func newReporter(socket string, log *journal.Logger) *reporter {
	tr := statusTransport(socket)
	return &reporter{
		socket: socket, latest: make(chan []byte, 1), log: log,
		client: &http.Client{Transport: tr, Timeout: reportTimeout},
		after:  time.After, every: contract.Duration(contract.Attention.Report.ResendEvery),
	}
}

// push hands report to the goroutine, replacing one it has not sent (the
// event loop is the only caller).
func (r *reporter) push(report []byte) {
	select {
	case <-r.latest:
	default:
	}
	r.latest <- report
}

// run sends reports until done is closed.
func (r *reporter) run(done <-chan struct{}) {
	var cur []byte
	have, pending := false, false
	lastErr := ""
	fails := 0
	resend := r.after(r.every)
	for {
		if !pending {
			select {
			case cur = <-r.latest:
				have = true
			case <-resend:
				resend = r.after(r.every)
				if !have {
					continue
				}
			case <-done:
				return
			}
			// a burst of changes is one report
			select {
			case cur = <-r.latest:
			case <-r.after(coalesce):
			case <-done:
				return
			}
		}
		err := r.send(cur)
		pending = false
		switch {
		case err == nil:
			if lastErr != "" {
				r.log.Printf("the auth service takes the attention states again")
			}
			lastErr, fails = "", 0
			continue
		case errors.Is(err, syscall.ENOENT):
			// no auth service (the host has no web surface): nothing to say
		case err.Error() != lastErr:
			lastErr = err.Error()
			r.log.Printf("telling the auth service the attention states: %s (retrying)", errText(err))
		}
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			continue // no auth service: the next change or resend tries again
		}
		// busy (429) or failing: the newest report again after a wait
		wait := min(time.Second<<min(fails, 5), reportBackoff)
		fails++
		select {
		case cur = <-r.latest:
		case <-r.after(wait):
		case <-done:
			return
		}
		pending = true
	}
}

// send makes one request.
func (r *reporter) send(report []byte) error {
	req, err := http.NewRequest(http.MethodPut, "http://status"+contract.Attention.Report.Path, bytes.NewReader(report))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("%s answered %s", r.socket, resp.Status)
	}
	return nil
}

// noteAttention keeps name's state for the report (st nil: none) and
// hands the new report to the reporter.
func (s *sup) noteAttention(name string, st *attention.Status) {
	if s.report == nil {
		return
	}
	if st == nil {
		delete(s.attn, name)
	} else {
		s.attn[name] = *st
	}
	es := make([]attention.Entry, 0, len(s.attn))
	for n, a := range s.attn {
		es = append(es, attention.Entry{Session: n, State: a.State, Reason: a.Reason, Until: a.Until, Try: a.Try})
	}
	s.report.push(attention.EncodeReport(es))
}

// loadExited adds to the report the sessions of reg an exit 0 stopped
// (exited: the supervisor keeps no other state of stopped sessions), and
// drops the ones reg no longer lists.
func (s *sup) loadExited(reg *registry.Registry) {
	if s.report == nil {
		return
	}
	for name := range s.attn {
		if _, ok := reg.Find(name); !ok && s.sessions[name] == nil {
			s.noteAttention(name, nil)
		}
	}
	for _, e := range reg.Sessions {
		if _, known := s.attn[e.Name]; known || !e.Stopped {
			continue
		}
		if obs, err := observe.Load(s.cfg.Env.ObservationsDir(), e.Name); err == nil && obs.Attention != nil && obs.Attention.State == attention.Exited {
			s.noteAttention(e.Name, obs.Attention)
		}
	}
}
