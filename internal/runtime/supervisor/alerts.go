package supervisor

import (
	"context"
	"strconv"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/tmux"
)

// The supervisor learns a session's bell, its silence after output and a
// person's look from one tmux control-mode client (tmux.Watch), attached to
// tmux.WatchSession for as long as the adopted server runs: tmux evaluates
// the subscription once a second inside the server and writes only
// changes, so watching costs no process while nothing happens.

// alertsMsg is a new value of the watcher of server pid, or its end.
type alertsMsg struct {
	pid    int
	alerts map[string]tmux.Alert
	ended  error // set when the watcher ended
}

// watcherRetryMax caps the wait before a failed watcher is started again;
// watcherReady bounds the wait for a new watcher to be attached and
// subscribed.
const (
	watcherRetryMax = time.Minute
	watcherReady    = 2 * time.Second
)

// startWatcher starts the watcher of the adopted server unless it runs or
// waits for a retry.
func (s *sup) startWatcher(ctx context.Context) {
	if s.srv == nil || s.watching == s.srv.PID || s.watchWait {
		return
	}
	pid, tm := s.srv.PID, s.tm
	if err := tm.EnsureWatchSession(ctx); err != nil {
		s.watcherEnded(ctx, pid, err)
		return
	}
	if s.cfg.SilenceAfter > 0 {
		secs := strconv.Itoa(int(s.cfg.SilenceAfter / time.Second))
		if _, err := tm.Run(ctx, "set-window-option", "-g", "monitor-silence", secs); err != nil {
			s.warnOnce("silence", "cannot set tmux's monitor-silence: %s", errText(err))
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	s.watching, s.stopWatcher, s.alerts = pid, cancel, nil
	send := func(m alertsMsg) bool {
		select {
		case s.alertCh <- m:
			return true
		case <-s.done:
			return false
		}
	}
	vals := make(chan map[string]tmux.Alert)
	errc := make(chan error, 1)
	readyc := make(chan struct{})
	go func() { errc <- tm.Watch(wctx, vals, func() { close(readyc) }) }()
	// tmux 3.3a's server crashed (SIGSEGV, every session gone) in about
	// one run in ten when a session was created while a control client
	// attached: the supervisor issues no tmux command until the watcher's
	// client is attached and subscribed (measured in watch_test.go).
	select {
	case <-readyc:
	case err := <-errc:
		s.watcherEnded(ctx, pid, err)
		return
	case <-time.After(watcherReady):
		s.warnOnce("watcher-slow", "the tmux alerts watcher was not attached within %s; going on", watcherReady)
	}
	go func() {
		for {
			select {
			case v := <-vals:
				if !send(alertsMsg{pid: pid, alerts: v}) {
					cancel()
					<-errc
					return
				}
			case err := <-errc:
				send(alertsMsg{pid: pid, ended: err})
				return
			}
		}
	}()
}

// stopWatching ends the watcher (the server it watches is gone).
func (s *sup) stopWatching() {
	if s.stopWatcher != nil {
		s.stopWatcher()
	}
	s.watching, s.stopWatcher, s.alerts = 0, nil, nil
}

// watcherEnded logs why the watcher of server pid ended and, while that
// server is still the adopted one, starts another after a backoff (1 s,
// doubling up to watcherRetryMax; reset once a watcher delivered).
func (s *sup) watcherEnded(ctx context.Context, pid int, err error) {
	if s.watching == pid {
		s.stopWatching()
	}
	if s.srv == nil || s.srv.PID != pid {
		return
	}
	delay := time.Second << min(s.watchFails, 6)
	delay = min(delay, watcherRetryMax)
	s.watchFails++
	s.warnOnce("watcher\x00"+err.Error(), "the bell and silence of sessions are not watched: %s (retrying)", errText(err))
	s.watchWait = true
	s.clock.AfterFunc(delay, func() {
		select {
		case s.watchRetryCh <- struct{}{}:
		case <-s.done:
		}
	})
}

// alertsChanged turns a new value of the watcher into attention events:
// a bell or a silence flag that was not set before, and a person's look
// (a client attached, or a key typed while attached).
func (s *sup) alertsChanged(ctx context.Context, m alertsMsg) {
	if m.pid != s.watching {
		return
	}
	if m.ended != nil {
		s.watcherEnded(ctx, m.pid, m.ended)
		return
	}
	s.watchFails = 0
	prev := s.alerts
	for name, a := range m.alerts {
		if !registry.ValidName(name) || s.sessions[name] == nil {
			continue
		}
		p := prev[name]
		if a.Attached > 0 && (p.Attached == 0 || a.Activity != p.Activity) {
			s.attend(name, attention.Event{Kind: attention.Seen})
		}
		if a.Bell && !p.Bell {
			s.attend(name, attention.Event{Kind: attention.Bell})
		}
		if a.Silence && !p.Silence && !s.reportsItself(name) {
			s.attend(name, attention.Event{Kind: attention.Silence})
		}
	}
	s.alerts = m.alerts
}

// reportsItself: session name's agent has hooks that report its attention
// states (its setup has agent events), so its silence says nothing (a
// permission prompt, a long think): only the bell applies to it.
func (s *sup) reportsItself(name string) bool {
	ss := s.sessions[name]
	if ss == nil {
		return false
	}
	a, ok := s.cfg.Agents[ss.entry.Agent]
	return ok && len(attention.HookEvents(a.Setup)) > 0
}
