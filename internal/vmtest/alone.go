package vmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"
)

// A scenario marks the checks that compare timings (a login under a flood
// against one unloaded) with "# alone: begin" and "# alone: end" on its TAP
// port, and waits after the first for the harness's answer on the same
// port (lib.sh's alone_begin). Alone gives that guest the host to itself
// meanwhile without keeping it from sharing the host the rest of its boot:
// it pauses every other running guest (QMP "stop", which stops its virtual
// clock too, so no guest sees the pause: its timeouts and measured times
// stay true), holds back guests that would start, answers, and resumes them
// all (QMP "cont") at the end of the section or when its guest stops.
type Alone struct {
	mu     sync.Mutex
	free   *sync.Cond // signalled when a section ends
	owner  *Running   // the guest in a section, or nil
	guests map[*Running]bool
}

// Running is one guest that Alone knows of.
type Running struct {
	Name   string
	qmp    string        // QEMU's QMP socket
	exited chan struct{} // closed when QEMU has exited
	paused time.Duration // time spent stopped for another's section
	since  time.Time     // when the current pause began
}

// Paused is how long the guest was stopped for other guests' sections.
func (r *Running) Paused() time.Duration { return r.paused }

// NewAlone is an Alone with no guest.
func NewAlone() *Alone {
	a := &Alone{guests: map[*Running]bool{}}
	a.free = sync.NewCond(&a.mu)
	return a
}

// join registers a guest about to start, once no section runs.
func (a *Alone) join(name, qmp string) *Running {
	r := &Running{Name: name, qmp: qmp, exited: make(chan struct{})}
	if a == nil {
		return r
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.owner != nil {
		a.free.Wait()
	}
	a.guests[r] = true
	return r
}

// leave forgets a guest whose QEMU exited (ending its section, if any).
func (a *Alone) leave(r *Running) {
	close(r.exited)
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.guests, r)
	if !r.since.IsZero() { // stopped by a section when its QEMU ended
		r.paused += time.Since(r.since)
	}
	if a.owner == r {
		a.resume(r)
	}
}

// begin pauses every guest but r, after any other guest's section.
func (a *Alone) begin(ctx context.Context, r *Running) error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.owner != nil && a.owner != r {
		a.free.Wait()
	}
	if a.owner == r {
		return nil
	}
	a.owner = r
	var errs []string
	for g := range a.guests {
		if g == r {
			continue
		}
		if err := qmpCommand(ctx, g, "stop"); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", g.Name, err))
			continue
		}
		g.since = time.Now()
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("pausing the other guests for %s's section: %s", r.Name, strings.Join(errs, "; "))
	}
	return nil
}

// end resumes the guests r's section paused.
func (a *Alone) end(r *Running) error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.owner != r {
		return fmt.Errorf("%s ended a section it had not begun", r.Name)
	}
	return a.resume(r)
}

// resume continues every paused guest and frees the host; a.mu is held.
func (a *Alone) resume(r *Running) error {
	var errs []string
	for g := range a.guests {
		if g == r || g.since.IsZero() {
			continue
		}
		if err := qmpCommand(context.Background(), g, "cont"); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", g.Name, err))
		}
		g.paused += time.Since(g.since)
		g.since = time.Time{}
	}
	a.owner = nil
	a.free.Broadcast()
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("resuming the guests after %s's section: %s", r.Name, strings.Join(errs, "; "))
	}
	return nil
}

// qmpCommand runs one argument-less QMP command on g's QEMU. A QEMU that
// has just started may not listen yet; one that has exited needs nothing.
func qmpCommand(ctx context.Context, g *Running, command string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var c net.Conn
	for {
		var err error
		var d net.Dialer
		c, err = d.DialContext(ctx, "unix", g.qmp)
		if err == nil {
			break
		}
		select {
		case <-g.exited:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("QMP socket %s: %w", g.qmp, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	dec := json.NewDecoder(c)
	// The greeting, then capabilities negotiation, then the command; events
	// ({"event": ...}) may come between and are skipped.
	var greeting map[string]json.RawMessage
	if err := dec.Decode(&greeting); err != nil {
		return fmt.Errorf("QMP greeting: %w", err)
	}
	for _, cmd := range []string{"qmp_capabilities", command} {
		if _, err := fmt.Fprintf(c, "{\"execute\": %q}\n", cmd); err != nil {
			return fmt.Errorf("QMP %s: %w", cmd, err)
		}
		for {
			var reply struct {
				Return json.RawMessage `json:"return"`
				Error  *struct {
					Class string `json:"class"`
					Desc  string `json:"desc"`
				} `json:"error"`
			}
			if err := dec.Decode(&reply); err != nil {
				return fmt.Errorf("QMP %s: %w", cmd, err)
			}
			if reply.Error != nil {
				return fmt.Errorf("QMP %s: %s: %s", cmd, reply.Error.Class, reply.Error.Desc)
			}
			if reply.Return != nil {
				break
			}
		}
	}
	return nil
}
