// Package sdlisten takes the sockets systemd passes to a socket-activated
// service (sd_listen_fds(3)): LISTEN_PID must be this process, LISTEN_FDS
// counts descriptors from 3, LISTEN_FDNAMES names them (FileDescriptorName=).
// The descriptors are marked close-on-exec and the variables unset, so no
// child inherits them.
package sdlisten

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ErrNone: the process was not given sockets by systemd.
var ErrNone = errors.New("no sockets from systemd (LISTEN_PID/LISTEN_FDS unset or for another process)")

const firstFD = 3

// Listeners returns the passed stream sockets by name. Each descriptor is
// marked close-on-exec; LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES are
// removed from the environment.
func Listeners() (map[string]net.Listener, error) {
	return take(net.FileListener)
}

// PacketConns returns the passed datagram sockets by name (ListenDatagram=),
// as Listeners does stream sockets.
func PacketConns() (map[string]net.PacketConn, error) {
	return take(net.FilePacketConn)
}

// take converts each passed descriptor with conv.
func take[T any](conv func(*os.File) (T, error)) (map[string]T, error) {
	pid, fds, names := os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_FDNAMES")
	os.Unsetenv("LISTEN_PID")
	os.Unsetenv("LISTEN_FDS")
	os.Unsetenv("LISTEN_FDNAMES")
	if pid != strconv.Itoa(os.Getpid()) || fds == "" {
		return nil, ErrNone
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n <= 0 || n > 64 {
		return nil, fmt.Errorf("LISTEN_FDS=%q: not a count of sockets", fds)
	}
	var nameList []string
	if names != "" {
		nameList = strings.Split(names, ":")
	}
	out := map[string]T{}
	for i := 0; i < n; i++ {
		fd := firstFD + i
		syscall.CloseOnExec(fd)
		name := "unknown"
		if i < len(nameList) && nameList[i] != "" {
			name = nameList[i]
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("two sockets named %q", name)
		}
		f := os.NewFile(uintptr(fd), name)
		c, err := conv(f)
		f.Close() // conv dup'ed it
		if err != nil {
			return nil, fmt.Errorf("socket %q (fd %d): %w", name, fd, err)
		}
		out[name] = c
	}
	return out, nil
}

// Take returns the listeners named want, in order, and fails if one is
// missing or an unexpected one was passed (a unit wired to the wrong
// service).
func Take(ls map[string]net.Listener, want ...string) ([]net.Listener, error) {
	out := make([]net.Listener, len(want))
	for i, w := range want {
		l, ok := ls[w]
		if !ok {
			return nil, fmt.Errorf("systemd passed no socket named %q (got %s)", w, names(ls))
		}
		out[i] = l
	}
	if len(ls) != len(want) {
		return nil, fmt.Errorf("systemd passed sockets %s, want exactly %s", names(ls), strings.Join(want, ", "))
	}
	return out, nil
}

func names(ls map[string]net.Listener) string {
	var n []string
	for k := range ls {
		n = append(n, k)
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}
