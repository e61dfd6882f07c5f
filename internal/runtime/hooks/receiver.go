package hooks

import (
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

	"github.com/agent-box/agent-box/internal/runtime/clientaddr"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/httpserve"
	"github.com/agent-box/agent-box/internal/runtime/journal"
)

// The webhook receiver: the one unauthenticated route, on its own listener
// ("hook"). Caddy sends it POST https://D/U/hook/NAME from the box origin;
// nothing on this listener is reached through forward_auth, so nothing on
// it trusts a header but the signature.

const (
	// bodyTimeout bounds reading a body (GitHub gives up after 10 s).
	bodyTimeout = 10 * time.Second
	// slotWait bounds the wait for a reader (readersTotal) and, once a
	// body is in, for one of the Concurrency delivery slots.
	slotWait     = 2 * time.Second
	hdrSignature = "X-Hub-Signature-256"
)

// Bodies are read before a delivery slot is taken, so a client that
// dribbles a body holds no slot: it holds a reader, of which a client
// (clientaddr: an address, an IPv6 /64, all of loopback) has at most
// readersPerClient at once and all clients readersTotal, and the bytes
// read so far, of which all readers hold at most readBudget (or twice
// the largest hook's body cap, if more).
const (
	readersPerClient = 32
	readersTotal     = 256
	readBudget       = 64 << 20
	readChunk        = 32 << 10
)

// Receiver serves the hook listener.
type Receiver struct {
	prefix  string // "/U/hook/"
	hooks   map[string]*receiving
	slots   chan struct{} // deliveries being verified and stored
	readers *readGate
	wait    time.Duration // slotWait
	timeout time.Duration // bodyTimeout
	maxBody int64         // what an unknown hook reads
	dummy   []byte        // its key
	log     *journal.Logger
	wake    func(h *Hook, id string, path string)
}

// receiving is a hook and its store.
type receiving struct {
	hook  *Hook
	store *Store
}

// NewReceiver opens the store of every hook under dir (dir itself is
// created by the supervisor; its parent is read-only in the unit).
func NewReceiver(user string, c Config, dir string, log *journal.Logger, wake func(*Hook, string, string)) (*Receiver, error) {
	r := &Receiver{prefix: strings.TrimSuffix(contract.For(contract.Routes.Hooks.Path, user), "*"), hooks: map[string]*receiving{},
		slots: make(chan struct{}, c.Concurrency), wait: slotWait, timeout: bodyTimeout,
		readers: newReadGate(readersPerClient, readersTotal, max(readBudget, 2*c.MaxBody())),
		maxBody: c.MaxBody(), log: log, wake: wake}
	r.dummy = make([]byte, 32)
	if _, err := rand.Read(r.dummy); err != nil {
		return nil, err
	}
	for _, name := range c.Names() {
		h := c.Hooks[name]
		st, err := Open(filepath.Join(dir, name), name, h.Quota, h.Retention, nil)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.hooks[name] = &receiving{hook: h, store: st}
	}
	return r, nil
}

// Close closes every hook's store.
func (r *Receiver) Close() {
	for _, e := range r.hooks {
		e.store.Close()
	}
}

func answer(w http.ResponseWriter, code int, msg string) {
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	httpserve.Plain(w, code, msg)
}

// ServeHTTP answers 202 {"id":…,"duplicate":…} once the delivery is on
// disk; 401 for a bad signature; 404 for an unknown hook, after the same
// work as a known one (the body read up to the cap and put through
// HMAC-SHA256); 405 for a method but POST; 413 for a body over the cap;
// 400 for a body not in within bodyTimeout; 503 when the client has
// too many bodies being read (or all clients together, or their bytes),
// when no delivery slot frees within slotWait, when the hook's quota
// is full or when the delivery could not be stored.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		answer(w, http.StatusMethodNotAllowed, "method not allowed: a webhook is a POST")
		return
	}
	name, known := "", false
	if rest, ok := strings.CutPrefix(req.URL.Path, r.prefix); ok && req.URL.RawPath == "" && ValidName(rest) {
		name = rest
		_, known = r.hooks[name]
	}
	limit, key := r.maxBody, r.dummy
	var e *receiving
	if known {
		e = r.hooks[name]
		limit, key = e.hook.MaxBody, e.hook.Secret
	}
	if req.ContentLength > limit {
		answer(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body too large: at most %d bytes", limit))
		return
	}

	// 1. the body, before any delivery slot
	client := clientaddr.FromHeader(req.Header).Key
	if !r.readers.enter(req.Context(), client, r.wait) {
		r.log.Refuse("hook-busy", "POST %s: too many bodies being read (client %s)", escape.Quote(req.URL.Path, 128), client)
		answer(w, http.StatusServiceUnavailable, "busy: try again later")
		return
	}
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(r.timeout))
	mac := hmac.New(sha256.New, key)
	body, n, err := r.readers.read(mac, req.Body, limit)
	r.readers.leave(client)
	defer r.readers.unreserve(int64(cap(body)))
	switch {
	case errors.Is(err, errReadBudget):
		r.log.Refuse("hook-busy", "POST %s: the bodies being read hold every byte allowed", escape.Quote(req.URL.Path, 128))
		answer(w, http.StatusServiceUnavailable, "busy: try again later")
		return
	case n > limit:
		answer(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body too large: at most %d bytes", limit))
		return
	case err != nil:
		if errors.Is(err, os.ErrDeadlineExceeded) {
			r.log.Refuse("hook-slow", "POST %s: the body was not in within %s (client %s)", escape.Quote(req.URL.Path, 128), r.timeout, client)
		}
		answer(w, http.StatusBadRequest, "the request body could not be read")
		return
	}
	good := signatureMatches(req.Header.Values(hdrSignature), mac.Sum(nil))
	if !known {
		r.log.Refuse("hook-unknown", "POST %s", escape.Quote(req.URL.Path, 128))
		answer(w, http.StatusNotFound, "not found")
		return
	}
	if !good {
		r.log.Refuse("hook-signature", "webhook %s: bad or missing %s", name, hdrSignature)
		answer(w, http.StatusUnauthorized, "bad signature: "+hdrSignature+" must be sha256=<HMAC-SHA256 of the body with the hook's secret>")
		return
	}

	// 2. a signed delivery: a slot to store it
	t := time.NewTimer(r.wait)
	select {
	case r.slots <- struct{}{}:
		t.Stop()
		defer func() { <-r.slots }()
	case <-t.C:
		r.log.Refuse("hook-busy", "webhook %s: %d deliveries being stored", name, cap(r.slots))
		answer(w, http.StatusServiceUnavailable, "busy: try again later")
		return
	case <-req.Context().Done():
		t.Stop()
		return
	}
	id, dup, err := e.store.Put(body, keptHeaders(req.Header))
	if err != nil {
		if errors.Is(err, ErrFull) {
			r.log.Printf("webhook %s: refused a delivery of %d bytes: the hook's storage is full (%d bytes used)", name, n, e.store.Used())
			answer(w, http.StatusServiceUnavailable, "the hook's storage is full: nothing was stored")
			return
		}
		r.log.Printf("webhook %s: a delivery could not be stored: %v", name, err)
		answer(w, http.StatusServiceUnavailable, "the delivery could not be stored: nothing was stored")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	json.NewEncoder(w).Encode(struct {
		ID        string `json:"id"`
		Duplicate bool   `json:"duplicate"`
	}{id, dup})
	if dup {
		r.log.Printf("webhook %s: a repeated body answered with the stored delivery %s", name, id)
		return
	}
	r.log.Printf("webhook %s: stored delivery %s (%d bytes)", name, id, n)
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
// own, and within the bounds of MaxDocOverhead.
func keptHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		lk := strings.ToLower(k)
		switch {
		case len(k) > MaxHeaderName:
			continue
		case lk == "content-type" || lk == "user-agent":
		case !strings.HasPrefix(lk, "x-"):
			continue
		case strings.HasPrefix(lk, "x-hub-signature"), strings.HasPrefix(lk, "x-forwarded-"),
			strings.HasPrefix(lk, "x-agent-box-"), lk == "x-real-ip":
			continue
		}
		if len(out) == MaxKeptHeaders {
			break
		}
		val := strings.Join(v, ", ")
		if len(val) > MaxHeaderValue {
			val = val[:MaxHeaderValue]
		}
		out[k] = val
	}
	return out
}
