// Package filewatch tells when one file changes or appears, through
// inotify, also while directories above it are removed and created again:
// the supervisor's registry, an app's program (the app launcher waits for
// it).
package filewatch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

// Watcher reports changes of one file (the registry, a program) through inotify, and
// keeps doing so when its directory, or a directory above it up to HOME, is
// removed, moved away and created again.
//
// The registry is replaced by rename, so its directory is watched, not the
// file: IN_MOVED_TO and IN_CLOSE_WRITE cover writers, IN_DELETE and
// IN_MOVED_FROM removals. Each existing directory above it (below HOME) is
// watched for its own removal or move (IN_DELETE_SELF, IN_MOVE_SELF), which
// costs no event while nothing happens to it. When a directory of the chain
// is missing, the nearest existing one above it is watched for the creation
// of the missing name (IN_CREATE, IN_MOVED_TO). Any change of the chain
// re-arms the watches and then reports, so the reconcile that follows reads
// the file after the new watches are in place and no write is missed.
type Watcher struct {
	f *os.File
	// levels are the watched directories from the top (HOME, or the
	// registry directory's parent if that is not under HOME) down to the
	// registry's directory; levels[i+1] is a child of levels[i].
	levels []string
	name   string // the file's name in the last level

	mu  sync.Mutex
	wds map[int32]int // current watch descriptor -> index in levels
	err error         // why the last arm could not watch the file's directory
}

const (
	// fileMask is the mask of the registry's directory.
	fileMask = syscall.IN_CLOSE_WRITE | syscall.IN_MOVED_TO | syscall.IN_MOVED_FROM |
		syscall.IN_DELETE | syscall.IN_CREATE | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF
	// selfMask is the mask of a directory above it whose child exists.
	selfMask = syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF
	// createMask is the mask of the nearest existing directory above a
	// missing one.
	createMask = selfMask | syscall.IN_CREATE | syscall.IN_MOVED_TO
)

// Watch watches file (in directory dir) and the directories between
// top and dir. The watch is armed before watchFile returns; a missing
// directory is not an error (its creation is watched).
func Watch(top, dir, name string) (*Watcher, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	// A non-blocking fd lets the runtime poller park Read and lets Close
	// interrupt it.
	w := &Watcher{f: os.NewFile(uintptr(fd), "inotify"), levels: chain(top, dir), name: name, wds: map[int32]int{}}
	w.Arm()
	return w, nil
}

// chain lists the directories from top down to dir; just dir's parent and
// dir when dir is not below top.
func chain(top, dir string) []string {
	top, dir = filepath.Clean(top), filepath.Clean(dir)
	rel, err := filepath.Rel(top, dir)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return []string{filepath.Dir(dir), dir}
	}
	levels := []string{top}
	for _, c := range strings.Split(rel, "/") {
		levels = append(levels, filepath.Join(levels[len(levels)-1], c))
	}
	return levels
}

func (w *Watcher) Close() error { return w.f.Close() }

// Err reports why the file's directory is not watched (nil when it is, or
// when only its creation is being waited for).
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Arm (re)installs the watches for the chain as it is now and drops the
// ones it no longer needs. Safe to call at any time.
func (w *Watcher) Arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	rc, err := w.f.SyscallConn()
	if err != nil {
		w.err = err
		return
	}
	// Control keeps the descriptor open while it runs (an arm racing Close
	// cannot touch a reused descriptor) and, unlike Fd, leaves the file
	// non-blocking, so Close still ends a pending Read.
	cerr := rc.Control(func(sysfd uintptr) {
		fd := int(sysfd)
		var want map[int32]int
		// A directory can vanish between two steps; start over a few times.
		for attempt := 0; attempt < 8; attempt++ {
			var again bool
			if want, again, err = w.armOnce(fd); !again {
				break
			}
		}
		for wd := range w.wds {
			if _, ok := want[wd]; !ok {
				syscall.InotifyRmWatch(fd, uint32(wd)) // EINVAL if the kernel already dropped it
			}
		}
		w.wds = want
	})
	if cerr != nil {
		err = cerr // closed
	}
	w.err = err
}

// armOnce walks the chain from the top. Each directory is watched for the
// creation of its child before the child is looked at, so a creation in
// between is seen either by the watch or by the look. again means a
// directory vanished during the walk: walk again.
func (w *Watcher) armOnce(fd int) (want map[int32]int, again bool, err error) {
	want = map[int32]int{}
	last := len(w.levels) - 1
	add := func(dir string, mask uint32) (int32, error) {
		wd, err := syscall.InotifyAddWatch(fd, dir, mask)
		if err != nil {
			return 0, &os.PathError{Op: "inotify_add_watch", Path: dir, Err: err}
		}
		return int32(wd), nil
	}
	vanished := func(err error) bool {
		return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR)
	}
	for i, dir := range w.levels {
		if i == last {
			wd, err := add(dir, fileMask)
			if err != nil {
				return want, vanished(err), err
			}
			want[wd] = i
			return want, false, nil
		}
		wd, err := add(dir, createMask)
		if err != nil {
			// the top itself (HOME) is not watched for re-creation
			return want, i > 0 && vanished(err), err
		}
		if fi, err := os.Stat(w.levels[i+1]); err != nil || !fi.IsDir() {
			want[wd] = i // wait for the child to be created
			return want, false, nil
		}
		// the child exists: only this directory's own removal matters,
		// and not even that for the top
		if i == 0 {
			syscall.InotifyRmWatch(fd, uint32(wd))
			continue
		}
		if wd, err = add(dir, selfMask); err != nil {
			return want, vanished(err), err
		}
		want[wd] = i
	}
	return want, false, nil
}

// Run sends on ch (non-blocking, capacity 1 coalesces bursts) whenever an
// event names the file, and re-arms, then sends, whenever a directory of
// the chain changes.
func (w *Watcher) Run(ch chan<- struct{}) {
	buf := make([]byte, 64*(syscall.SizeofInotifyEvent+syscall.NAME_MAX+1))
	for {
		hit, rearmed, err := w.step(buf)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			// closed at shutdown, or broken: the safety-net resync takes over
			return
		}
		if hit || rearmed {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// step reads one batch of events: hit if one names the file; rearmed if
// the chain changed, in which case the watches are re-armed before step
// returns.
func (w *Watcher) step(buf []byte) (hit, rearmed bool, err error) {
	n, err := w.f.Read(buf)
	if err != nil {
		return false, false, err
	}
	hit, rearmed = w.classify(buf[:n])
	if rearmed {
		w.Arm()
	}
	return hit, rearmed, nil
}

// classify reads a batch of events: hit if one names the file, rearm if
// one changes a directory of the chain (or the queue overflowed).
func (w *Watcher) classify(buf []byte) (hit, rearm bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	last := len(w.levels) - 1
	for off := 0; off+syscall.SizeofInotifyEvent <= len(buf); {
		ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
		end := off + syscall.SizeofInotifyEvent + int(ev.Len)
		if end > len(buf) {
			break
		}
		name := string(trimNUL(buf[off+syscall.SizeofInotifyEvent : end]))
		off = end
		if ev.Mask&syscall.IN_Q_OVERFLOW != 0 {
			hit, rearm = true, true
			continue
		}
		i, ok := w.wds[ev.Wd]
		if !ok {
			continue // a watch dropped by an earlier arm
		}
		switch {
		case ev.Mask&(syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF|syscall.IN_IGNORED) != 0:
			rearm = true
		case i == last && name == w.name:
			hit = true
		case i < last && name == filepath.Base(w.levels[i+1]):
			rearm = true
		}
	}
	return hit, rearm
}

func trimNUL(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// String describes the watch, for a log line.
func (w *Watcher) String() string {
	return fmt.Sprintf("%s in %s", w.name, w.levels[len(w.levels)-1])
}
