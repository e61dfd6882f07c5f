package web

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"
)

// shutdownTimeout bounds the wait for requests in flight at SIGTERM.
const shutdownTimeout = 5 * time.Second

// Serve runs the daemon on l (the "web" listener) and hook (the "hook"
// listener, which must be nil exactly when cfg has no webhooks) until ctx
// ends, then closes every WebSocket and returns nil after the requests in
// flight finish (at most shutdownTimeout).
func Serve(ctx context.Context, l, hook net.Listener, cfg Config) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	defer func() {
		if s.hooks != nil {
			s.hooks.close()
		}
	}()
	if (hook != nil) != (s.hooks != nil) {
		return configErrorf("web serve: a hook listener needs webhooks and webhooks need one (%d hooks configured)", len(cfg.Hooks.Hooks))
	}
	var servers []*http.Server
	errc := make(chan error, 2)
	serve := func(l net.Listener, h http.Handler, logPrefix string) {
		srv := &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    64 << 10,
			ErrorLog:          log.New(s.log, logPrefix, 0),
			// every request, and so every WebSocket, ends with ctx
			BaseContext: func(net.Listener) context.Context { return ctx },
		}
		servers = append(servers, srv)
		go func() { errc <- srv.Serve(l) }()
	}
	go s.Alive(ctx)
	serve(l, s, "http: ")
	if hook != nil {
		go s.Wake(ctx)
		serve(hook, s.hooks, "http (hook): ")
	}
	select {
	case err := <-errc:
		return fmt.Errorf("web serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("web serve: shutdown: %w", err)
		}
	}
	return nil
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
