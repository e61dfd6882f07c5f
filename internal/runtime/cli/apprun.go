package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/apprun"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/journal"
	"github.com/agent-box/agent-box/internal/runtime/sdlisten"
)

// appRun is the main process of an app's unit (package apprun):
//
//	agent-box app-run --dir DIR [--wait-for FILE] [--restart-delay D]
//	    [--restart-delay-max D] -- PROGRAM [ARG...]
//
// The socket systemd passes (FileDescriptorName= contract.Apps.Socket.FDName)
// is forwarded to the program's port; the unit's status text says what the
// launcher does.
func (p *Program) appRun(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("app-run", flag.ContinueOnError)
	fs.SetOutput(p.Stderr)
	dir := fs.String("dir", "", "the app's directory (absolute)")
	waitFor := fs.String("wait-for", "", "the file to wait for (absolute)")
	delay := fs.String("restart-delay", contract.Apps.RestartDelay.Default, "the delay before the first restart")
	delayMax := fs.String("restart-delay-max", contract.Apps.RestartDelayMax.Default, "the longest delay before a restart")
	if err := fs.Parse(args); err != nil {
		return usagef("app-run: %v", err)
	}
	argv := fs.Args()
	if len(argv) == 0 || !filepath.IsAbs(*dir) || (*waitFor != "" && !filepath.IsAbs(*waitFor)) {
		return usagef("usage: app-run --dir DIR [--wait-for FILE] [--restart-delay D] [--restart-delay-max D] -- PROGRAM [ARG...] (absolute DIR and FILE)")
	}
	backoff, err := ParseBackoff(*delay, *delayMax)
	if err != nil {
		return usagef("app-run: %v", err)
	}
	log := journal.New(p.Stderr, "agent-box-app")
	var listener net.Listener
	// PID 1 of the unit's own PID namespace (PrivatePIDs=): systemd 257
	// names the process in LISTEN_PID by its pid outside that namespace
	// (measured in the Debian 13 guest: no socket was taken by pid).
	// Only systemd starts a PID 1 that has LISTEN_FDS.
	listenPID := os.Getenv("LISTEN_PID")
	if os.Getpid() == 1 && os.Getenv("LISTEN_FDS") != "" {
		os.Setenv("LISTEN_PID", "1")
	}
	ls, err := sdlisten.Listeners()
	switch {
	case errors.Is(err, sdlisten.ErrNone):
		log.Printf("no socket from systemd (LISTEN_PID %q, this process %d): nothing is forwarded to the program", listenPID, os.Getpid())
	case err != nil:
		return fmt.Errorf("app-run: %w", err)
	default:
		l, ok := ls[contract.Apps.Socket.FDName]
		if !ok || len(ls) != 1 {
			return fmt.Errorf("app-run: systemd passed %d sockets, want exactly one named %q", len(ls), contract.Apps.Socket.FDName)
		}
		listener = l
	}
	notify := sdNotifier()
	notify("READY=1")
	env := programEnv(os.Environ())
	return apprun.Run(ctx, apprun.Config{
		Dir: *dir, WaitFor: *waitFor, Argv: argv, Env: env,
		Port: contract.Apps.Port, Listener: listener,
		Backoff: backoff,
		Settle:  contract.Duration(contract.Apps.Settle),
		Status:  func(s string) { notify("STATUS=" + s) },
		Logf:    log.Printf,
	})
}

// ParseBackoff reads an app's restartDelay and restartDelayMax as the
// module checks them (the contract's apps.restartDelay.min; the longest
// delay at least the first).
func ParseBackoff(delay, delayMax string) (apprun.Backoff, error) {
	min, err := contract.ParseDuration(delay)
	if err != nil {
		return apprun.Backoff{}, fmt.Errorf("restart delay %q: %w", delay, err)
	}
	if least := contract.Duration(contract.Apps.RestartDelay.Min); min < least {
		return apprun.Backoff{}, fmt.Errorf("restart delay %q: at least %s", delay, contract.Apps.RestartDelay.Min)
	}
	max, err := contract.ParseDuration(delayMax)
	if err != nil {
		return apprun.Backoff{}, fmt.Errorf("longest restart delay %q: %w", delayMax, err)
	}
	if max < min {
		return apprun.Backoff{}, fmt.Errorf("longest restart delay %q: at least the restart delay %q", delayMax, delay)
	}
	return apprun.Backoff{Min: min, Max: max}, nil
}

// programEnv is the program's environment: the unit's, without what
// systemd meant for the launcher, with the port.
func programEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "NOTIFY_SOCKET", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "WATCHDOG_PID", "WATCHDOG_USEC", contract.Apps.PortVariable:
			continue
		}
		env = append(env, kv)
	}
	return append(env, fmt.Sprintf("%s=%d", contract.Apps.PortVariable, contract.Apps.Port))
}

// sdNotifier returns a function that sends a state line to systemd
// (sd_notify(3)); a no-op without NOTIFY_SOCKET.
func sdNotifier() func(string) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return func(string) {}
	}
	if strings.HasPrefix(path, "@") {
		path = "\x00" + path[1:]
	}
	addr := &net.UnixAddr{Name: path, Net: "unixgram"}
	return func(state string) {
		c, err := net.DialUnix("unixgram", nil, addr)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.Write([]byte(state))
	}
}
