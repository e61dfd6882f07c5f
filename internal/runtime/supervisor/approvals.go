package supervisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/approval"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/registry"
)

// The supervisor relays its sessions' permission requests
// (docs/web-contract.md, "Approvals"): an agent's hook cannot reach the
// auth service's status socket (its group is the supervisor's unit's, not
// the sessions unit's), so it POSTs the request to the supervisor's
// approval socket in the runtime directory (0700: the user's processes
// only), and the supervisor sends it on and the answer back. A request
// names a session of the registry, or it is refused; without an auth
// service the answer is 404 at once (nobody can decide, the agent's own
// prompt stays). The relay holds no state: a hook whose connection breaks
// (the supervisor restarts) asks again, and the service knows the
// request by its id.

// maxRelays bounds the requests relayed at once (the contract's; a
// variable for tests).
var maxRelays = contract.Approvals.MaxRelays

// serveApprovals answers on l until done is closed.
func (s *sup) serveApprovals(l net.Listener, done <-chan struct{}) {
	tr := statusTransport(s.cfg.AuthStatus)
	tr.DisableKeepAlives = true // each relay waits long, and alone
	client := &http.Client{Transport: tr}
	// at most maxRelays at once: a process of the user cannot hold the
	// auth service's connections without bound
	slots := make(chan struct{}, maxRelays)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			s.relayApproval(w, r, client)
		default:
			http.Error(w, "too many permission requests at once", http.StatusTooManyRequests)
		}
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-done
		srv.Close()
	}()
	srv.Serve(l)
}

func (s *sup) relayApproval(w http.ResponseWriter, r *http.Request, client *http.Client) {
	if r.URL.Path != contract.Approvals.Path || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, int64(contract.Approvals.MaxBodyBytes)+1))
	if err != nil || len(data) > contract.Approvals.MaxBodyBytes {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	var req approval.Request
	if err := json.Unmarshal(data, &req); err != nil || req.Check() != nil {
		http.Error(w, "not a permission request", http.StatusBadRequest)
		return
	}
	reg, err := registry.Load(s.cfg.Env.Registry())
	if err != nil {
		http.Error(w, "the registry cannot be read", http.StatusServiceUnavailable)
		return
	}
	if _, ok := reg.Find(req.Session); !ok {
		http.Error(w, "no such session", http.StatusForbidden)
		return
	}
	if s.cfg.AuthStatus == "" {
		http.Error(w, "no auth service", http.StatusNotFound)
		return
	}
	up, err := http.NewRequestWithContext(r.Context(), http.MethodPost, "http://agent-box-auth"+contract.Approvals.Path, bytes.NewReader(data))
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	up.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(up)
	switch {
	case err != nil && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOENT)):
		if _, serr := os.Stat(s.cfg.AuthStatus); errors.Is(serr, fs.ErrNotExist) {
			http.Error(w, "no auth service", http.StatusNotFound)
			return
		}
		fallthrough
	case err != nil:
		if r.Context().Err() == nil {
			s.logf("session %s: permission request %s: the auth service: %s", quote(req.Session), req.ID, errText(err))
		}
		http.Error(w, "the auth service did not answer", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode == http.StatusOK {
		var a approval.Answer
		if json.Unmarshal(body, &a) == nil && a.Check() == nil {
			s.logf("session %s: permission request %s (%s): %s%s", quote(req.Session), req.ID, quote(req.Tool), a.Decision, by(a.By))
		}
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

func by(who string) string {
	if who == "" {
		return ""
	}
	return " by " + quote(who)
}
