// The webhooks' side of the daemon: the hook listener is hooks.Receiver;
// this wakes the session of each stored delivery.

package web

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/actions"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/hooks"
	"github.com/agent-box/agent-box/internal/runtime/journal"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/sessionsrv"
)

// hookWaker starts a delivery's session if it is stopped and types the
// hook's notify text into it, one delivery at a time, after the answer.
type hookWaker struct {
	q      chan wakeMsg
	start  func(ctx context.Context, session string) (started bool, err error)
	typeIn func(ctx context.Context, session, text string) error
	log    *journal.Logger
	settle time.Duration // after a start, before typing
}

type wakeMsg struct {
	hook *hooks.Hook
	id   string
	path string
}

// enqueue never blocks the answer: a full queue drops the wake (the
// delivery is stored; the agent finds it in its folder).
func (k *hookWaker) enqueue(h *hooks.Hook, id, path string) {
	select {
	case k.q <- wakeMsg{h, id, path}:
	default:
		k.log.Printf("webhook %s: delivery %s stored; too many wakes queued, session %s not woken for it", h.Name, id, h.Session)
	}
}

func (k *hookWaker) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-k.q:
			k.one(ctx, m)
		}
	}
}

func (k *hookWaker) one(ctx context.Context, m wakeMsg) {
	started, err := k.start(ctx, m.hook.Session)
	if err != nil {
		k.log.Printf("webhook %s: delivery %s stored; session %s not started: %v", m.hook.Name, m.id, m.hook.Session, err)
		return
	}
	if started {
		k.log.Printf("webhook %s: delivery %s started the stopped session %s", m.hook.Name, m.id, m.hook.Session)
	}
	if m.hook.Notify == "" {
		return
	}
	if started && k.settle > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(k.settle):
		}
	}
	text := notifyText(m.hook.Notify, m.id, m.path)
	if err := k.typeIn(ctx, m.hook.Session, text); err != nil {
		k.log.Printf("webhook %s: delivery %s stored; notify not typed into session %s: %v", m.hook.Name, m.id, m.hook.Session, err)
		return
	}
	k.log.Printf("webhook %s: delivery %s typed into session %s", m.hook.Name, m.id, m.hook.Session)
}

// notifyText replaces {id} and {file} in the hook's notify text.
func notifyText(notify, id, path string) string {
	return strings.NewReplacer("{id}", id, "{file}", path).Replace(notify)
}

// openHooks opens every hook's folder and sets up the waker.
func (s *Server) openHooks() error {
	if _, err := os.Stat(s.cfg.HooksDir); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("webhooks: %s does not exist yet: %s creates it at start (start it, then this daemon)", s.cfg.HooksDir, contract.For(contract.Units.Supervisor, s.cfg.User))
	} else if err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	settle := s.cfg.WakeSettle
	if settle <= 0 {
		settle = DefaultWakeSettle
	}
	s.waker = &hookWaker{q: make(chan wakeMsg, 256), log: s.log, settle: settle,
		start: s.startStopped, typeIn: s.typeInto}
	var err error
	s.hooks, err = hooks.NewReceiver(s.cfg.User, s.cfg.Hooks, s.cfg.HooksDir, s.log, s.waker.enqueue)
	return err
}

// Wake starts and notifies the sessions of deliveries until ctx ends.
func (s *Server) Wake(ctx context.Context) {
	if s.waker != nil {
		s.waker.run(ctx)
	}
}

// startStopped unparks session if the registry has it stopped (the
// supervisor starts it within a second), through the CLI's code path.
func (s *Server) startStopped(ctx context.Context, session string) (bool, error) {
	reg, err := registry.Load(s.cfg.Env.Registry())
	if err != nil {
		return false, err
	}
	e, ok := reg.Find(session)
	if !ok {
		return false, fmt.Errorf("%w: %q", registry.ErrUnknown, session)
	}
	if !e.Stopped {
		return false, nil
	}
	return true, actions.SetStopped(ctx, s.cfg.Env, session, false)
}

// typeWait bounds the wait for the session's pane before typing.
const typeWait = 30 * time.Second

// typeInto types text and Enter into session's pane once it runs.
func (s *Server) typeInto(ctx context.Context, session, text string) error {
	return s.typeText(ctx, session, text, true, typeWait)
}

// typeText types text (and Enter, with enter) into session's pane once it
// runs, waiting at most wait for it.
func (s *Server) typeText(ctx context.Context, session, text string, enter bool, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		// the server is checked (and its program taken) at every look: it
		// may be the sessions unit's next one
		tm, err := sessionsrv.Open(s.cfg.Env, s.cfg.Tmux, s.cfg.ProcEnv)
		if err != nil && !errors.Is(err, sessionsrv.ErrNoServer) {
			return err
		}
		if err == nil && tm.HasSession(ctx, session) {
			if !enter {
				return tm.TypeText(ctx, session, text)
			}
			return tm.SendText(ctx, session, text)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("session %q is not running after %s", session, wait)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
