// Package peer checks who listens on a unix socket before anything is
// written to it: the credentials of the process that called listen
// (SO_PEERCRED), then its unit (its cgroup) and its program. The web
// daemon checks its user's ttyd this way; the supervisor checks its
// user's tmux server.
package peer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/agent-box/agent-box/internal/runtime/escape"
)

// Error is a listener refused: the connection must be closed unused.
type Error struct{ Reason string }

func (e *Error) Error() string { return "socket peer refused: " + e.Reason }

const (
	soPeerPidfd         = 77  // SO_PEERPIDFD (Linux 6.5)
	sysPidfdSendSignal  = 424 // pidfd_send_signal(2), the same number on every architecture
	maxCgroupFileSize   = 64 << 10
	unifiedHierarchyTag = "0::"
)

// Check reads the peer's credentials (SO_PEERCRED: those of the process
// that called listen), checks its uid and then each check on its pid (its
// unit, its program), and returns the pid. When the kernel gives a pidfd
// of the peer (SO_PEERPIDFD), the process is checked to be alive after
// the checks read its files, so the pid read was not reused by another
// process in the meantime. Every refusal is an *Error.
func Check(c *net.UnixConn, uid int, checks ...func(pid int) error) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *syscall.Ucred
	var credErr, pidfdErr error
	pidfd := -1
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
		pidfd, pidfdErr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, soPeerPidfd)
	}); err != nil {
		return 0, err
	}
	if pidfdErr == nil {
		defer syscall.Close(pidfd)
	}
	if credErr != nil {
		return 0, &Error{fmt.Sprintf("SO_PEERCRED: %v", credErr)}
	}
	if int(cred.Uid) != uid {
		return 0, &Error{fmt.Sprintf("the listener's uid is %d, not %d", cred.Uid, uid)}
	}
	if cred.Pid <= 0 {
		return 0, &Error{"the listener's pid is not visible (another pid namespace)"}
	}
	if pidfdErr != nil && !errors.Is(pidfdErr, syscall.ENOPROTOOPT) {
		// ESRCH or EINVAL: the process that listened is gone; its socket
		// is held by another.
		return 0, &Error{fmt.Sprintf("pid %d: the process that listened is gone (SO_PEERPIDFD: %v)", cred.Pid, pidfdErr)}
	}
	for _, check := range checks {
		if err := check(int(cred.Pid)); err != nil {
			return 0, &Error{fmt.Sprintf("pid %d: %v", cred.Pid, err)}
		}
	}
	if pidfdErr == nil {
		if _, _, e := syscall.Syscall6(sysPidfdSendSignal, uintptr(pidfd), 0, 0, 0, 0, 0); e != 0 {
			return 0, &Error{fmt.Sprintf("pid %d: the process that listened is gone (pidfd: %v)", cred.Pid, e)}
		}
	}
	return int(cred.Pid), nil
}

// InUnit is the unit check: /proc/<pid>/cgroup must put the process in
// unit of the system manager.
func InUnit(unit string) func(pid int) error {
	return func(pid int) error {
		data, err := cgroupFile(pid)
		if err != nil {
			return err
		}
		return checkCgroup(data, unit)
	}
}

// cgroupFile is /proc/<pid>/cgroup ("self" for 0).
func cgroupFile(pid int) ([]byte, error) {
	name := "self"
	if pid != 0 {
		name = strconv.Itoa(pid)
	}
	f, err := os.Open("/proc/" + name + "/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxCgroupFileSize))
}

// checkCgroup checks the unified-hierarchy line of a /proc/<pid>/cgroup
// file: its path must be slices only, then unit itself, e.g.
// 0::/system.slice/system-agent\x2dbox\x2dterm.slice/agent-box-term@alice.service.
// Requiring every component before the unit to be a slice is what refuses
// a unit of the same name run by U's own user manager
// (/user.slice/user-1000.slice/user@1000.service/app.slice/agent-box-term@alice.service):
// only the system manager creates slices outside a delegated subtree, and
// every delegated subtree sits below a service or scope.
func checkCgroup(data []byte, unit string) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		path, ok := strings.CutPrefix(line, unifiedHierarchyTag)
		if !ok {
			continue
		}
		parts := strings.Split(path, "/")
		if len(parts) < 3 || parts[0] != "" || parts[len(parts)-1] != unit {
			return fmt.Errorf("in cgroup %s, not in %s", escape.Quote(path, 256), unit)
		}
		for _, p := range parts[1 : len(parts)-1] {
			if !strings.HasSuffix(p, ".slice") || p == ".slice" {
				return fmt.Errorf("in cgroup %s: %s is not in a system slice", escape.Quote(path, 256), unit)
			}
		}
		return nil
	}
	return errors.New("no unified cgroup hierarchy line (0::) in its cgroup file")
}

// RunsProgram is the program check of the peer: /proc/<pid>/exe must be
// the file at path (the same inode, path's symlinks followed), so code
// that got into the unit (a tmux client in ttyd's, a program it started)
// cannot pass for the listener.
func RunsProgram(path string) func(pid int) error {
	return func(pid int) error {
		want, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("the program: %w", err)
		}
		exe := "/proc/" + strconv.Itoa(pid) + "/exe"
		got, err := os.Stat(exe)
		if err != nil {
			return fmt.Errorf("its program: %w", err)
		}
		if !os.SameFile(want, got) {
			name, _ := os.Readlink(exe)
			return fmt.Errorf("it runs %s, not %s", escape.Quote(name, 256), path)
		}
		return nil
	}
}

// InOwnUnit is the unit check against this process's own: ours must be a
// service of the system manager (a system slice path ending in a
// .service), and the process must be in the same cgroup (InSameCgroup).
func InOwnUnit(pid int) error {
	own, err := cgroupFile(0)
	if err != nil {
		return err
	}
	path, _ := unifiedPath(own)
	unit := path[strings.LastIndex(path, "/")+1:]
	if !strings.HasSuffix(unit, ".service") {
		return fmt.Errorf("this process runs in %s, not in a service", escape.Quote(path, 256))
	}
	if err := checkCgroup(own, unit); err != nil {
		return fmt.Errorf("this process: %w", err)
	}
	return InSameCgroup(pid)
}

// InSameCgroup is the check that pid runs in this process's cgroup (the
// unified hierarchy's).
func InSameCgroup(pid int) error {
	own, err := cgroupFile(0)
	if err != nil {
		return err
	}
	path, ok := unifiedPath(own)
	if !ok {
		return errors.New("this process has no unified cgroup hierarchy line (0::)")
	}
	data, err := cgroupFile(pid)
	if err != nil {
		return err
	}
	if got, ok := unifiedPath(data); !ok || got != path {
		return fmt.Errorf("in cgroup %s, not in this process's %s", escape.Quote(got, 256), escape.Quote(path, 256))
	}
	return nil
}

func unifiedPath(data []byte) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), unifiedHierarchyTag); ok {
			return p, true
		}
	}
	return "", false
}

// Exe is the program pid runs: the target of /proc/<pid>/exe. A program
// whose file was removed since it started is an error (the kernel marks
// the link " (deleted)"): its path names nothing, or another file.
func Exe(pid int) (string, error) {
	p, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return "", err
	}
	if strings.HasSuffix(p, " (deleted)") {
		return "", fmt.Errorf("pid %d runs %s, removed since it started", pid, escape.Quote(strings.TrimSuffix(p, " (deleted)"), 256))
	}
	return p, nil
}
