package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/actions"
	"github.com/agent-box/agent-box/internal/runtime/clientaddr"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/hooks"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/tmux"
)

// The webhook receiver: the one unauthenticated route, on its own listener
// ("hook"). Caddy sends it POST https://D/U/hook/NAME from the box origin;
// nothing on this listener is reached through forward_auth, so nothing on
// it trusts a header but the signature.

const (
	// hookBodyTimeout bounds reading a body (GitHub gives up after 10 s).
	hookBodyTimeout = 10 * time.Second
	// hookSlotWait bounds the wait for a reader (hookReaders) and, once a
	// body is in, for one of the Concurrency delivery slots.
	hookSlotWait = 2 * time.Second
	hdrSignature = "X-Hub-Signature-256"
)

// Bodies are read before a delivery slot is taken, so a client that
// dribbles a body holds no slot: it holds a reader, of which a client
// (clientaddr: an address, an IPv6 /64, all of loopback) has at most
// hookReadersPerClient at once and all clients hookReaders, and the bytes
// read so far, of which all readers hold at most hookReadBudget (or twice
// the largest hook's body cap, if more).
const (
	hookReadersPerClient = 32
	hookReaders          = 256
	hookReadBudget       = 64 << 20
	hookReadChunk        = 32 << 10
)

// hookReceiver serves the hook listener.
type hookReceiver struct {
	prefix  string // "/U/hook/"
	hooks   map[string]*hookEntry
	slots   chan struct{} // deliveries being verified and stored
	readers *readGate
	wait    time.Duration // hookSlotWait
	timeout time.Duration // hookBodyTimeout
	maxBody int64         // what an unknown hook reads
	dummy   []byte        // its key
	log     *logger
	wake    func(h *hooks.Hook, id string, path string)
}

type hookEntry struct {
	hook  *hooks.Hook
	store *hooks.Store
}

// newHookReceiver opens the store of every hook under dir (dir itself is
// created by the supervisor; its parent is read-only in the unit).
func newHookReceiver(user string, c hooks.Config, dir string, log *logger, wake func(*hooks.Hook, string, string)) (*hookReceiver, error) {
	r := &hookReceiver{prefix: strings.TrimSuffix(contract.For(contract.Routes.Hooks.Path, user), "*"), hooks: map[string]*hookEntry{},
		slots: make(chan struct{}, c.Concurrency), wait: hookSlotWait, timeout: hookBodyTimeout,
		readers: newReadGate(hookReadersPerClient, hookReaders, max(hookReadBudget, 2*c.MaxBody())),
		maxBody: c.MaxBody(), log: log, wake: wake}
	r.dummy = make([]byte, 32)
	if _, err := rand.Read(r.dummy); err != nil {
		return nil, err
	}
	for _, name := range c.Names() {
		h := c.Hooks[name]
		st, err := hooks.Open(filepath.Join(dir, name), name, h.Quota, h.Retention, nil)
		if err != nil {
			r.close()
			return nil, err
		}
		r.hooks[name] = &hookEntry{hook: h, store: st}
	}
	return r, nil
}

func (r *hookReceiver) close() {
	for _, e := range r.hooks {
		e.store.Close()
	}
}

func hookAnswer(w http.ResponseWriter, code int, msg string) {
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	plain(w, code, msg)
}

// ServeHTTP answers 202 {"id":…,"duplicate":…} once the delivery is on
// disk; 401 for a bad signature; 404 for an unknown hook, after the same
// work as a known one (the body read up to the cap and put through
// HMAC-SHA256); 405 for a method but POST; 413 for a body over the cap;
// 400 for a body not in within hookBodyTimeout; 503 when the client has
// too many bodies being read (or all clients together, or their bytes),
// when no delivery slot frees within hookSlotWait, when the hook's quota
// is full or when the delivery could not be stored.
func (r *hookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		hookAnswer(w, http.StatusMethodNotAllowed, "method not allowed: a webhook is a POST")
		return
	}
	name, known := "", false
	if rest, ok := strings.CutPrefix(req.URL.Path, r.prefix); ok && req.URL.RawPath == "" && hooks.ValidName(rest) {
		name = rest
		_, known = r.hooks[name]
	}
	limit, key := r.maxBody, r.dummy
	var e *hookEntry
	if known {
		e = r.hooks[name]
		limit, key = e.hook.MaxBody, e.hook.Secret
	}
	if req.ContentLength > limit {
		hookAnswer(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body too large: at most %d bytes", limit))
		return
	}

	// 1. the body, before any delivery slot
	client := clientaddr.FromHeader(req.Header).Key
	if !r.readers.enter(req.Context(), client, r.wait) {
		r.log.refuse("hook-busy", "POST %s: too many bodies being read (client %s)", escape.Quote(req.URL.Path, 128), client)
		hookAnswer(w, http.StatusServiceUnavailable, "busy: try again later")
		return
	}
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(r.timeout))
	mac := hmac.New(sha256.New, key)
	body, n, err := r.readers.read(mac, req.Body, limit)
	r.readers.leave(client)
	defer r.readers.unreserve(int64(cap(body)))
	switch {
	case errors.Is(err, errReadBudget):
		r.log.refuse("hook-busy", "POST %s: the bodies being read hold every byte allowed", escape.Quote(req.URL.Path, 128))
		hookAnswer(w, http.StatusServiceUnavailable, "busy: try again later")
		return
	case n > limit:
		hookAnswer(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body too large: at most %d bytes", limit))
		return
	case err != nil:
		if errors.Is(err, os.ErrDeadlineExceeded) {
			r.log.refuse("hook-slow", "POST %s: the body was not in within %s (client %s)", escape.Quote(req.URL.Path, 128), r.timeout, client)
		}
		hookAnswer(w, http.StatusBadRequest, "the request body could not be read")
		return
	}
	good := signatureMatches(req.Header.Values(hdrSignature), mac.Sum(nil))
	if !known {
		r.log.refuse("hook-unknown", "POST %s", escape.Quote(req.URL.Path, 128))
		hookAnswer(w, http.StatusNotFound, "not found")
		return
	}
	if !good {
		r.log.refuse("hook-signature", "webhook %s: bad or missing %s", name, hdrSignature)
		hookAnswer(w, http.StatusUnauthorized, "bad signature: "+hdrSignature+" must be sha256=<HMAC-SHA256 of the body with the hook's secret>")
		return
	}

	// 2. a signed delivery: a slot to store it
	t := time.NewTimer(r.wait)
	select {
	case r.slots <- struct{}{}:
		t.Stop()
		defer func() { <-r.slots }()
	case <-t.C:
		r.log.refuse("hook-busy", "webhook %s: %d deliveries being stored", name, cap(r.slots))
		hookAnswer(w, http.StatusServiceUnavailable, "busy: try again later")
		return
	case <-req.Context().Done():
		t.Stop()
		return
	}
	id, dup, err := e.store.Put(body, keptHeaders(req.Header))
	if err != nil {
		if errors.Is(err, hooks.ErrFull) {
			r.log.printf("webhook %s: refused a delivery of %d bytes: the hook's storage is full (%d bytes used)", name, n, e.store.Used())
			hookAnswer(w, http.StatusServiceUnavailable, "the hook's storage is full: nothing was stored")
			return
		}
		r.log.printf("webhook %s: a delivery could not be stored: %v", name, err)
		hookAnswer(w, http.StatusServiceUnavailable, "the delivery could not be stored: nothing was stored")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	json.NewEncoder(w).Encode(struct {
		ID        string `json:"id"`
		Duplicate bool   `json:"duplicate"`
	}{id, dup})
	if dup {
		r.log.printf("webhook %s: a repeated body answered with the stored delivery %s", name, id)
		return
	}
	r.log.printf("webhook %s: stored delivery %s (%d bytes)", name, id, n)
	if r.wake != nil {
		r.wake(e.hook, id, e.store.Path(id))
	}
}

// signatureMatches compares the one X-Hub-Signature-256 value against
// sum in constant time; anything but exactly one "sha256=<64 hex>" fails.
func signatureMatches(values []string, sum []byte) bool {
	if len(values) != 1 {
		return false
	}
	hexSig, ok := strings.CutPrefix(values[0], "sha256=")
	if !ok || len(hexSig) != 2*sha256.Size {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	return hmac.Equal(got, sum)
}

// keptHeaders are the headers stored with a delivery: Content-Type,
// User-Agent and the sender's X-* event headers (X-GitHub-Event,
// X-GitHub-Delivery, …), but never a signature, a forwarding header or our
// own, and within the bounds of hooks.MaxDocOverhead.
func keptHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		lk := strings.ToLower(k)
		switch {
		case len(k) > hooks.MaxHeaderName:
			continue
		case lk == "content-type" || lk == "user-agent":
		case !strings.HasPrefix(lk, "x-"):
			continue
		case strings.HasPrefix(lk, "x-hub-signature"), strings.HasPrefix(lk, "x-forwarded-"),
			strings.HasPrefix(lk, "x-agent-box-"), lk == "x-real-ip":
			continue
		}
		if len(out) == hooks.MaxKeptHeaders {
			break
		}
		val := strings.Join(v, ", ")
		if len(val) > hooks.MaxHeaderValue {
			val = val[:hooks.MaxHeaderValue]
		}
		out[k] = val
	}
	return out
}

// hookWaker starts a delivery's session if it is stopped and types the
// hook's notify text into it, one delivery at a time, after the answer.
type hookWaker struct {
	q      chan wakeMsg
	start  func(ctx context.Context, session string) (started bool, err error)
	typeIn func(ctx context.Context, session, text string) error
	log    *logger
	settle time.Duration // after a start, before typing
}

type wakeMsg struct {
	hook *hooks.Hook
	id   string
	path string
}

// enqueue never blocks the answer: a full queue drops the wake (the
// delivery is stored; the agent finds it in its folder).
func (k *hookWaker) enqueue(h *hooks.Hook, id, path string) {
	select {
	case k.q <- wakeMsg{h, id, path}:
	default:
		k.log.printf("webhook %s: delivery %s stored; too many wakes queued, session %s not woken for it", h.Name, id, h.Session)
	}
}

func (k *hookWaker) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-k.q:
			k.one(ctx, m)
		}
	}
}

func (k *hookWaker) one(ctx context.Context, m wakeMsg) {
	started, err := k.start(ctx, m.hook.Session)
	if err != nil {
		k.log.printf("webhook %s: delivery %s stored; session %s not started: %v", m.hook.Name, m.id, m.hook.Session, err)
		return
	}
	if started {
		k.log.printf("webhook %s: delivery %s started the stopped session %s", m.hook.Name, m.id, m.hook.Session)
	}
	if m.hook.Notify == "" {
		return
	}
	if started && k.settle > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(k.settle):
		}
	}
	text := notifyText(m.hook.Notify, m.id, m.path)
	if err := k.typeIn(ctx, m.hook.Session, text); err != nil {
		k.log.printf("webhook %s: delivery %s stored; notify not typed into session %s: %v", m.hook.Name, m.id, m.hook.Session, err)
		return
	}
	k.log.printf("webhook %s: delivery %s typed into session %s", m.hook.Name, m.id, m.hook.Session)
}

// notifyText replaces {id} and {file} in the hook's notify text.
func notifyText(notify, id, path string) string {
	return strings.NewReplacer("{id}", id, "{file}", path).Replace(notify)
}

// openHooks opens every hook's folder and sets up the waker.
func (s *Server) openHooks() error {
	if _, err := os.Stat(s.cfg.HooksDir); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("webhooks: %s does not exist yet: %s creates it at start (start it, then this daemon)", s.cfg.HooksDir, contract.For(contract.Units.Supervisor, s.cfg.User))
	} else if err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	settle := s.cfg.WakeSettle
	if settle <= 0 {
		settle = DefaultWakeSettle
	}
	s.waker = &hookWaker{q: make(chan wakeMsg, 256), log: s.log, settle: settle,
		start: s.startStopped, typeIn: s.typeInto}
	var err error
	s.hooks, err = newHookReceiver(s.cfg.User, s.cfg.Hooks, s.cfg.HooksDir, s.log, s.waker.enqueue)
	return err
}

// Hooks is the handler of the hook listener; nil when the user has no
// webhooks.
func (s *Server) Hooks() http.Handler {
	if s.hooks == nil {
		return nil
	}
	return s.hooks
}

// Wake starts and notifies the sessions of deliveries until ctx ends.
func (s *Server) Wake(ctx context.Context) {
	if s.waker != nil {
		s.waker.run(ctx)
	}
}

// startStopped unparks session if the registry has it stopped (the
// supervisor starts it within a second), through the CLI's code path.
func (s *Server) startStopped(ctx context.Context, session string) (bool, error) {
	reg, err := registry.Load(s.cfg.Env.Registry())
	if err != nil {
		return false, err
	}
	e, ok := reg.Find(session)
	if !ok {
		return false, fmt.Errorf("%w: %q", registry.ErrUnknown, session)
	}
	if !e.Stopped {
		return false, nil
	}
	return true, actions.SetStopped(ctx, s.cfg.Env, session, false)
}

// typeWait bounds the wait for the session's pane before typing.
const typeWait = 30 * time.Second

// typeInto types text and Enter into session's pane once it runs.
func (s *Server) typeInto(ctx context.Context, session, text string) error {
	if s.cfg.Tmux == "" {
		return errors.New("no tmux (" + contract.Env.Tmux.Name + " is unset)")
	}
	tm := &tmux.Server{Bin: s.cfg.Tmux, Socket: s.cfg.Env.TmuxSocket(), Env: s.cfg.ProcEnv}
	ctx, cancel := context.WithTimeout(ctx, typeWait)
	defer cancel()
	for !tm.HasSession(ctx, session) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("session %q is not running after %s", session, typeWait)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return tm.SendText(ctx, session, text)
}
