package supervisor

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// sysPidfdOpen is pidfd_open(2) (Linux >= 5.3); the number is the same on
// every architecture (it was added after the syscall tables were unified).
const sysPidfdOpen = 434

// pidExit is one exited session process.
type pidExit struct {
	name string
	pid  int
}

// watchPID reports the exit of pid on ch. A pidfd becomes readable when the
// process exits (as a zombie, before its parent tmux reaps it), so the
// supervisor learns about every death without being the parent and without
// polling. The returned stop function closes the pidfd and ends the wait.
func watchPID(pid int, name string, ch chan<- pidExit, done <-chan struct{}) (stop func(), err error) {
	report := func() {
		select {
		case ch <- pidExit{name, pid}:
		case <-done:
		}
	}
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno == syscall.ESRCH {
		go report() // already gone
		return func() {}, nil
	}
	if errno != 0 {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, errno)
	}
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		syscall.Close(int(fd))
		return nil, err
	}
	syscall.CloseOnExec(int(fd))
	f := os.NewFile(fd, "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	go func() {
		// The callback runs once at once and again whenever the poller sees
		// the pidfd readable; it reports whether the pidfd is readable, i.e.
		// the whole process exited. (/proc's state is no substitute: while a
		// multi-threaded program execs from another thread, its old leader
		// shows as a zombie for a moment.)
		err := rc.Read(func(fd uintptr) bool { return readable(int(fd)) })
		if err == nil {
			report()
		}
	}()
	return func() { f.Close() }, nil
}

// procStat returns the fields of /proc/pid/stat after the command name.
func procStat(pid int) ([]string, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return nil, errors.New("malformed stat")
	}
	return strings.Fields(s[i+2:]), nil
}

// readable polls fd without blocking (ppoll with a zero timeout).
func readable(fd int) bool {
	pfd := struct {
		fd      int32
		events  int16
		revents int16
	}{fd: int32(fd), events: 0x1} // POLLIN
	var ts syscall.Timespec
	for {
		n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		return errno == 0 && n == 1 && pfd.revents != 0
	}
}

// zombieStatus returns the wait status of a zombie pid from
// /proc/pid/stat's exit_code field (Linux >= 3.5); ok is false if pid is
// not a zombie (still running, or already reaped).
func zombieStatus(pid int) (ws syscall.WaitStatus, ok bool) {
	f, err := procStat(pid)
	if err != nil || f[0] != "Z" || len(f) < 50 {
		return 0, false
	}
	n, err := strconv.Atoi(f[49])
	if err != nil {
		return 0, false
	}
	return syscall.WaitStatus(n), true
}
