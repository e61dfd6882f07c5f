package web

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
)

// PeerError is a ttyd socket whose listener is not U's ttyd: the
// connection is closed before anything is written to it.
type PeerError struct{ Reason string }

func (e *PeerError) Error() string { return "ttyd socket peer refused: " + e.Reason }

const (
	soPeerPidfd         = 77  // SO_PEERPIDFD (Linux 6.5)
	sysPidfdSendSignal  = 424 // pidfd_send_signal(2), the same number on every architecture
	maxCgroupFileSize   = 64 << 10
	ttydDialTimeout     = 5 * time.Second
	unifiedHierarchyTag = "0::"
)

// dialTTYD connects to U's ttyd socket and checks who listens on it: uid
// U, and a process in agent-box-term@U.service. Anything else is closed
// unused (a *PeerError).
func (s *Server) dialTTYD(ctx context.Context, _, _ string) (net.Conn, error) {
	d := net.Dialer{Timeout: ttydDialTimeout}
	c, err := d.DialContext(ctx, "unix", s.cfg.TTYDSocket)
	if err != nil {
		return nil, err
	}
	if err := checkPeer(c.(*net.UnixConn), s.cfg.UID, s.cfg.InUnit, s.cfg.IsTTYD); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// checkPeer reads the peer's credentials (SO_PEERCRED: those of the
// process that called listen) and checks uid, unit and program. When the
// kernel gives a pidfd of the peer (SO_PEERPIDFD), the process is checked
// to be alive after its cgroup and program were read, so the pid read was
// not reused by another process in the meantime.
func checkPeer(c *net.UnixConn, uid int, inUnit, isTTYD func(pid int) error) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var credErr, pidfdErr error
	pidfd := -1
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
		pidfd, pidfdErr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, soPeerPidfd)
	}); err != nil {
		return err
	}
	if pidfdErr == nil {
		defer syscall.Close(pidfd)
	}
	if credErr != nil {
		return &PeerError{fmt.Sprintf("SO_PEERCRED: %v", credErr)}
	}
	if int(cred.Uid) != uid {
		return &PeerError{fmt.Sprintf("the listener's uid is %d, not %d", cred.Uid, uid)}
	}
	if cred.Pid <= 0 {
		return &PeerError{"the listener's pid is not visible (another pid namespace)"}
	}
	if pidfdErr != nil && !errors.Is(pidfdErr, syscall.ENOPROTOOPT) {
		// ESRCH or EINVAL: the process that listened is gone; its socket
		// is held by another.
		return &PeerError{fmt.Sprintf("pid %d: the process that listened is gone (SO_PEERPIDFD: %v)", cred.Pid, pidfdErr)}
	}
	if err := inUnit(int(cred.Pid)); err != nil {
		return &PeerError{fmt.Sprintf("pid %d: %v", cred.Pid, err)}
	}
	if err := isTTYD(int(cred.Pid)); err != nil {
		return &PeerError{fmt.Sprintf("pid %d: %v", cred.Pid, err)}
	}
	if pidfdErr == nil {
		if _, _, e := syscall.Syscall6(sysPidfdSendSignal, uintptr(pidfd), 0, 0, 0, 0, 0); e != 0 {
			return &PeerError{fmt.Sprintf("pid %d: the process that listened is gone (pidfd: %v)", cred.Pid, e)}
		}
	}
	return nil
}

// TermUnit is the unit of U's ttyd.
func TermUnit(user string) string { return contract.For(contract.Sockets.TTYD.Unit, user) }

// InTermUnit is the real unit check: /proc/<pid>/cgroup must put the
// process in agent-box-term@U.service of the system manager.
func InTermUnit(user string) func(pid int) error {
	unit := TermUnit(user)
	return func(pid int) error {
		f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/cgroup")
		if err != nil {
			return err
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxCgroupFileSize))
		if err != nil {
			return err
		}
		return checkCgroup(data, unit)
	}
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
// that got into agent-box-term@U (a tmux client, a program it started)
// cannot pass for ttyd.
func RunsProgram(path string) func(pid int) error {
	return func(pid int) error {
		want, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("the ttyd program: %w", err)
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
