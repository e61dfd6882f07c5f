package web

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/agent-box/agent-box/internal/runtime/journal"
)

// changes wakes the live session lists when a file they are computed from
// changes: one inotify instance watches the user's registry directory, the
// observations and conversations directories and the runtime directory
// (state.json). Nothing runs while nothing changes: a stream waits on
// wait(), which is closed at the next change, a burst of events settle
// after its first (a registry update writes and renames) wakes once.
// A directory that is missing, or removed while watched, is armed again
// at the next rearm (each stream's keep-alive), which then wakes the
// streams once (what happened meanwhile is read then).
type changes struct {
	dirs   []string
	settle time.Duration
	log    *journal.Logger

	mu      sync.Mutex
	ch      chan struct{}    // closed at the next change
	f       *os.File         // nil: inotify could not be set up
	wds     map[int32]string // watch descriptor -> directory
	missing bool             // some directory is not watched
	wakes   int              // wakes so far (tests)
}

// dirMask: files replaced by rename, written, created or removed; and the
// directory's own removal (IN_IGNORED follows it).
const dirMask = syscall.IN_CLOSE_WRITE | syscall.IN_MOVED_TO | syscall.IN_MOVED_FROM |
	syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF

func newChanges(dirs []string, settle time.Duration, log *journal.Logger) *changes {
	c := &changes{dirs: dirs, settle: settle, log: log, ch: make(chan struct{}), wds: map[int32]string{}}
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		log.Printf("session list: inotify: %v; the list updates at each keep-alive only", err)
		return c
	}
	// non-blocking: the runtime poller parks Read, Close interrupts it
	c.f = os.NewFile(uintptr(fd), "inotify")
	c.arm()
	return c
}

// wait returns a channel closed at the next change.
func (c *changes) wait() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ch
}

func (c *changes) wake() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.ch)
	c.ch = make(chan struct{})
	c.wakes++
}

// arm watches every directory not watched yet; it reports whether it
// added one.
func (c *changes) arm() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return false
	}
	watched := map[string]bool{}
	for _, d := range c.wds {
		watched[d] = true
	}
	added := false
	c.missing = false
	for _, d := range c.dirs {
		if watched[d] {
			continue
		}
		wd, err := syscall.InotifyAddWatch(int(c.f.Fd()), d, dirMask|syscall.IN_ONLYDIR)
		if err != nil {
			c.missing = true
			continue
		}
		c.wds[int32(wd)] = d
		added = true
	}
	return added
}

// rearm arms missing directories and wakes the streams when it could;
// without inotify every call wakes them (the list is then as fresh as the
// keep-alives).
func (c *changes) rearm() {
	c.mu.Lock()
	none, missing := c.f == nil, c.missing
	c.mu.Unlock()
	switch {
	case none:
		c.wake()
	case missing && c.arm():
		c.wake()
	}
}

// run reads events until ctx ends, waking the streams settle after the
// first event of a burst.
func (c *changes) run(ctx context.Context) {
	if c.f == nil {
		return
	}
	go func() {
		<-ctx.Done()
		c.f.Close()
	}()
	events := make(chan struct{}, 1)
	go func() {
		defer close(events)
		buf := make([]byte, 64<<10)
		for {
			n, err := c.f.Read(buf)
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, os.ErrClosed) {
					c.log.Printf("session list: inotify: %v", err)
				}
				return
			}
			c.forget(buf[:n])
			select {
			case events <- struct{}{}:
			default:
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-events:
			if !ok {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(c.settle):
		}
		// the events of the burst are in; drain the signal of those
		// that came while settling
		select {
		case <-events:
		default:
		}
		c.wake()
	}
}

// forget drops the watches the kernel removed (IN_IGNORED: the directory
// was removed), so the next rearm watches the new one.
func (c *changes) forget(buf []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(buf) >= syscall.SizeofInotifyEvent {
		ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[0]))
		switch {
		case ev.Mask&syscall.IN_IGNORED != 0:
			delete(c.wds, ev.Wd)
			c.missing = true
		case ev.Mask&syscall.IN_MOVE_SELF != 0:
			// moved away: the path may get a new directory
			syscall.InotifyRmWatch(int(c.f.Fd()), uint32(ev.Wd))
			delete(c.wds, ev.Wd)
			c.missing = true
		}
		next := syscall.SizeofInotifyEvent + int(ev.Len)
		if next > len(buf) {
			break
		}
		buf = buf[next:]
	}
}
