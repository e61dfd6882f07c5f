// Package supervisor is `agent-box supervise`: it keeps every listed,
// non-stopped session of the registry alive in the user's tmux server.
//
// The server is not the supervisor's: it runs in the sessions unit
// (package sessionsrv), so restarting, crashing or upgrading the
// supervisor ends no agent. The supervisor adopts the server it finds
// (after sessionsrv's checks) and never starts one; when the server exits
// it waits for the next one and adopts that.
//
// It is event driven. Four sources wake it up: inotify on the registry's
// directory and the ones above it (registry edits), a pidfd per session
// process (exits), datagrams on its control socket (`agent-box session
// restart`), and its own timers (backoff, coalesced restart requests). A
// slow safety-net resync (every 5 minutes) repairs anything an event could
// have missed.
//
// The registry is a file any process of the user can replace, so what the
// supervisor does follows from the registry's content, never from how the
// file changed: it ends a session only when a valid registry marks it
// stopped or tombstones its name; a session it keeps that the registry
// lacks is written back, and a missing registry is rebuilt. See
// docs/runtime-contract.md.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/atomicfile"
	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/control"
	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/filewatch"
	"github.com/agent-box/agent-box/internal/runtime/journal"
	"github.com/agent-box/agent-box/internal/runtime/observe"
	"github.com/agent-box/agent-box/internal/runtime/oomkills"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/sessionsrv"
	"github.com/agent-box/agent-box/internal/runtime/spawn"
	"github.com/agent-box/agent-box/internal/runtime/state"
	"github.com/agent-box/agent-box/internal/runtime/tmux"
	"github.com/agent-box/agent-box/internal/runtime/usagelimit"
)

// errAlreadyRunning means another supervisor holds the lock.
var errAlreadyRunning = errors.New("another supervisor is running")

// resyncEvery is the period of the safety-net reconcile.
const resyncEvery = 5 * time.Minute

// Control datagrams (package control) longer than control.MaxDatagram are
// cut there when read and ignored. A log line shows at most logBytes of an
// ignored one, and after one such line the others are only counted until
// junkWindow has passed.
const (
	maxDatagram = control.MaxDatagram
	logBytes    = 64
	junkWindow  = time.Minute
)

// Config is everything Run needs; the CLI fills it from the environment.
type Config struct {
	Env paths.Env
	// Spawn is the absolute path of the program tmux runs in each pane
	// as `Spawn exec-session NAME`: agent-box-exec beside agent-box.
	Spawn        string
	TmuxBin      string   // absolute path of the configured tmux (the server may run an older one)
	ProcEnv      []string // environment of the supervisor's tmux clients
	SpawnEnv     []string // environment of new sessions (spawn.ForSessions), written to the runtime dir
	Agents       agents.Table
	DefaultAgent string
	Version      string
	Log          io.Writer
	// SilenceAfter: a session whose output stops for this long (whole
	// seconds) while no client shows it is finished (tmux's
	// monitor-silence); 0: not watched.
	SilenceAfter time.Duration
	// AuthStatus is the auth service's status socket, where the
	// supervisor reports its user's attention states ("": not reported).
	AuthStatus string
	// Limits: when and how a session limited by its account's usage
	// limit resumes (limits.go); the zero value is DefaultLimits.
	Limits Limits
}

// session is what the supervisor keeps for one session it supervises:
// launched, adopted, or waiting to be started.
type session struct {
	name    string
	entry   registry.Session // as last listed: what it launched (written back if lost)
	pid     int              // process of the session's pane being watched (0: none)
	unwatch func()           // stops the pidfd watch of pid
	quick   int              // consecutive quick deaths
	started time.Time        // last launch (zero if unknown)
	gen     int              // timer generation; a timer is current when gen matches
	waiting bool             // a delayed restart is pending
	stop    func() bool
	obs     observe.Session
	req     gate        // requested restarts
	healthy func() bool // stops the timer that ends crash-looping
	// stops the timer of the next try of a usage limit (limits.go)
	limitStop func() bool
	// stops the timer of the next read of a Codex turn's end, and the last
	// turn whose end was told (turnlog.go)
	turnStop func() bool
	turnFrom time.Time // when the reads began (an agent's event, an adoption)
	turnSize int64     // the rollout's size at the last read
	turnOpen bool      // the last read found the newest turn open
}

type sup struct {
	cfg      Config
	log      *journal.Logger
	tm       *tmux.Server
	clock    clock
	policy   policy
	sessions map[string]*session
	timerCh  chan timerMsg
	exitCh   chan pidExit
	retryCh  chan struct{}
	reqCh    chan reqMsg
	junkCh   chan struct{}
	done     chan struct{}
	// retryPending is set while a reconcile retry after a tmux error waits
	retryPending bool
	lastErr      string
	srv          *sessionsrv.Server // the adopted server; nil while there is none
	state        *state.State       // state.json once written (adopt rewrites its tmux)
	unwatchSrv   func()             // stops the pidfd watch of srv
	spawnPrints  map[string]string  // agent -> spawn.Fingerprint of a new session
	warned       map[string]bool
	reqAll       gate // requested restarts of all sessions
	junkOpen     bool // an ignored datagram was logged less than junkWindow ago
	junk         int  // ignored datagrams since then, not logged
	regWatch     *filewatch.Watcher
	// the tmux alerts watcher (alerts.go)
	alertCh      chan alertsMsg
	watchRetryCh chan struct{}
	watching     int                   // pid of the server the watcher runs for (0: none)
	stopWatcher  context.CancelFunc    // ends it
	alerts       map[string]tmux.Alert // its last value
	watchFails   int                   // failed starts in a row
	watchWait    bool                  // a retry is scheduled
	// the attention report to the auth service (report.go)
	report *reporter
	attn   map[string]attention.Status // every session with a state
	// the seed's names, once read (seedKnown; without a seed: none), whose
	// tombstones pruneTombstones keeps
	seedNames map[string]bool
	seedKnown bool
	// the sessions unit's count of OOM kills when last looked at (oomKilled)
	oomKills uint64
	oomKnown bool
	// a reconcile after work that failed (again): a park, a start
	againCh      chan struct{}
	againPending bool          // its timer waits
	againDelay   time.Duration // its next wait; 0 after one that worked
	// usage limits (limits.go): due tries, the resumes' slots, the jitter
	limitCh chan limitMsg
	turnCh  chan string   // a Codex session whose turn's end is to be read
	replyCh chan replyMsg // a person's reply from the inbox (replies.go)
	typing  sync.Mutex    // held while a reply is typed
	slots   *usagelimit.Slots
	draw    func(time.Duration) time.Duration
}

type timerMsg struct {
	name string
	gen  int
	// pid: a healthy check (the start of pid stayed up for the quick
	// window), not a restart
	pid int
}

// reqMsg is a folded restart request that is due: of ss, or of all sessions.
type reqMsg struct {
	ss  *session
	all bool
}

// datagram is one control message as read.
type datagram struct {
	data []byte // its first maxDatagram bytes at most
	size int    // its real size
}

// logf writes one log line. Every argument that carries text a user (or a
// user's agent) could have written goes through quote or errText, so that
// it is quoted as well as escaped (journal escapes the line as a whole).
func (s *sup) logf(format string, a ...any) {
	s.log.Printf(format, a...)
}

// quote is user-controlled text (a name, path, argument) in a log line:
// quoted, with control bytes and the like escaped.
func quote(text string) string { return `"` + escape.String(text) + `"` }

// errText is an error in a log line, escaped: errors carry paths, names,
// tmux's stderr and bytes of files.
func errText(err error) string { return escape.String(err.Error()) }

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	return strings.Join(q, ", ")
}

// warnOnce logs a line the first time key is seen.
func (s *sup) warnOnce(key, format string, a ...any) {
	if !s.warned[key] {
		s.warned[key] = true
		s.logf(format, a...)
	}
}

// registryError logs (once) a registry that cannot be read; nothing is
// changed until it can.
func (s *sup) registryError(err error) {
	s.errOnce(fmt.Sprintf("%s (sessions left as they are until it is fixed)", errText(err)))
}

func tombstoned(r *registry.Registry, name string) bool {
	for _, t := range r.Tombstones {
		if t == name {
			return true
		}
	}
	return false
}

func missingFile(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// current reads the registry after writing back what it lacks (see
// restore). An unreadable or corrupt registry is an error: the caller
// changes nothing.
func (s *sup) current(ctx context.Context) (*registry.Registry, error) {
	reg, err := registry.Load(s.cfg.Env.Registry())
	if err != nil {
		return nil, err
	}
	if s.restore(ctx, reg) {
		return registry.Load(s.cfg.Env.Registry())
	}
	return reg, nil
}

// restore writes back into the registry every session the supervisor
// keeps that reg neither lists nor tombstones (the file was removed, moved
// or replaced: `session rm` would have left a tombstone), and, when the
// file is missing, the seed. It reports whether it wrote. A failure is
// logged; the sessions stay as they are, and the next reconcile tries
// again.
func (s *sup) restore(ctx context.Context, reg *registry.Registry) bool {
	path := s.cfg.Env.Registry()
	var lost []registry.Session
	for name, ss := range s.sessions {
		if _, ok := reg.Find(name); !ok && !tombstoned(reg, name) {
			lost = append(lost, ss.entry)
		}
	}
	sort.Slice(lost, func(i, j int) bool { return lost[i].Name < lost[j].Name })
	var seed *registry.Seed
	if s.cfg.Env.Seed != "" && len(reg.Sessions) == 0 && len(reg.Tombstones) == 0 && missingFile(path) {
		var err error
		if seed, err = registry.LoadSeed(s.cfg.Env.Seed); err != nil {
			s.warnOnce("seed\x00"+err.Error(), "seed not applied to the rebuilt registry: %s", errText(err))
		}
	}
	if len(lost) == 0 && (seed == nil || len(seed.Sessions) == 0) {
		return false
	}
	var back, seeded []string
	rebuilt := false
	now := time.Now().UTC()
	err := registry.Update(ctx, path, func(r *registry.Registry) error {
		// under the lock: decide again on what is there now
		back, seeded, rebuilt = nil, nil, missingFile(path)
		for _, e := range lost {
			if _, ok := r.Find(e.Name); ok || tombstoned(r, e.Name) {
				continue
			}
			if r.Add(e) == nil { // from a valid registry: cannot fail
				back = append(back, e.Name)
			}
		}
		if seed != nil && rebuilt {
			seeded = registry.ApplySeed(r, seed, s.cfg.Env.Home, now)
			s.seedPrompts(seed, seeded)
		}
		if len(back)+len(seeded) == 0 {
			return registry.ErrNoChange
		}
		return nil
	})
	if err != nil {
		names := make([]string, len(lost))
		for i, e := range lost {
			names[i] = e.Name
		}
		s.errOnce(fmt.Sprintf("cannot write back sessions missing from the registry (%s): %s (left as they are)", quoteAll(names), errText(err)))
		return false
	}
	switch {
	case len(back)+len(seeded) == 0:
		return false
	case rebuilt:
		from := fmt.Sprintf("the supervised sessions [%s]", quoteAll(back))
		if len(seeded) > 0 {
			from += fmt.Sprintf(" and the seed's [%s]", quoteAll(seeded))
		}
		s.logf("registry %s was missing: rebuilt with %s", quote(path), from)
	default:
		for _, n := range back {
			s.logf("session %s is missing from the registry but was not removed with 'session rm': written back", quote(n))
		}
	}
	return true
}

// Run supervises until ctx is cancelled (SIGTERM), then kills the tmux
// server, removes state.json and returns nil.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	env := cfg.Env
	if !filepath.IsAbs(cfg.Spawn) || strings.HasSuffix(cfg.Spawn, ";") {
		// tmux would read a trailing ';' as a command separator
		return fmt.Errorf("executable path %q must be absolute and not end in ';'", cfg.Spawn)
	}
	if err := tmux.CheckVersion(ctx, cfg.TmuxBin); err != nil {
		return err
	}
	// The runtime directory is the sessions unit's (RuntimeDirectory=,
	// made 0700 by `agent-box tmux-server`); the supervisor only writes
	// into it.
	if fi, err := os.Stat(env.RuntimeDir); err != nil {
		return fmt.Errorf("the runtime directory (created by %s): %w", sessionsrv.Unit(), err)
	} else if fi.Mode().Perm() != 0o700 {
		return fmt.Errorf("the runtime directory %s has mode %04o, not 0700 (%s makes it so)", env.RuntimeDir, fi.Mode().Perm(), sessionsrv.Unit())
	}
	unlock, ok, err := atomicfile.TryLock(env.SupervisorLock())
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w (lock %s is held)", errAlreadyRunning, env.SupervisorLock())
	}
	defer unlock()
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits()
	}
	if err := cfg.Limits.Policy.Check(); err != nil {
		return fmt.Errorf("usage limits: %w", err)
	}
	s := &sup{
		cfg:          cfg,
		log:          journal.New(cfg.Log, "agent-box"),
		clock:        realClock{},
		policy:       defaultPolicy(),
		tm:           &tmux.Server{Bin: cfg.TmuxBin, Socket: env.TmuxSocket(), Env: cfg.ProcEnv},
		spawnPrints:  spawn.Fingerprints(cfg.SpawnEnv, cfg.Spawn, cfg.Agents),
		sessions:     map[string]*session{},
		timerCh:      make(chan timerMsg, 16),
		exitCh:       make(chan pidExit, 16),
		retryCh:      make(chan struct{}, 1),
		againCh:      make(chan struct{}, 1),
		reqCh:        make(chan reqMsg, 16),
		junkCh:       make(chan struct{}, 1),
		alertCh:      make(chan alertsMsg, 64),
		watchRetryCh: make(chan struct{}, 1),
		done:         make(chan struct{}),
		warned:       map[string]bool{},
		limitCh:      make(chan limitMsg, 16),
		turnCh:       make(chan string, 16),
		replyCh:      make(chan replyMsg, 16),
		slots:        usagelimit.NewSlots(cfg.Limits.Policy.PerMinute),
		draw:         jitter,
	}
	defer close(s.done)
	if cfg.AuthStatus != "" {
		s.report, s.attn = newReporter(cfg.AuthStatus, s.log), map[string]attention.Status{}
		go s.report.run(s.done)
		go s.pollReplies(s.done)
	}

	if env.Seed != "" {
		if err := s.applySeed(); err != nil {
			s.logf("seed not applied: %s", errText(err))
		}
	} else {
		s.seedKnown = true
	}
	if err := os.MkdirAll(env.ConfigDir, 0o700); err != nil {
		return err
	}
	// The web daemon may write only in these (its unit's ReadWritePaths=),
	// so they must exist before the daemon starts: the hooks' deliveries,
	// and the conversation files its add and remove write.
	for _, d := range []string{env.HooksDir(), env.ConversationsDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := spawn.WriteEnv(env.SpawnEnvFile(), cfg.SpawnEnv); err != nil {
		return err
	}
	if err := s.adoptAtStart(ctx); err != nil {
		return err
	}

	os.Remove(env.SupervisorSocket())
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: env.SupervisorSocket(), Net: "unixgram"})
	if err != nil {
		return err
	}
	defer os.Remove(env.SupervisorSocket())
	defer conn.Close()
	msgs := make(chan datagram, 64)
	go readDatagrams(conn, msgs, s.done)

	os.Remove(env.ApprovalSocket())
	al, err := net.Listen("unix", env.ApprovalSocket())
	if err != nil {
		return err
	}
	defer os.Remove(env.ApprovalSocket())
	go s.serveApprovals(al, s.done)

	watch, err := filewatch.Watch(env.Home, env.ConfigDir, filepath.Base(env.Registry()))
	if err != nil {
		return err
	}
	defer watch.Close()
	s.regWatch = watch
	s.checkWatch()
	regCh := make(chan struct{}, 1)
	go watch.Run(regCh)

	st := state.State{
		Format: state.Format, PID: os.Getpid(), Version: cfg.Version,
		Socket: env.TmuxSocket(), Tmux: s.tm.Bin, TmuxInstalled: cfg.TmuxBin, Control: env.SupervisorSocket(),
		Agents: cfg.Agents, DefaultAgent: cfg.DefaultAgent, StartedAt: time.Now().UTC(),
		Spawn: s.spawnPrints,
	}
	if st.Agents == nil {
		st.Agents = agents.Table{}
	}
	if err := state.Write(env.StateFile(), st); err != nil {
		return err
	}
	s.state = &st
	defer os.Remove(env.StateFile())
	s.logf("supervising %s (tmux socket %s)", quote(env.Registry()), quote(env.TmuxSocket()))

	s.reconcile(ctx)
	resync := time.NewTicker(resyncEvery)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return s.shutdown()
		case <-regCh:
			s.checkWatch()
			s.reconcile(ctx)
		case m := <-msgs:
			s.handleMessage(ctx, m)
		case t := <-s.timerCh:
			s.timerFired(ctx, t)
		case m := <-s.reqCh:
			s.foldedRestart(ctx, m)
		case <-s.junkCh:
			s.junkWindowEnded()
		case m := <-s.alertCh:
			s.alertsChanged(ctx, m)
		case <-s.watchRetryCh:
			s.watchWait = false
			s.startWatcher(ctx)
		case x := <-s.exitCh:
			s.exited(ctx, x)
		case <-s.retryCh:
			s.retryPending = false
			s.reconcile(ctx)
		case <-s.againCh:
			s.againPending = false
			s.reconcile(ctx)
		case m := <-s.limitCh:
			s.limitDue(ctx, m)
		case name := <-s.turnCh:
			s.turnDue(name)
		case m := <-s.replyCh:
			s.replied(ctx, m)
		case <-resync.C:
			// also the only way back after HOME itself was re-created
			s.regWatch.Arm()
			s.checkWatch()
			s.reconcile(ctx)
		}
	}
}

// checkWatch logs (once per distinct error) when the registry's directory
// cannot be watched.
func (s *sup) checkWatch() {
	if err := s.regWatch.Err(); err != nil {
		s.warnOnce("watch\x00"+err.Error(), "cannot watch the registry: %s (the resync every %s still applies)", errText(err), resyncEvery)
	}
}

func (s *sup) shutdown() error {
	for _, ss := range s.sessions {
		if ss.stop != nil {
			ss.stop()
		}
		s.unwatch(ss)
	}
	if s.unwatchSrv != nil {
		s.unwatchSrv()
	}
	s.stopWatching()
	// The server and the agents are the sessions unit's: they keep running.
	s.logf("stopped (the sessions keep running in %s)", sessionsrv.Unit())
	return nil
}

func (s *sup) applySeed() error {
	seed, err := registry.LoadSeed(s.cfg.Env.Seed)
	if err != nil {
		return err
	}
	s.seedNames, s.seedKnown = map[string]bool{}, true
	for _, e := range seed.Sessions {
		s.seedNames[e.Name] = true
	}
	var added []string
	err = registry.Update(context.Background(), s.cfg.Env.Registry(), func(r *registry.Registry) error {
		added = registry.ApplySeed(r, seed, s.cfg.Env.Home, time.Now().UTC())
		if len(added) == 0 {
			return registry.ErrNoChange
		}
		s.seedPrompts(seed, added)
		return nil
	})
	if err == nil && len(added) > 0 {
		s.logf("seed added %s", quoteAll(added))
	}
	return err
}

// seedPrompts gives seeded sessions their kickoff prompts (under the
// registry's lock, before any of them can start), leaving every session
// that has a conversation file as it is.
func (s *sup) seedPrompts(seed *registry.Seed, names []string) {
	for _, n := range names {
		if err := conversation.Seed(context.Background(), s.cfg.Env.ConversationsDir(), n, seed.Prompt(n)); err != nil {
			s.logf("session %s: cannot record its kickoff prompt: %s", escape.Quote(n, 64), errText(err))
		}
	}
}

// adoptWait bounds how long a starting supervisor waits for the server
// before it goes on without one (and adopts it when it comes).
const adoptWait = 5 * time.Second

// adoptAtStart adopts the server, waiting adoptWait for it to listen (the
// sessions unit is Type=simple: "started" as soon as tmux is exec'd). A
// foreign server is an error; no server is not (reconcile retries).
func (s *sup) adoptAtStart(ctx context.Context) error {
	deadline := time.Now().Add(adoptWait)
	for {
		err := s.adopt(ctx)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, sessionsrv.ErrNoServer):
			return err
		case time.Now().After(deadline):
			s.errOnce(fmt.Sprintf("%s (waiting for it)", errText(err)))
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// adopt checks and adopts the server on the socket (sessionsrv.Adopt):
// the supervisor's tmux clients then run the server's own program, and a
// pidfd reports the server's exit.
func (s *sup) adopt(ctx context.Context) error {
	srv, err := sessionsrv.Adopt(ctx, s.cfg.Env, s.cfg.TmuxBin, s.cfg.ProcEnv)
	if err != nil {
		return err
	}
	stop, err := watchPID(srv.PID, serverKey, s.exitCh, s.done)
	if err != nil {
		return fmt.Errorf("watching the tmux server (pid %d): %w", srv.PID, err)
	}
	if s.unwatchSrv != nil {
		s.unwatchSrv()
	}
	s.srv, s.unwatchSrv, s.tm = srv, stop, srv.Server
	if a, errA := os.Stat(srv.Bin); errA == nil {
		if b, errB := os.Stat(s.cfg.TmuxBin); errB == nil && !os.SameFile(a, b) {
			s.logf("the tmux server runs %s; %s is installed and takes over when %s restarts", quote(srv.Bin), quote(s.cfg.TmuxBin), sessionsrv.Unit())
		}
	}
	s.logf("adopted the tmux server (pid %d) on %s", srv.PID, quote(s.cfg.Env.TmuxSocket()))
	s.oomKilled() // the kills before are no session's of this supervisor
	if s.state != nil && s.state.Tmux != srv.Bin {
		s.state.Tmux = srv.Bin
		if err := state.Write(s.cfg.Env.StateFile(), *s.state); err != nil {
			s.logf("rewriting state.json: %s", errText(err))
		}
	}
	return nil
}

// serverKey is the name under which the server's pidfd reports its exit
// (no session has it: session names have no NUL).
const serverKey = "\x00server"

// serverGone handles the adopted server's exit: every session died with
// it; reconcile adopts the next server (the sessions unit restarts it)
// and starts them again.
func (s *sup) serverGone(ctx context.Context, pid int) {
	if s.srv == nil || s.srv.PID != pid {
		return
	}
	s.logf("the tmux server (pid %d) exited; waiting for the next one of %s", pid, sessionsrv.Unit())
	s.unwatchSrv()
	s.srv, s.unwatchSrv = nil, nil
	s.stopWatching()
	for _, ss := range s.sessions {
		s.unwatch(ss)
	}
	s.reconcile(ctx)
}

// get returns what the supervisor keeps for e (creating it), with e as the
// entry it launches.
func (s *sup) get(e registry.Session) *session {
	ss := s.sessions[e.Name]
	if ss == nil {
		ss = &session{name: e.Name}
		obs, err := observe.Load(s.cfg.Env.ObservationsDir(), e.Name)
		if err != nil {
			s.logf("observations of %s unreadable, starting afresh: %s", quote(e.Name), errText(err))
			obs = observe.Session{Name: e.Name}
		}
		ss.obs = obs
		ss.started = startedAt(obs.LastStart, s.clock.Now())
		s.sessions[e.Name] = ss
		s.rearmLimit(ss)
	}
	ss.entry = e
	return ss
}

// startedAt is the start time of a session the supervisor did not start
// itself (adopted, or known from its observations), as a reading of now's
// clock: last is wall time only (read back from the observations), and an
// uptime taken from it would follow every step of the wall clock (a
// negative one after a step back). The result carries now's monotonic
// reading, so later uptimes are monotonic; a last in the future (the wall
// clock stepped back since) counts from now.
func startedAt(last, now time.Time) time.Time {
	if last.IsZero() {
		return time.Time{}
	}
	ago := now.Round(0).Sub(last)
	if ago < 0 {
		ago = 0
	}
	return now.Add(-ago)
}

// forget stops supervising name: its timers and its pidfd watch end.
func (s *sup) forget(name string) {
	ss := s.sessions[name]
	if ss == nil {
		return
	}
	if ss.stop != nil {
		ss.stop()
	}
	if ss.healthy != nil {
		ss.healthy()
	}
	if a := ss.obs.Attention; a != nil {
		s.unlimit(ss, *a)
	}
	if ss.turnStop != nil {
		ss.turnStop()
	}
	s.unwatch(ss)
	delete(s.sessions, name)
}

func (s *sup) saveObs(ss *session) {
	if err := observe.Save(s.cfg.Env.ObservationsDir(), ss.obs); err != nil {
		s.logf("saving observations of %s: %s", quote(ss.obs.Name), errText(err))
	}
}

func (s *sup) errOnce(msg string) {
	if msg != s.lastErr {
		s.logf("%s", msg)
		s.lastErr = msg
	}
}

// reconcile makes tmux match the registry: launches missing sessions,
// handles dead panes, ends sessions the registry marks stopped or
// tombstones, and makes sure every live session process is watched.
func (s *sup) reconcile(ctx context.Context) {
	reg, err := s.current(ctx)
	if err != nil {
		s.registryError(err)
		return
	}
	var panes []tmux.Pane
	if s.srv == nil {
		err = s.adopt(ctx)
	}
	if err == nil {
		panes, err = s.tm.ListPanes(ctx)
	}
	if err != nil {
		// no server yet (the sessions unit restarts it), or one still
		// shutting down: look again in a second (one retry pending at a
		// time; it stops as soon as a reconcile works)
		s.errOnce(fmt.Sprintf("tmux: %s (retrying)", errText(err)))
		if !s.retryPending {
			s.retryPending = true
			s.clock.AfterFunc(time.Second, func() {
				select {
				case s.retryCh <- struct{}{}:
				case <-s.done:
				}
			})
		}
		return
	}
	s.lastErr = ""
	s.startWatcher(ctx)
	live := map[string]tmux.Pane{}
	for _, p := range panes {
		if _, ok := live[p.Session]; !ok {
			live[p.Session] = p
		}
	}
	// The content rule: only a stopped entry or a tombstone ends a session.
	ended := func(name string) (bool, string) {
		if e, ok := reg.Find(name); ok {
			return e.Stopped, "stopped"
		}
		return tombstoned(reg, name), "removed"
	}
	for name := range live {
		if end, why := ended(name); end {
			if s.kill(ctx, name, why) {
				delete(live, name) // gone: its tombstone may go too
			}
		} else if _, listed := reg.Find(name); !listed && s.sessions[name] == nil {
			s.warnOnce("foreign\x00"+name, "tmux session %s was not started by agent-box and is not in the registry: left alone", quote(name))
		}
	}
	for name, ss := range s.sessions {
		if end, _ := ended(name); end {
			if ss.obs.Attention != nil && ss.obs.Attention.State != attention.Exited {
				s.setAttention(ss, attention.Event{Kind: attention.Stopped})
				s.saveObs(ss)
			}
			s.forget(name)
		}
	}
	var fresh []registry.Session // to start, all in one tmux command list
	for _, e := range reg.Sessions {
		if e.Stopped {
			continue
		}
		p, ok := live[e.Name]
		ss := s.get(e)
		switch {
		case ss.waiting:
			// a delayed restart is pending
		case !ok:
			fresh = append(fresh, e)
		case ss.pid == p.PID && ss.unwatch != nil:
			// watched: its pidfd reports the exit
		case p.Dead && p.PID <= 0:
			// its start failed (launch logged why): no death, a retry
			s.launch(ctx, e, &p, true)
		case p.Dead:
			st, sig := paneStatus(p)
			s.died(ctx, e, p, st, sig)
		default:
			s.watch(ss, e.Name, p.PID)
			s.watchTurn(ss) // an adopted Codex may be in a turn
		}
	}
	s.launchNew(ctx, fresh)
	s.loadExited(reg)
	s.pruneTombstones(ctx, reg, live)
}

// pruneTombstones drops the tombstones that keep nothing away, so removed
// names do not pile up in the registry (each `session rm` leaves one). A
// tombstone keeps a removed seed session from being seeded again, and a
// session still live in tmux (this reconcile's kill failed, or it is not
// the supervisor's to end), or that the supervisor still keeps, from being
// written back (restore): those stay. A removed session's own tombstone
// goes in the reconcile that kills it. Without a readable seed nothing is
// dropped. It writes only when there is one to drop.
func (s *sup) pruneTombstones(ctx context.Context, reg *registry.Registry, live map[string]tmux.Pane) {
	if !s.seedKnown {
		return
	}
	keep := func(name string) bool {
		_, isLive := live[name]
		return isLive || s.seedNames[name] || s.sessions[name] != nil
	}
	if !slices.ContainsFunc(reg.Tombstones, func(n string) bool { return !keep(n) }) {
		return
	}
	dropped := 0
	err := registry.Update(ctx, s.cfg.Env.Registry(), func(r *registry.Registry) error {
		if dropped = r.PruneTombstones(keep); dropped == 0 {
			return registry.ErrNoChange
		}
		return nil
	})
	if err != nil {
		s.warnOnce("prune\x00"+err.Error(), "removed names (tombstones) not pruned: %s", errText(err))
	}
}

// launchBatch bounds a tmux command list of new sessions (tmux reads a
// client's command in one message of at most 16 KiB).
const launchBatch = 16

// launchNew starts sessions that have no tmux session, launchBatch per
// tmux command list: one tmux client for many (200 added at once started
// 200 clients one after another). A list stops at its first failure; the
// sessions from there on are started one by one, so each failure is
// logged as its own.
func (s *sup) launchNew(ctx context.Context, es []registry.Session) {
	var known []registry.Session
	for _, e := range es {
		if s.knownAgent(e) {
			known = append(known, e)
		}
	}
	for len(known) > 0 {
		batch := known[:min(len(known), launchBatch)]
		known = known[len(batch):]
		if len(batch) == 1 {
			s.launch(ctx, batch[0], nil, false)
			continue
		}
		specs := make([]tmux.NewSpec, len(batch))
		for i, e := range batch {
			s.unwatch(s.get(e))
			specs[i] = tmux.NewSpec{Name: e.Name, Argv: s.argv(e)}
		}
		pids, err := s.tm.NewSessions(ctx, specs)
		for i, pid := range pids {
			s.started(s.get(batch[i]), batch[i].Name, pid, false)
		}
		if err != nil {
			for _, e := range batch[len(pids):] {
				s.launch(ctx, e, nil, false)
			}
		}
	}
}

// paneStatus is the exit of a dead pane: tmux's status if it has one, else
// the zombie's status from /proc, else "killed by an unknown signal".
func paneStatus(p tmux.Pane) (status int, signal string) {
	if p.Status != "" {
		if n, err := strconv.Atoi(p.Status); err == nil {
			return n, ""
		}
	}
	if p.Signal != "" {
		return -1, p.Signal
	}
	if ws, ok := zombieStatus(p.PID); ok {
		if ws.Exited() {
			return ws.ExitStatus(), ""
		}
		return -1, strconv.Itoa(int(ws.Signal()))
	}
	return -1, "?"
}

func (s *sup) watch(ss *session, name string, pid int) {
	if ss.pid == pid && ss.unwatch != nil {
		return
	}
	s.unwatch(ss)
	stop, err := watchPID(pid, name, s.exitCh, s.done)
	if err != nil {
		s.logf("session %s: cannot watch pid %d (resync will notice its exit): %s", quote(name), pid, errText(err))
		return
	}
	ss.pid, ss.unwatch = pid, stop
}

func (s *sup) unwatch(ss *session) {
	if ss.unwatch != nil {
		ss.unwatch()
	}
	ss.pid, ss.unwatch = 0, nil
}

// exited handles the exit of a watched session process.
func (s *sup) exited(ctx context.Context, x pidExit) {
	if x.name == serverKey {
		s.serverGone(ctx, x.pid)
		return
	}
	if s.srv == nil {
		return // the server is gone; reconcile handles the sessions
	}
	ss := s.sessions[x.name]
	if ss == nil || ss.pid != x.pid {
		return // stale: the session was restarted, stopped or removed
	}
	s.unwatch(ss)
	reg, err := registry.Load(s.cfg.Env.Registry())
	if err != nil {
		s.registryError(err)
		return
	}
	e, ok := reg.Find(x.name)
	if !ok || e.Stopped {
		// stopped, removed, or lost from the registry (reconcile writes it
		// back and then handles the dead pane)
		s.reconcile(ctx)
		return
	}
	if s.restartNow(ctx, ss, *e, x.pid) {
		return
	}
	// The status is in /proc while the process is a zombie and in tmux once
	// tmux reaped it. Right at the exit neither may have it yet: look again
	// for a short, bounded time (this only runs after an exit event).
	deadline := time.Now().Add(500 * time.Millisecond)
	for {
		if zs, ok := zombieStatus(x.pid); ok {
			p, ok := s.paneOf(ctx, x.name, x.pid)
			switch {
			case !ok:
				s.reconcile(ctx) // replaced meanwhile, or tmux is gone
			case zs.Exited():
				s.died(ctx, *e, p, zs.ExitStatus(), "")
			default:
				s.died(ctx, *e, p, -1, strconv.Itoa(int(zs.Signal())))
			}
			return
		}
		p, ok := s.paneOf(ctx, x.name, x.pid)
		if !ok {
			s.reconcile(ctx) // replaced meanwhile, or the session vanished
			return
		}
		if p.Status != "" || p.Signal != "" || time.Now().After(deadline) {
			st, sig := paneStatus(p)
			s.died(ctx, *e, p, st, sig)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// restartNow is the fast path of a death whose restart would not wait
// (the backoff's delay is 0): one tmux client reads the exit and, unless
// the process exited 0, respawns the session in the same command list
// (tmux.RespawnFailed), where the careful path below needs one client to
// read the pane and another to respawn it. It reports false, having
// changed nothing, whenever the careful path must decide: a restart that
// waits, tmux not having reaped the process yet, exit 0 (parking), or an
// error.
func (s *sup) restartNow(ctx context.Context, ss *session, e registry.Session, pid int) bool {
	now := s.clock.Now()
	var uptime time.Duration
	if !ss.started.IsZero() {
		uptime = now.Sub(ss.started)
	}
	delay, quick := s.policy.next(ss.quick, uptime)
	if delay != 0 || !s.knownAgent(e) {
		return false
	}
	x, err := s.tm.RespawnFailed(ctx, e.Name, pid, s.argv(e))
	if err != nil || !x.Respawned {
		return false
	}
	ss = s.get(e)
	ss.quick = quick
	how, status, signal := "status "+x.Status, -1, x.Signal
	if n, err := strconv.Atoi(x.Status); err == nil {
		status, signal = n, ""
	} else {
		if signal == "" {
			signal = "?" // as paneStatus says it
		}
		how = "signal " + escape.String(signal)
	}
	ss.obs.LastExit = &observe.Exit{Status: status, Signal: signal, At: now.UTC()}
	if s.killedForMemory(ss, signal) {
		how += ", killed: out of memory"
	}
	s.logf("session %s died (%s) after %s: restarting", quote(e.Name), how, uptime.Round(time.Millisecond))
	s.started(ss, e.Name, x.NewPID, true)
	return true
}

// killedForMemory reports whether a death by signal (as paneStatus and
// tmux say it) was an OOM kill; if so it records that in ss's last exit
// and attention state (the restart that follows keeps the state).
func (s *sup) killedForMemory(ss *session, signal string) bool {
	if signal != "9" || !s.oomKilled() {
		return false
	}
	ss.obs.LastExit.OutOfMemory = true
	s.setAttention(ss, attention.Event{Kind: attention.OutOfMemory})
	return true
}

// oomKilled reports whether an OOM killer ended a process of the sessions
// unit since the last look (the oom_kill count of its cgroup grew: a kill
// for the user's limit, the box's or the machine's), and takes the count
// as seen. A session that died of SIGKILL at such a moment is taken as
// killed for memory: the kernel names the process it killed only in its
// log, so a SIGKILL a person sends in the same moment reads alike.
func (s *sup) oomKilled() bool {
	if s.srv == nil {
		return false
	}
	n, err := oomkills.Of("/proc", "/sys/fs/cgroup", s.srv.PID)
	if err != nil {
		s.warnOnce("oomkills", "the OOM kills of the sessions unit cannot be read (a death for memory is told as a signal only): %s", errText(err))
		return false
	}
	grew := s.oomKnown && n > s.oomKills
	s.oomKills, s.oomKnown = n, true
	return grew
}

// paneOf returns the pane of session name if its process is pid.
func (s *sup) paneOf(ctx context.Context, name string, pid int) (tmux.Pane, bool) {
	panes, err := s.tm.ListPanes(ctx)
	if err != nil {
		s.logf("listing tmux panes: %s", errText(err))
		return tmux.Pane{}, false
	}
	for _, p := range panes {
		if p.Session == name {
			return p, p.PID == pid
		}
	}
	return tmux.Pane{}, false
}

// kill ends the tmux session name; why is "stopped" or "removed".
func (s *sup) kill(ctx context.Context, name, why string) bool {
	if ss := s.sessions[name]; ss != nil {
		s.unwatch(ss)
	}
	if err := s.tm.KillSession(ctx, name); err != nil {
		s.logf("killing session %s: %s (trying again in %s)", quote(name), errText(err), s.again())
		return false
	}
	s.againDelay = 0
	s.logf("session %s killed (%s in the registry)", quote(name), why)
	return true
}

// launch starts e in a new session, or respawns pane p when it is given.
func (s *sup) launch(ctx context.Context, e registry.Session, p *tmux.Pane, restart bool) {
	if !s.knownAgent(e) {
		return
	}
	ss := s.get(e)
	s.unwatch(ss)
	if p != nil && p.PID <= 0 {
		// The pane's last start failed (tmux could not fork: the user's
		// tasks at their cap). tmux 3.5a crashes, taking every agent of
		// the user with it, when such a pane is respawned again (it frees
		// the pane's input state a second time); so the session is ended
		// and created anew. Nothing is lost: the failed respawn had
		// already cleared the pane.
		if err := s.tm.KillSession(ctx, e.Name); err != nil {
			s.logf("starting session %s: ending its pane that could not start: %s (trying again in %s)", quote(e.Name), errText(err), s.again())
			return
		}
		p = nil
	}
	var pid int
	var err error
	if p != nil {
		pid, err = s.tm.RespawnPane(ctx, p.ID, s.argv(e))
	} else {
		pid, err = s.tm.NewSession(ctx, e.Name, s.argv(e))
	}
	if err != nil {
		s.logf("starting session %s: %s (trying again in %s)", quote(e.Name), errText(err), s.again())
		return
	}
	s.againDelay = 0
	s.started(ss, e.Name, pid, restart)
}

// knownAgent reports whether e's agent is in the table; once per session
// and agent it logs that it is not.
func (s *sup) knownAgent(e registry.Session) bool {
	if _, ok := s.cfg.Agents[e.Agent]; ok {
		return true
	}
	s.warnOnce(e.Name+"\x00"+e.Agent, "session %s: unknown agent %s (known: %s); not started",
		quote(e.Name), quote(e.Agent), quoteAll(s.cfg.Agents.Names()))
	return false
}

// argv is what a session's pane runs: exec-session, which execs the agent.
func (s *sup) argv(e registry.Session) []string {
	return []string{s.cfg.Spawn, "exec-session", e.Name}
}

// started records that session name's pane runs pid and watches it.
func (s *sup) started(ss *session, name string, pid int, restart bool) {
	now := s.clock.Now()
	ss.started = now
	ss.waiting = false
	s.watch(ss, name, pid)
	ss.obs.Started(now.UTC(), restart)
	ss.obs.Spawn = s.spawnPrints[ss.entry.Agent]
	s.setAttention(ss, attention.Event{Kind: attention.Started})
	s.saveObs(ss)
	if a := ss.obs.Attention; a != nil && a.State == attention.CrashLooping {
		if ss.healthy != nil {
			ss.healthy()
		}
		msg := timerMsg{name: name, gen: ss.gen, pid: pid}
		ss.healthy = s.clock.AfterFunc(s.policy.QuickWindow, func() {
			select {
			case s.timerCh <- msg:
			case <-s.done:
			}
		})
	}
}

// setAttention moves ss's attention state by ev; it reports whether the
// state changed (the caller saves the observations).
func (s *sup) setAttention(ss *session, ev attention.Event) bool {
	var cur attention.Status
	if ss.obs.Attention != nil {
		cur = *ss.obs.Attention
	}
	next, changed := attention.Next(cur, ev, s.clock.Now())
	if !changed {
		return false
	}
	if next.State != attention.Limited {
		s.unlimit(ss, cur)
	}
	defer func() { s.noteAttention(ss.name, ss.obs.Attention) }()
	if next.State == "" {
		ss.obs.Attention = nil
	} else {
		ss.obs.Attention = &next
		s.logf("session %s: %s", quote(ss.name), next)
	}
	return true
}

// attend applies ev to session name, if the supervisor keeps it and, for
// an agent's report, its program runs.
func (s *sup) attend(name string, ev attention.Event) {
	ss := s.sessions[name]
	if ss == nil || ev.Kind == attention.Agent && ss.pid == 0 {
		return
	}
	if s.setAttention(ss, ev) {
		s.saveObs(ss)
	}
	if ev.Kind == attention.Agent && ev.State == attention.Limited {
		s.limited(ss, ev)
	}
	s.watchTurn(ss)
}

// died handles the death of desired session e's process in pane p.
func (s *sup) died(ctx context.Context, e registry.Session, p tmux.Pane, status int, signal string) {
	ss := s.get(e)
	s.unwatch(ss)
	now := s.clock.Now()
	ss.obs.LastExit = &observe.Exit{Status: status, Signal: signal, At: now.UTC()}
	oom := s.killedForMemory(ss, signal)
	if status == 0 {
		s.setAttention(ss, attention.Event{Kind: attention.ExitedOK})
		s.saveObs(ss)
		s.park(ctx, e)
		return
	}
	var uptime time.Duration
	if !ss.started.IsZero() {
		uptime = now.Sub(ss.started)
	}
	delay, quick := s.policy.next(ss.quick, uptime)
	ss.quick = quick
	how := fmt.Sprintf("status %d", status)
	if status < 0 {
		how = "signal " + escape.String(signal)
	}
	if oom {
		how += ", killed: out of memory"
	}
	if delay == 0 {
		s.logf("session %s died (%s) after %s: restarting", quote(e.Name), how, uptime.Round(time.Millisecond))
		s.launch(ctx, e, &p, true)
		return
	}
	s.logf("session %s died (%s) after %s: restarting in %s", quote(e.Name), how, uptime.Round(time.Millisecond), delay)
	ss.gen++
	ss.waiting = true
	next := now.Add(delay).UTC()
	ss.obs.NextStart = &next
	s.setAttention(ss, attention.Event{Kind: attention.Crashing})
	s.saveObs(ss)
	msg := timerMsg{name: e.Name, gen: ss.gen}
	ss.stop = s.clock.AfterFunc(delay, func() {
		select {
		case s.timerCh <- msg:
		case <-s.done:
		}
	})
}

// park handles an exit 0: the session is marked stopped in the registry
// (written back stopped if the registry lost it, unless it was removed)
// and its tmux session ends.
func (s *sup) park(ctx context.Context, e registry.Session) {
	err := registry.Update(ctx, s.cfg.Env.Registry(), func(r *registry.Registry) error {
		cur, ok := r.Find(e.Name)
		switch {
		case ok && cur.Stopped, !ok && tombstoned(r, e.Name):
			return registry.ErrNoChange
		case ok:
			cur.Stopped = true
			cur.Updated = time.Now().UTC()
			return nil
		}
		back := e
		back.Stopped, back.Updated = true, time.Now().UTC()
		return r.Add(back)
	})
	if err != nil {
		s.logf("session %s exited 0 but could not be parked: %s (trying again in %s)", quote(e.Name), errText(err), s.again())
		return
	}
	s.againDelay = 0
	s.logf("session %s exited 0: parked (stopped)", quote(e.Name))
	s.kill(ctx, e.Name, "stopped")
	s.forget(e.Name)
}

// Retries of failed work: the first after againFirst, doubling to
// againMax.
const (
	againFirst = time.Second
	againMax   = 30 * time.Second
)

// again makes a reconcile run again after work that failed and that a
// reconcile redoes: a park the registry did not take (a full disk, a lock
// held too long; the pane is still dead, so the reconcile parks it), a
// session tmux could not start (the user's tasks at their cap; the
// reconcile starts it), a session tmux could not end. So the work is done
// as soon as it can be rather than at the next registry event or resync.
// One timer for all sessions; its wait doubles while work keeps failing
// and starts again from againFirst after work that succeeded. It returns
// the wait.
func (s *sup) again() time.Duration {
	if s.againDelay == 0 {
		s.againDelay = againFirst
	}
	d := s.againDelay
	if s.againPending {
		return d
	}
	s.againPending = true
	s.againDelay = min(2*d, againMax)
	s.clock.AfterFunc(d, func() {
		select {
		case s.againCh <- struct{}{}:
		case <-s.done:
		}
	})
	return d
}

func (s *sup) timerFired(ctx context.Context, t timerMsg) {
	ss := s.sessions[t.name]
	if t.pid != 0 {
		if ss != nil && ss.pid == t.pid && ss.gen == t.gen {
			ss.healthy = nil
			s.attend(t.name, attention.Event{Kind: attention.Healthy})
		}
		return
	}
	if ss == nil || ss.gen != t.gen || !ss.waiting {
		return
	}
	ss.waiting = false
	ss.stop = nil
	s.restart(ctx, t.name)
}

// restart (re)launches name now if it is listed and not stopped.
func (s *sup) restart(ctx context.Context, name string) {
	reg, err := registry.Load(s.cfg.Env.Registry())
	if err != nil {
		s.registryError(err)
		return
	}
	e, ok := reg.Find(name)
	if !ok || e.Stopped {
		return
	}
	panes, err := s.tm.ListPanes(ctx)
	if err != nil {
		s.logf("listing tmux panes: %s", errText(err))
		return
	}
	s.restartIn(ctx, *e, panes)
}

// restartIn (re)launches e now: respawning its pane if it has one among
// panes, creating the session otherwise.
func (s *sup) restartIn(ctx context.Context, e registry.Session, panes []tmux.Pane) {
	ss := s.get(e)
	if ss.stop != nil {
		ss.stop()
		ss.stop = nil
	}
	ss.gen++
	ss.waiting = false
	for _, p := range panes {
		if p.Session == e.Name {
			s.launch(ctx, e, &p, true)
			return
		}
	}
	s.launch(ctx, e, nil, true)
}

// handleMessage handles one control datagram:
//
//	restart NAME     from `agent-box session restart NAME`
//	restart-all      from `agent-box session restart --all`
//
// Requests go through gates (see gate): a flood costs at most one restart
// per session per policy.RequestGap.
func (s *sup) handleMessage(ctx context.Context, d datagram) {
	if d.size > len(d.data) {
		s.ignore(d)
		return
	}
	switch r, ok := control.Parse(d.data); {
	case !ok:
		s.ignore(d)
	case r.Attention != nil:
		s.attend(r.Name, *r.Attention)
	case r.All:
		s.requestRestartAll(ctx)
	default:
		s.requestRestart(ctx, r.Name)
	}
}

// after sends m to the event loop after d.
func (s *sup) after(d time.Duration, m reqMsg) {
	s.clock.AfterFunc(d, func() {
		select {
		case s.reqCh <- m:
		case <-s.done:
		}
	})
}

func (s *sup) requestRestart(ctx context.Context, name string) {
	now := s.clock.Now()
	ss := s.sessions[name]
	if ss == nil {
		// not supervised yet: the registry decides, and the gate starts
		s.logf("session %s: restart requested", quote(name))
		s.restart(ctx, name)
		if ss := s.sessions[name]; ss != nil {
			ss.req.last = now
		}
		return
	}
	run, wait := ss.req.ask(now, s.policy.RequestGap)
	if wait > 0 {
		s.after(wait, reqMsg{ss: ss})
	}
	if run {
		s.logf("session %s: restart requested", quote(name))
		s.restart(ctx, name)
	}
}

func (s *sup) requestRestartAll(ctx context.Context) {
	now := s.clock.Now()
	run, wait := s.reqAll.ask(now, s.policy.RequestGap)
	if wait > 0 {
		s.after(wait, reqMsg{all: true})
	}
	if run {
		s.logf("restart of all sessions requested")
		s.restartAll(ctx, now)
	}
}

// restartAll restarts every listed, non-stopped session whose own gate
// lets it (a session restarted less than a gap ago gets its folded restart
// later).
func (s *sup) restartAll(ctx context.Context, now time.Time) {
	reg, err := registry.Load(s.cfg.Env.Registry())
	if err != nil {
		s.registryError(err)
		return
	}
	panes, err := s.tm.ListPanes(ctx)
	if err != nil {
		s.logf("listing tmux panes: %s", errText(err))
		return
	}
	for _, e := range reg.Sessions {
		if e.Stopped {
			continue
		}
		ss := s.get(e)
		run, wait := ss.req.ask(now, s.policy.RequestGap)
		if wait > 0 {
			s.after(wait, reqMsg{ss: ss})
		}
		if run {
			s.restartIn(ctx, e, panes)
		}
	}
}

// foldedRestart runs a restart that requests within a gap were folded into.
func (s *sup) foldedRestart(ctx context.Context, m reqMsg) {
	now := s.clock.Now()
	if m.all {
		n := s.reqAll.fire(now)
		s.logf("restart of all sessions requested %d more times within %s: restarting them once more", n, s.policy.RequestGap)
		s.restartAll(ctx, now)
		return
	}
	ss := m.ss
	if s.sessions[ss.name] != ss || !ss.req.pending {
		return // forgotten meanwhile
	}
	n := ss.req.fire(now)
	s.logf("session %s: restart requested %d more times within %s: restarting once more", quote(ss.name), n, s.policy.RequestGap)
	s.restart(ctx, ss.name)
}

// ignore logs an unknown or oversized datagram, escaped and cut to
// logBytes; after one such line, others are only counted for junkWindow.
func (s *sup) ignore(d datagram) {
	if s.junkOpen {
		s.junk++
		return
	}
	shown := escape.Bytes(d.data, logBytes)
	if d.size > len(d.data) {
		// cut when read: say how long it really was
		shown = escape.String(string(d.data[:min(len(d.data), logBytes)])) + fmt.Sprintf("... (%d bytes)", d.size)
	}
	s.logf("ignoring control message \"%s\"", shown)
	s.junkOpen = true
	s.clock.AfterFunc(junkWindow, func() {
		select {
		case s.junkCh <- struct{}{}:
		case <-s.done:
		}
	})
}

func (s *sup) junkWindowEnded() {
	if s.junk > 0 {
		s.logf("ignored %d more control messages in the last %s", s.junk, junkWindow)
	}
	s.junkOpen, s.junk = false, 0
}

// readDatagrams reads control datagrams into out. At most maxDatagram
// bytes of each are kept; MSG_TRUNC makes recvfrom return the real size
// (Linux >= 3.4), so an oversized one is recognised as such.
func readDatagrams(conn *net.UnixConn, out chan<- datagram, done <-chan struct{}) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, maxDatagram)
	for {
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, _, rerr = syscall.Recvfrom(int(fd), buf, syscall.MSG_TRUNC)
			return rerr != syscall.EAGAIN
		})
		if err != nil {
			return // closed at shutdown
		}
		if rerr != nil || n < 0 {
			continue
		}
		d := datagram{data: append([]byte(nil), buf[:min(n, len(buf))]...), size: n}
		select {
		case out <- d:
		case <-done:
			return
		}
	}
}
