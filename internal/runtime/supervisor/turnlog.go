package supervisor

import (
	"io"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agentsetup"
	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/agent-box/agent-box/internal/runtime/usagelimit"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// A Codex turn that fails reaches no hook and no notify (measured with
// 0.171.0): only its rollout file, the transcript its SessionStart hook
// reported, says how the turn ended (agentsetup.TurnReader: an agent whose
// setup reads its log). While a Codex session works (its
// UserPromptSubmit hook; an adopted one) or works on a resume, the
// supervisor reads the end of that file every turnEvery while it grows, for
// the newest turn's end: the usage limit is
// limited (its reset the 100 % window's, when the provider sent one),
// another error needs you, an end without error is the Stop hook's to
// tell. Each turn is told once (the observation file keeps which). The
// reads go on while the newest turn is open, and for turnGrace after the
// event that began them (Codex may write the turn's start after its
// hook); then the next event begins them again.

// The reads' pace, tail and grace: the contract's usageLimits.turnRead.
var (
	turnEvery = contract.Duration(contract.UsageLimits.TurnRead.Every)
	turnGrace = contract.Duration(contract.UsageLimits.TurnRead.Grace)
	turnTail  = int64(contract.UsageLimits.TurnRead.TailBytes)
)

// watchTurn arms the next read of ss's turn while its Codex works.
func (s *sup) watchTurn(ss *session) {
	if ss.turnStop != nil || !s.turnWatched(ss) {
		return
	}
	ss.turnFrom, ss.turnOpen = s.clock.Now(), true
	s.armTurn(ss)
}

func (s *sup) armTurn(ss *session) {
	name := ss.name
	ss.turnStop = s.clock.AfterFunc(turnEvery, func() {
		select {
		case s.turnCh <- name:
		case <-s.done:
		}
	})
}

// turnReader is ss's agent's reader of its log, if it needs one (no hook
// tells its failed turn: Codex).
func (s *sup) turnReader(ss *session) agentsetup.TurnReader {
	ag, ok := s.cfg.Agents[ss.entry.Agent]
	if !ok {
		return nil
	}
	r, _ := agentsetup.For(ag.Setup).(agentsetup.TurnReader)
	return r
}

// turnWatched: ss's agent tells a failed turn only to its log (Codex), and
// works on a turn (or on a resume).
func (s *sup) turnWatched(ss *session) bool {
	a := ss.obs.Attention
	return ss.pid != 0 && a != nil && (a.State == attention.Working || a.State == attention.Limited && a.Try > 0 && a.Until.IsZero()) &&
		s.turnReader(ss) != nil
}

// turnDue reads how session name's Codex turn ended, tells it once, and
// reads again while the turn is open (or the grace lasts) and Codex works.
func (s *sup) turnDue(name string) {
	ss := s.sessions[name]
	if ss == nil {
		return
	}
	ss.turnStop = nil
	if !s.turnWatched(ss) {
		return
	}
	if turn, end, reset, read := s.codexTurn(ss); read {
		ss.turnOpen = end == usagelimit.TurnOpen
		if turn != "" && turn != ss.obs.TurnTold && (end == usagelimit.TurnLimited || end == usagelimit.TurnFailed) {
			ss.obs.TurnTold = turn
			s.saveObs(ss)
			ev := attention.Event{Kind: attention.Agent, State: attention.NeedsYou, Reason: attention.ReasonError}
			if end == usagelimit.TurnLimited {
				ev = attention.Event{Kind: attention.Agent, State: attention.Limited, Reason: attention.ReasonLimit, Until: reset}
			}
			s.logf("session %s: its agent's log says the turn ended: %s", quote(name), turnEnds[end])
			s.attend(name, ev)
		}
	}
	if ss.turnStop == nil && s.turnWatched(ss) && (ss.turnOpen || s.clock.Now().Sub(ss.turnFrom) < turnGrace) {
		s.armTurn(ss)
	}
}

var turnEnds = map[usagelimit.TurnEnd]string{
	usagelimit.TurnLimited: "at the account's usage limit",
	usagelimit.TurnFailed:  "with an error",
}

// codexTurn reads the newest turn of ss's rollout: its id and how it
// ended; read is false when there was nothing new to read (no transcript
// yet, or the file did not grow).
func (s *sup) codexTurn(ss *session) (turn string, end usagelimit.TurnEnd, reset time.Time, read bool) {
	r, err := conversation.Load(s.cfg.Env.ConversationsDir(), ss.name)
	if err != nil || r.Transcript == "" {
		return "", usagelimit.TurnOpen, time.Time{}, false
	}
	f, err := userfile.Open(r.Transcript, -1)
	if err != nil {
		return "", usagelimit.TurnOpen, time.Time{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == ss.turnSize {
		return "", usagelimit.TurnOpen, time.Time{}, false
	}
	ss.turnSize = fi.Size()
	tail, err := io.ReadAll(io.NewSectionReader(f, max(fi.Size()-turnTail, 0), turnTail))
	if err != nil {
		return "", usagelimit.TurnOpen, time.Time{}, false
	}
	turn, end, reset = s.turnReader(ss).LastTurn(tail, fi.Size() <= turnTail)
	return turn, end, reset, true
}
