// Package apprun is an app's launcher (docs/runtime-contract.md, "Apps"):
// the main process of the app's unit. A slot may exist before its program:
// the launcher waits for the program's file (inotify, package filewatch)
// and starts it within a settle time of its appearing; when the program
// exits it is started again after a delay that doubles while it keeps
// exiting quickly, so a crashing program is retried for ever and never
// leaves a failed unit. Each connection of the socket systemd passes
// (Caddy's side, root:caddy 0660) is forwarded to the program's port on
// the loopback of the unit's own network namespace, which nothing else can
// reach. What it is doing is the unit's status text (sd_notify STATUS=):
// waiting, running, or backing off with the last exit.
//
// Running as PID 1 of the unit's PID namespace, the launcher reaps every
// orphan; the program is the leader of its own process group, which is
// signalled as a whole when the unit stops.
package apprun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/filewatch"
)

// Config is one app's launch.
type Config struct {
	Dir     string   // the app's directory: the program's working directory
	WaitFor string   // the file to wait for (absolute); "" starts at once
	Argv    []string // the program and its arguments (argv[0] relative to Dir when it holds a '/')
	Env     []string // the program's environment
	Port    int      // the program serves on 127.0.0.1:Port; 0: nothing forwarded
	// Listener is the socket systemd passed (nil: none).
	Listener net.Listener
	Backoff  Backoff
	// Settle is how long the program's file must be quiet before a start
	// (an agent writes a file in several steps).
	Settle time.Duration
	// Status sets the unit's status text; Logf writes a journal line.
	Status func(string)
	Logf   func(format string, args ...any)
}

// Backoff is the delay before a program that exited is started again: Min
// after its first quick exit, doubling at each quick exit after that, at
// most Max. An exit after a run of Max or longer is not quick: the next
// start is after Min again.
type Backoff struct{ Min, Max time.Duration }

// Next is the delay after an exit that ended a run of uptime, given the
// delay before that run (0: the first start), and whether the exit was
// quick.
func (b Backoff) Next(prev, uptime time.Duration) time.Duration {
	if prev == 0 || uptime >= b.Max {
		return b.Min
	}
	d := prev * 2
	if d > b.Max {
		d = b.Max
	}
	return d
}

// state is what the forwarder needs to know of the program.
type state struct {
	mu      sync.Mutex
	running bool
	since   time.Time
	text    string
}

func (s *state) set(running bool, text string) {
	s.mu.Lock()
	s.running, s.text = running, text
	if running {
		s.since = time.Now()
	}
	s.mu.Unlock()
}

func (s *state) get() (running bool, since time.Time, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running, s.since, s.text
}

// Run waits for the program, runs it and keeps it running until ctx ends;
// then it ends the program's process group. It returns nil on ctx's end,
// ErrDirReplaced when the app's directory was removed or moved away, and
// another error for a launch that can never work (a bad configuration).
func Run(ctx context.Context, cfg Config) error {
	if len(cfg.Argv) == 0 {
		return errors.New("no command")
	}
	if cfg.Backoff.Min <= 0 || cfg.Backoff.Max < cfg.Backoff.Min {
		return fmt.Errorf("backoff %v..%v: want 0 < min <= max", cfg.Backoff.Min, cfg.Backoff.Max)
	}
	st := &state{}
	startReaper()
	if cfg.Listener != nil && cfg.Port > 0 {
		go forward(ctx, cfg.Listener, cfg.Port, st)
	}
	// The app's directory is a bind mount of the agent's: when the agent
	// removes it or moves it away, this namespace keeps the old one (or
	// an empty stand-in) for good. Ending lets systemd start the unit
	// again with the directory as it is now.
	gone, unwatch, err := watchDir(cfg.Dir)
	if err != nil {
		return fmt.Errorf("watching the app's directory: %w", err)
	}
	defer unwatch()
	run, cancel := context.WithCancel(ctx)
	defer cancel()
	var replaced atomic.Bool
	go func() {
		select {
		case <-gone:
			replaced.Store(true)
			cancel()
		case <-run.Done():
		}
	}()
	runLoop(run, cfg, st)
	cancel()
	if replaced.Load() {
		cfg.Logf("the app's directory %s was removed or moved away: ending, so that the unit starts again with the directory as it is now", cfg.Dir)
		return ErrDirReplaced
	}
	return nil
}

// ErrDirReplaced: the app's directory was removed or moved away while the
// launcher ran.
var ErrDirReplaced = errors.New("the app's directory was removed or moved away")

// dirCheckEvery is how often the launcher looks whether its directory was
// removed: a removed directory that a process still uses (the program's
// working directory, the unit's bind mount) sends no inotify event, it
// only has no links left (measured: rmdir of a process's working
// directory, no event of IN_ALL_EVENTS|IN_DELETE_SELF).
const dirCheckEvery = 2 * time.Second

// watchDir returns a channel closed when dir itself is moved away (an
// inotify event) or removed (its link count, every dirCheckEvery), and a
// function that ends the watch.
func watchDir(dir string) (gone <-chan struct{}, unwatch func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		d.Close()
		return nil, nil, os.NewSyscallError("inotify_init1", err)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF|syscall.IN_UNMOUNT|syscall.IN_ONLYDIR); err != nil {
		syscall.Close(fd)
		d.Close()
		return nil, nil, &os.PathError{Op: "inotify_add_watch", Path: dir, Err: err}
	}
	// Non-blocking under the runtime's poller: Close ends a pending Read.
	f := os.NewFile(uintptr(fd), "inotify")
	ch := make(chan struct{})
	stop := make(chan struct{})
	var goneOnce sync.Once
	signal := func() { goneOnce.Do(func() { close(ch) }) }
	go func() {
		buf := make([]byte, 4096)
		if n, _ := f.Read(buf); n > 0 {
			signal()
		}
	}()
	go func() {
		t := time.NewTicker(dirCheckEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				var st syscall.Stat_t
				if err := syscall.Fstat(int(d.Fd()), &st); err != nil || st.Nlink == 0 {
					signal()
					return
				}
			}
		}
	}()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			close(stop)
			f.Close()
			d.Close()
		})
	}, nil
}

// runLoop waits for the program, runs it and restarts it until ctx ends.
func runLoop(ctx context.Context, cfg Config, st *state) {
	say := func(running bool, text string) {
		st.set(running, text)
		cfg.Status(text)
	}
	var delay time.Duration
	restarts := 0
	last := "" // how the program last ended, for the status while it runs
	for {
		if cfg.WaitFor != "" {
			if err := waitFor(ctx, cfg, st); err != nil {
				return // ctx ended
			}
		}
		pid, err := start(cfg)
		if err != nil {
			// A program that cannot be executed is an exit like any other:
			// the agent may be writing it.
			cfg.Logf("cannot start %s: %v", cfg.Argv[0], err)
			delay = cfg.Backoff.Next(delay, 0)
			say(false, fmt.Sprintf("backing off %v: cannot start %s: %v (restarts %d)", delay, cfg.Argv[0], errText(err), restarts))
			last = fmt.Sprintf(", last try: cannot start: %v", errText(err))
			if !sleep(ctx, delay) {
				return
			}
			restarts++
			continue
		}
		began := time.Now()
		say(true, fmt.Sprintf("running %s (pid %d, restarts %d)%s", cfg.Argv[0], pid, restarts, last))
		cfg.Logf("started %s (pid %d)", cfg.Argv[0], pid)
		var ws syscall.WaitStatus
		select {
		case <-ctx.Done():
			stop(pid)
			return
		case ws = <-reaped(pid):
		}
		uptime := time.Since(began)
		delay = cfg.Backoff.Next(delay, uptime)
		exit := describe(ws)
		cfg.Logf("%s %s after %v; starting it again in %v", cfg.Argv[0], exit, uptime.Round(time.Millisecond), delay)
		say(false, fmt.Sprintf("backing off %v: %s %s after %v (restarts %d)", delay, cfg.Argv[0], exit, uptime.Round(time.Second), restarts))
		last = fmt.Sprintf(", last exit: %s after %v at %s", exit, uptime.Round(time.Second), time.Now().UTC().Format(time.TimeOnly))
		if !sleep(ctx, delay) {
			return
		}
		restarts++
	}
}

// waitFor returns once cfg.WaitFor exists and has been quiet for
// cfg.Settle; an error only when ctx ended.
func waitFor(ctx context.Context, cfg Config, st *state) error {
	if _, err := os.Lstat(cfg.WaitFor); err == nil {
		return nil
	}
	w, err := filewatch.Watch(cfg.Dir, filepath.Dir(cfg.WaitFor), filepath.Base(cfg.WaitFor))
	if err != nil {
		return err
	}
	defer w.Close()
	ch := make(chan struct{}, 1)
	go w.Run(ch)
	text := "waiting for " + cfg.WaitFor
	st.set(false, text)
	cfg.Status(text)
	cfg.Logf("%s", text)
	// A watch that could not be set up (no such directory above) is
	// covered by a look every few seconds.
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		if _, err := os.Lstat(cfg.WaitFor); err == nil {
			// quiet: no event for Settle
			for {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-ch:
					continue
				case <-time.After(cfg.Settle):
				}
				break
			}
			if _, err := os.Lstat(cfg.WaitFor); err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		case <-tick.C:
		}
	}
}

// start starts the program as the leader of a new process group, its
// standard input /dev/null, its output the launcher's (the journal).
func start(cfg Config) (int, error) {
	argv0 := cfg.Argv[0]
	var path string
	switch {
	case filepath.IsAbs(argv0):
		path = argv0
	case filepath.Base(argv0) != argv0:
		path = filepath.Join(cfg.Dir, argv0)
	default:
		p, err := lookPath(argv0, cfg.Env)
		if err != nil {
			return 0, err
		}
		path = p
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	return syscall.ForkExec(path, cfg.Argv, &syscall.ProcAttr{
		Dir:   cfg.Dir,
		Env:   cfg.Env,
		Files: []uintptr{null.Fd(), os.Stdout.Fd(), os.Stderr.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
}

// lookPath finds name in the PATH of env.
func lookPath(name string, env []string) (string, error) {
	path := ""
	for _, kv := range env {
		if len(kv) > 5 && kv[:5] == "PATH=" {
			path = kv[5:]
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // never the working directory
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in PATH", name)
}

// The reaper reaps every child (the launcher may be PID 1 of a
// namespace, the parent of every orphan); reaped gives the channel on
// which pid's wait status arrives. One per process: a second Wait4(-1)
// loop would take the first one's children.
var (
	reapOnce sync.Once
	reapMu   sync.Mutex
	waiting  = map[int]chan syscall.WaitStatus{}
	done     = map[int]syscall.WaitStatus{}
)

func startReaper() {
	reapOnce.Do(func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGCHLD)
		go func() {
			for range sig {
				reapAll()
			}
		}()
	})
}

func reaped(pid int) <-chan syscall.WaitStatus {
	startReaper()
	ch := make(chan syscall.WaitStatus, 1)
	reapMu.Lock()
	if ws, ok := done[pid]; ok {
		ch <- ws
		delete(done, pid)
	} else {
		waiting[pid] = ch
	}
	reapMu.Unlock()
	reapAll() // a SIGCHLD may have come before the channel was ready
	return ch
}

func reapAll() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
		reapMu.Lock()
		if ch, ok := waiting[pid]; ok {
			ch <- ws
			delete(waiting, pid)
		} else {
			// an orphan, or a child not asked for yet (kept: its pid is
			// not reused while it is recorded here only for a moment)
			if len(done) > 64 {
				clear(done)
			}
			done[pid] = ws
		}
		reapMu.Unlock()
	}
}

// stop ends the program's process group: SIGTERM, then SIGKILL after 5 s
// (systemd's TimeoutStopSec ends whatever is left after that anyway).
func stop(pid int) {
	syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-reaped(pid):
	case <-time.After(5 * time.Second):
		syscall.Kill(-pid, syscall.SIGKILL)
	}
}

func describe(ws syscall.WaitStatus) string {
	switch {
	case ws.Signaled():
		return "was killed by signal " + strconv.Itoa(int(ws.Signal())) + " (" + ws.Signal().String() + ")"
	default:
		return "exited with status " + strconv.Itoa(ws.ExitStatus())
	}
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// connectWindow is how long a connection waits for a program that was
// just started to listen.
const connectWindow = 5 * time.Second

// forward accepts connections until ctx ends and copies each to the
// program's port both ways. While the program is not running, or does not
// listen within connectWindow of its start, the client gets a 503 that
// says what the app is doing.
func forward(ctx context.Context, l net.Listener, port int, st *state) {
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		go func() {
			defer c.Close()
			up, err := dial(ctx, addr, st)
			if err != nil {
				unavailable(c, err.Error())
				return
			}
			defer up.Close()
			pipe(c, up)
		}()
	}
}

// dial connects to the program, retrying while it was started less than
// connectWindow ago.
func dial(ctx context.Context, addr string, st *state) (net.Conn, error) {
	var d net.Dialer
	for {
		running, since, text := st.get()
		if !running {
			if text == "" {
				text = "starting"
			}
			return nil, errors.New(text)
		}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c, nil
		}
		if time.Since(since) > connectWindow || ctx.Err() != nil {
			return nil, fmt.Errorf("%s, but nothing listens on %s", text, addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// unavailable answers an HTTP client that the app cannot serve now. It
// reads the request's head first and what follows after its answer (for
// a second at most): a connection closed while the client still sends is
// a reset, not an answer (measured: curl's "Send failure: Broken pipe").
func unavailable(c net.Conn, why string) {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	head := make([]byte, 0, 1024)
	buf := make([]byte, 1024)
	for len(head) < 16<<10 && !bytes.Contains(head, []byte("\r\n\r\n")) {
		n, err := c.Read(buf)
		head = append(head, buf[:n]...)
		if err != nil {
			break
		}
	}
	body := "This app is not serving: " + why + "\n"
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nRetry-After: 2\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n%s", len(body), body)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		c.SetReadDeadline(time.Now().Add(time.Second))
		io.Copy(io.Discard, io.LimitReader(c, 1<<20))
	}
}

// pipe copies both ways, passing on each side's end of writing.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Add(2)
	go cp(a, b)
	go cp(b, a)
	wg.Wait()
}
