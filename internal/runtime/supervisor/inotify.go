package supervisor

import (
	"errors"
	"os"
	"syscall"
	"unsafe"
)

// watcher reports changes of one file name in a directory through inotify.
// The registry is replaced by rename, so the directory is watched, not the
// file: IN_MOVED_TO and IN_CLOSE_WRITE cover writers, IN_DELETE and
// IN_MOVED_FROM removals.
type watcher struct {
	f    *os.File
	name string
}

const watchMask = syscall.IN_CLOSE_WRITE | syscall.IN_MOVED_TO | syscall.IN_MOVED_FROM |
	syscall.IN_DELETE | syscall.IN_CREATE | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF

func watchDir(dir, name string) (*watcher, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, watchMask); err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "inotify_add_watch", Path: dir, Err: err}
	}
	// A non-blocking fd lets the runtime poller park Read and lets Close
	// interrupt it.
	return &watcher{f: os.NewFile(uintptr(fd), "inotify"), name: name}, nil
}

func (w *watcher) Close() error { return w.f.Close() }

// run sends on ch (non-blocking, capacity 1 coalesces bursts) whenever an
// event names w.name or the directory itself goes away.
func (w *watcher) run(ch chan<- struct{}) {
	buf := make([]byte, 64*(syscall.SizeofInotifyEvent+syscall.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			// closed at shutdown, or broken: the safety-net resync takes over
			return
		}
		hit := false
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			name := string(trimNUL(nameBytes))
			if name == w.name || ev.Mask&(syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF|syscall.IN_Q_OVERFLOW) != 0 {
				hit = true
			}
			off += syscall.SizeofInotifyEvent + int(ev.Len)
		}
		if hit {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

func trimNUL(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}
