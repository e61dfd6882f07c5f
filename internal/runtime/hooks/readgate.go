package hooks

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// errReadBudget is a body that would take the readers past their byte
// budget.
var errReadBudget = errors.New("the webhook bodies being read hold every byte allowed")

// readGate bounds the webhook bodies being read: per client, in all, and
// the bytes they hold (reserved as they arrive, so a dribbling body holds
// only what it sent).
type readGate struct {
	mu        sync.Mutex
	perClient map[string]int
	total     int
	bytes     int64
	changed   chan struct{} // closed (and replaced) when a reader leaves

	maxPerClient, maxTotal int
	maxBytes               int64
}

func newReadGate(perClient, total int, bytes int64) *readGate {
	return &readGate{perClient: map[string]int{}, changed: make(chan struct{}),
		maxPerClient: perClient, maxTotal: total, maxBytes: bytes}
}

// enter takes a reader for client, waiting up to wait for one to free;
// false when none did (or ctx ended).
func (g *readGate) enter(ctx context.Context, client string, wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		g.mu.Lock()
		if g.perClient[client] < g.maxPerClient && g.total < g.maxTotal {
			g.perClient[client]++
			g.total++
			g.mu.Unlock()
			return true
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// leave gives client's reader back.
func (g *readGate) leave(client string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.perClient[client]--; g.perClient[client] <= 0 {
		delete(g.perClient, client)
	}
	g.total--
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *readGate) reserve(n int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.bytes+n > g.maxBytes {
		return false
	}
	g.bytes += n
	return true
}

func (g *readGate) unreserve(n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.bytes -= n
}

// read reads body up to limit+1 bytes into a buffer whose capacity is
// reserved from the budget as it grows (the caller unreserves cap(buf)
// when done with it, also after an error), writing every byte to w as
// well. n is the number of bytes read (limit+1: over the cap).
func (g *readGate) read(w io.Writer, body io.Reader, limit int64) (buf []byte, n int64, err error) {
	for {
		if int64(len(buf)) > limit {
			return buf, int64(len(buf)), nil
		}
		if len(buf) == cap(buf) {
			// double (at least a chunk, at most to the cap): a dribbling
			// body holds one chunk, a large one is copied a few times
			grow := min(max(int64(readChunk), int64(cap(buf))), limit+1-int64(len(buf)))
			if !g.reserve(grow) {
				return buf, int64(len(buf)), errReadBudget
			}
			nb := make([]byte, len(buf), cap(buf)+int(grow))
			copy(nb, buf)
			buf = nb
		}
		m, rerr := body.Read(buf[len(buf):cap(buf)])
		if m > 0 {
			w.Write(buf[len(buf) : len(buf)+m])
			buf = buf[:len(buf)+m]
		}
		if rerr == io.EOF {
			return buf, int64(len(buf)), nil
		}
		if rerr != nil {
			return buf, int64(len(buf)), rerr
		}
	}
}

// readers is how many bodies are being read (tests).
func (g *readGate) readers() int { g.mu.Lock(); defer g.mu.Unlock(); return g.total }

// reserved is the bytes the bodies being read hold (tests).
func (g *readGate) reserved() int64 { g.mu.Lock(); defer g.mu.Unlock(); return g.bytes }
