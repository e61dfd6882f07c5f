package web

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/httpserve"
)

// shutdownTimeout bounds the wait for requests in flight at SIGTERM.
const shutdownTimeout = 5 * time.Second

// Serve runs the daemon on l (the "web" listener) and hook (the "hook"
// listener, which must be nil exactly when cfg has no webhooks) until ctx
// ends, then closes every WebSocket and returns nil after the requests in
// flight finish (at most shutdownTimeout). Both listeners are bounded
// (cfg.Limits, httpserve.Bounded): the terminal's WebSockets and the
// downloads lift the bounds for their own request (httpserve.Unbound).
func Serve(ctx context.Context, l, hook net.Listener, cfg Config) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	defer func() {
		if s.hooks != nil {
			s.hooks.Close()
		}
	}()
	if (hook != nil) != (s.hooks != nil) {
		return configErrorf("a hook listener needs webhooks and webhooks need one (%d hooks configured)", len(cfg.Hooks.Hooks))
	}
	go s.Alive(ctx)
	if hook != nil {
		go s.Wake(ctx)
	}
	if err := httpserve.Serve(ctx, shutdownTimeout, s.log.ErrorLog(), s.listeners(l, hook)...); err != nil {
		return fmt.Errorf("web serve: %w", err)
	}
	return nil
}

// listeners are what Serve serves (the tests serve the same).
func (s *Server) listeners(l, hook net.Listener) []httpserve.Listener {
	ls := []httpserve.Listener{{Name: *contract.Sockets.Web.FDName, L: l, Handler: s, Limits: s.cfg.Limits, EndWithServe: true}}
	if hook != nil {
		// deliveries in flight finish: they are acknowledged once stored
		ls = append(ls, httpserve.Listener{Name: *contract.Sockets.Hook.FDName, L: hook, Handler: s.hooks, Limits: s.cfg.Limits})
	}
	return ls
}

// SetNotDumpable makes this process non-dumpable (prctl PR_SET_DUMPABLE
// 0): processes of the same uid can no longer ptrace it, read its memory
// or take its descriptors through /proc/<pid>/fd, and its /proc files
// belong to root.
func SetNotDumpable() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); e != 0 {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", e)
	}
	return nil
}

// CloseOnExecInherited marks every descriptor above stderr close-on-exec,
// so nothing the daemon was given (systemd's sockets, anything a parent
// leaked) reaches a program it runs. Go opens its own descriptors
// close-on-exec; marking them again changes nothing.
func CloseOnExecInherited() error {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list descriptors: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("list descriptors: %w", err)
	}
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd <= 2 {
			continue
		}
		syscall.CloseOnExec(fd) // the directory's own descriptor is closed by now: EBADF is harmless
	}
	return nil
}
