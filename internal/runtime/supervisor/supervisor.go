// Package supervisor is `agent-box supervise`: it owns the user's tmux
// server and keeps every listed, non-stopped session of the registry alive.
//
// It is event driven. Three sources wake it up: inotify on the registry's
// directory (registry edits), datagrams on its control socket (the tmux
// pane-died hook and `agent-box session restart`), and its own backoff
// timers. A slow safety-net resync (Config.Resync, 5 min by default) repairs
// anything an event could have missed. See docs/runtime-contract.md.
package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/atomicfile"
	"github.com/agent-box/agent-box/internal/runtime/config"
	"github.com/agent-box/agent-box/internal/runtime/observe"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/tmux"
)

// Errors with their own exit codes.
var (
	ErrForeignServer  = errors.New("a tmux server not started by agent-box is running on the socket")
	ErrAlreadyRunning = errors.New("another supervisor is running")
)

// Config is everything Run needs; the CLI fills it from the environment.
type Config struct {
	Env          config.Env
	Self         string   // absolute path of the agent-box executable
	TmuxBin      string   // absolute path of tmux
	ProcEnv      []string // environment of the tmux server (and so of every session)
	Agents       config.Agents
	DefaultAgent string
	Version      string
	Log          io.Writer
	Clock        Clock         // nil: real time
	Policy       Policy        // zero: DefaultPolicy()
	Resync       time.Duration // zero: 5 minutes
}

// safePath is what may appear unquoted in the tmux hook's shell command.
var safePath = regexp.MustCompile(`^/[A-Za-z0-9/._+=@,:-]*$`)

type session struct {
	quick   int       // consecutive quick deaths
	started time.Time // last launch (zero if unknown)
	gen     int       // timer generation; a timer is current when gen matches
	waiting bool      // a delayed restart is pending
	stop    func() bool
	obs     observe.Session
}

type sup struct {
	cfg      Config
	tm       *tmux.Server
	clock    Clock
	sessions map[string]*session
	timerCh  chan timerMsg
	done     chan struct{}
	lastErr  string
	warned   map[string]bool
}

type timerMsg struct {
	name string
	gen  int
}

func (s *sup) logf(format string, a ...any) {
	fmt.Fprintf(s.cfg.Log, "agent-box: "+format+"\n", a...)
}

// Run supervises until ctx is cancelled (SIGTERM), then kills the tmux
// server, removes state.json and returns nil.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Policy == (Policy{}) {
		cfg.Policy = DefaultPolicy()
	}
	if cfg.Resync == 0 {
		cfg.Resync = 5 * time.Minute
	}
	env := cfg.Env
	for _, p := range []string{cfg.Self, env.RuntimeDir} {
		if !safePath.MatchString(p) {
			return fmt.Errorf("path %q has characters the tmux hook cannot carry (allowed: A-Z a-z 0-9 / . _ + = @ , : -)", p)
		}
	}
	if err := os.MkdirAll(env.RuntimeDir, 0o700); err != nil {
		return err
	}
	unlock, ok, err := atomicfile.TryLock(env.SupervisorLock())
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w (lock %s is held)", ErrAlreadyRunning, env.SupervisorLock())
	}
	defer unlock()
	if _, err := tmux.CheckVersion(ctx, cfg.TmuxBin); err != nil {
		return err
	}
	s := &sup{
		cfg:      cfg,
		clock:    cfg.Clock,
		tm:       &tmux.Server{Bin: cfg.TmuxBin, Socket: env.TmuxSocket(), Env: cfg.ProcEnv},
		sessions: map[string]*session{},
		timerCh:  make(chan timerMsg, 16),
		done:     make(chan struct{}),
		warned:   map[string]bool{},
	}
	defer close(s.done)

	if env.Seed != "" {
		if err := s.applySeed(); err != nil {
			s.logf("seed not applied: %v", err)
		}
	}
	if err := os.MkdirAll(env.ConfigDir, 0o700); err != nil {
		return err
	}
	adopted, err := s.startServer(ctx)
	if err != nil {
		return err
	}
	if adopted {
		s.logf("adopted the running tmux server on %s", env.TmuxSocket())
	}

	os.Remove(env.SupervisorSocket())
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: env.SupervisorSocket(), Net: "unixgram"})
	if err != nil {
		return err
	}
	defer os.Remove(env.SupervisorSocket())
	defer conn.Close()
	msgs := make(chan string, 64)
	go readDatagrams(conn, msgs, s.done)

	watch, err := watchDir(env.ConfigDir, filepath.Base(env.Registry()))
	if err != nil {
		return err
	}
	defer watch.Close()
	regCh := make(chan struct{}, 1)
	go watch.run(regCh)

	st := config.State{
		Format: config.StateFormat, PID: os.Getpid(), Version: cfg.Version,
		Socket: env.TmuxSocket(), Tmux: cfg.TmuxBin, Control: env.SupervisorSocket(),
		Agents: cfg.Agents, DefaultAgent: cfg.DefaultAgent, StartedAt: time.Now().UTC(),
	}
	if st.Agents == nil {
		st.Agents = config.Agents{}
	}
	if err := config.WriteState(env.StateFile(), st); err != nil {
		return err
	}
	defer os.Remove(env.StateFile())
	s.logf("supervising %s (tmux socket %s)", env.Registry(), env.TmuxSocket())

	s.reconcile(ctx)
	resync := time.NewTicker(cfg.Resync)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return s.shutdown()
		case <-regCh:
			s.reconcile(ctx)
		case m := <-msgs:
			s.handleMessage(ctx, m, msgs)
		case t := <-s.timerCh:
			s.timerFired(ctx, t)
		case <-resync.C:
			s.reconcile(ctx)
		}
	}
}

func (s *sup) shutdown() error {
	for _, ss := range s.sessions {
		if ss.stop != nil {
			ss.stop()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.tm.KillServer(ctx); err != nil && s.tm.Alive() {
		return fmt.Errorf("stopping tmux server: %w", err)
	}
	s.logf("stopped")
	return nil
}

func (s *sup) applySeed() error {
	seed, err := registry.LoadSeed(s.cfg.Env.Seed)
	if err != nil {
		return err
	}
	var added []string
	err = registry.Update(s.cfg.Env.Registry(), func(r *registry.Registry) error {
		added = registry.ApplySeed(r, seed, s.cfg.Env.Home, time.Now().UTC())
		if len(added) == 0 {
			return atomicfile.ErrNoChange
		}
		return nil
	})
	if err == nil && len(added) > 0 {
		s.logf("seed added %s", strings.Join(added, ", "))
	}
	return err
}

// startServer starts a fresh tmux server or re-adopts one carrying our token.
func (s *sup) startServer(ctx context.Context) (adopted bool, err error) {
	env := s.cfg.Env
	if s.tm.Alive() {
		tok, _ := os.ReadFile(env.TokenFile())
		got, err := s.tm.ServerOption(ctx, "@agent-box-token")
		if err != nil || len(tok) == 0 || got != strings.TrimSpace(string(tok)) {
			return false, fmt.Errorf("%w: %s", ErrForeignServer, env.TmuxSocket())
		}
		if err := s.writeConf(strings.TrimSpace(string(tok))); err != nil {
			return false, err
		}
		if _, err := s.tm.Run(ctx, "source-file", env.TmuxConf()); err != nil {
			return false, err
		}
		return true, nil
	}
	if err := os.Remove(env.TmuxSocket()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("removing stale socket: %w", err)
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return false, err
	}
	tok := hex.EncodeToString(b)
	if err := atomicfile.WriteFile(env.TokenFile(), []byte(tok+"\n"), 0o600); err != nil {
		return false, err
	}
	if err := s.writeConf(tok); err != nil {
		return false, err
	}
	if err := s.tm.Start(ctx, env.TmuxConf()); err != nil {
		return false, err
	}
	got, err := s.tm.ServerOption(ctx, "@agent-box-token")
	if err != nil || got != tok {
		return false, fmt.Errorf("tmux server on %s did not take our configuration (token %q): %v", env.TmuxSocket(), got, err)
	}
	return false, nil
}

// writeConf writes the generated tmux configuration. The pane-died hook
// runs `agent-box notify SOCKET pane-died PANE` in the background; both
// paths were checked against safePath, so no quoting is needed.
func (s *sup) writeConf(token string) error {
	env := s.cfg.Env
	conf := fmt.Sprintf(`# Generated by agent-box supervise at every start; do not edit.
set-option -s exit-empty off
set-option -s @agent-box-token %s
set-window-option -g remain-on-exit on
set-hook -g pane-died 'run-shell -b "%s notify %s pane-died #{pane_id}"'
`, token, s.cfg.Self, env.SupervisorSocket())
	return atomicfile.WriteFile(env.TmuxConf(), []byte(conf), 0o600)
}

func (s *sup) get(name string) *session {
	ss := s.sessions[name]
	if ss == nil {
		ss = &session{}
		obs, err := observe.Load(s.cfg.Env.ObservationsDir(), name)
		if err != nil {
			s.logf("observations of %q unreadable, starting afresh: %v", name, err)
			obs = observe.Session{Name: name}
		}
		ss.obs = obs
		ss.started = obs.LastStart
		s.sessions[name] = ss
	}
	return ss
}

func (s *sup) saveObs(ss *session) {
	if err := observe.Save(s.cfg.Env.ObservationsDir(), ss.obs); err != nil {
		s.logf("saving observations of %q: %v", ss.obs.Name, err)
	}
}

func (s *sup) errOnce(msg string) {
	if msg != s.lastErr {
		s.logf("%s", msg)
		s.lastErr = msg
	}
}

// reconcile makes tmux match the registry: launches missing sessions,
// handles dead panes, kills sessions that are removed or stopped.
func (s *sup) reconcile(ctx context.Context) {
	reg, err := registry.Load(s.cfg.Env.Registry())
	if err != nil {
		s.errOnce(fmt.Sprintf("%v (sessions left as they are until it is fixed)", err))
		return
	}
	panes, err := s.tm.ListPanes(ctx)
	if err != nil {
		s.errOnce(fmt.Sprintf("listing tmux panes: %v", err))
		return
	}
	s.lastErr = ""
	desired := map[string]registry.Session{}
	for _, e := range reg.Sessions {
		if !e.Stopped {
			desired[e.Name] = e
		}
	}
	live := map[string]tmux.Pane{}
	for _, p := range panes {
		if _, ok := live[p.Session]; !ok {
			live[p.Session] = p
		}
	}
	for name := range live {
		if _, ok := desired[name]; !ok {
			s.kill(ctx, name)
		}
	}
	for name, ss := range s.sessions {
		if _, ok := desired[name]; !ok {
			if ss.stop != nil {
				ss.stop()
			}
			delete(s.sessions, name)
		}
	}
	for name, e := range desired {
		p, ok := live[name]
		ss := s.get(name)
		switch {
		case ss.waiting:
			// a delayed restart is pending
		case !ok:
			s.launch(ctx, e, nil, false)
		case p.Dead:
			s.died(ctx, e, p)
		}
	}
}

func (s *sup) kill(ctx context.Context, name string) {
	if err := s.tm.KillSession(ctx, name); err != nil {
		s.logf("killing session %q: %v", name, err)
		return
	}
	s.logf("session %q killed (removed or stopped)", name)
}

// launch starts e in a new session, or respawns pane p when it is given.
func (s *sup) launch(ctx context.Context, e registry.Session, p *tmux.Pane, restart bool) {
	ss := s.get(e.Name)
	if _, ok := s.cfg.Agents[e.Agent]; !ok {
		if !s.warned[e.Name+"\x00"+e.Agent] {
			s.logf("session %q: unknown agent %q (known: %s); not started", e.Name, e.Agent, strings.Join(s.cfg.Agents.Names(), ", "))
			s.warned[e.Name+"\x00"+e.Agent] = true
		}
		return
	}
	argv := []string{s.cfg.Self, "exec-session", e.Name}
	var err error
	if p != nil {
		err = s.tm.RespawnPane(ctx, p.ID, e.Cwd, argv)
	} else {
		err = s.tm.NewSession(ctx, e.Name, e.Cwd, argv)
	}
	if err != nil {
		s.logf("starting session %q: %v", e.Name, err)
		return
	}
	now := s.clock.Now()
	ss.started = now
	ss.waiting = false
	ss.obs.Started(now.UTC(), restart)
	s.saveObs(ss)
}

// died handles the dead pane p of the desired session e.
func (s *sup) died(ctx context.Context, e registry.Session, p tmux.Pane) {
	ss := s.get(e.Name)
	now := s.clock.Now()
	ex := &observe.Exit{Status: -1, Signal: p.Signal, At: now.UTC()}
	if p.Status != "" {
		fmt.Sscan(p.Status, &ex.Status)
	}
	ss.obs.LastExit = ex
	if ex.Status == 0 {
		s.saveObs(ss)
		err := registry.Update(s.cfg.Env.Registry(), func(r *registry.Registry) error {
			cur, ok := r.Find(e.Name)
			if !ok || cur.Stopped {
				return atomicfile.ErrNoChange
			}
			cur.Stopped = true
			cur.Updated = time.Now().UTC()
			return nil
		})
		if err != nil {
			s.logf("session %q exited 0 but could not be parked: %v", e.Name, err)
			return
		}
		s.logf("session %q exited 0: parked (stopped)", e.Name)
		s.kill(ctx, e.Name)
		return
	}
	var uptime time.Duration
	if !ss.started.IsZero() {
		uptime = now.Sub(ss.started)
	}
	delay, quick := s.cfg.Policy.Next(ss.quick, uptime)
	ss.quick = quick
	how := "status " + p.Status
	if p.Status == "" {
		how = "signal " + p.Signal
	}
	if delay == 0 {
		s.logf("session %q died (%s) after %s: restarting", e.Name, how, uptime.Round(time.Millisecond))
		s.launch(ctx, e, &p, true)
		return
	}
	s.logf("session %q died (%s) after %s: restarting in %s", e.Name, how, uptime.Round(time.Millisecond), delay)
	ss.gen++
	ss.waiting = true
	next := now.Add(delay).UTC()
	ss.obs.NextStart = &next
	s.saveObs(ss)
	msg := timerMsg{e.Name, ss.gen}
	ss.stop = s.clock.AfterFunc(delay, func() {
		select {
		case s.timerCh <- msg:
		case <-s.done:
		}
	})
}

func (s *sup) timerFired(ctx context.Context, t timerMsg) {
	ss := s.sessions[t.name]
	if ss == nil || ss.gen != t.gen || !ss.waiting {
		return
	}
	ss.waiting = false
	ss.stop = nil
	s.restart(ctx, t.name)
}

// restart (re)launches name now if it is desired: respawning its pane if it
// has one, creating the session otherwise.
func (s *sup) restart(ctx context.Context, name string) {
	reg, err := registry.Load(s.cfg.Env.Registry())
	if err != nil {
		s.errOnce(err.Error())
		return
	}
	e, ok := reg.Find(name)
	if !ok || e.Stopped {
		return
	}
	ss := s.get(name)
	if ss.stop != nil {
		ss.stop()
		ss.stop = nil
	}
	ss.gen++
	ss.waiting = false
	panes, err := s.tm.ListPanes(ctx)
	if err != nil {
		s.logf("listing tmux panes: %v", err)
		return
	}
	for _, p := range panes {
		if p.Session == name {
			s.launch(ctx, *e, &p, true)
			return
		}
	}
	s.launch(ctx, *e, nil, true)
}

// handleMessage handles one control datagram:
//
//	pane-died PANE   from the tmux hook
//	restart NAME     from `agent-box session restart NAME`
//	restart-all      from `agent-box session restart --all`
func (s *sup) handleMessage(ctx context.Context, m string, more chan string) {
	f := strings.Fields(m)
	if len(f) == 0 {
		return
	}
	switch {
	case f[0] == "pane-died":
		// coalesce a burst of deaths into one reconcile
		for {
			select {
			case m2 := <-more:
				if !strings.HasPrefix(m2, "pane-died") {
					s.reconcile(ctx)
					s.handleMessage(ctx, m2, more)
					return
				}
				continue
			default:
			}
			break
		}
		s.reconcile(ctx)
	case f[0] == "restart" && len(f) == 2 && registry.ValidName(f[1]):
		s.logf("session %q: restart requested", f[1])
		s.restart(ctx, f[1])
	case f[0] == "restart-all" && len(f) == 1:
		reg, err := registry.Load(s.cfg.Env.Registry())
		if err != nil {
			s.errOnce(err.Error())
			return
		}
		s.logf("restart of all sessions requested")
		for _, e := range reg.Sessions {
			if !e.Stopped {
				s.restart(ctx, e.Name)
			}
		}
	default:
		s.logf("ignoring control message %q", m)
	}
}

func readDatagrams(conn *net.UnixConn, out chan<- string, done <-chan struct{}) {
	buf := make([]byte, 4096)
	for {
		n, _, err := conn.ReadFromUnix(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		select {
		case out <- string(buf[:n]):
		case <-done:
			return
		}
	}
}

// Notify sends one control datagram to the supervisor socket at path.
func Notify(path, msg string) error {
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Write([]byte(msg))
	return err
}

// IsNotListening reports whether err from Notify means nobody reads the socket.
func IsNotListening(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT)
}
