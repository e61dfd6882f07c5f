package supervisor

import (
	"io"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/agent-box/agent-box/internal/runtime/usagelimit"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// A Codex turn that fails reaches no hook and no notify (measured with
// 0.171.0): only its rollout file, the transcript its SessionStart hook
// reported, says how the turn ended. While a Codex session works (its
// UserPromptSubmit hook; an adopted one) or works on a resume, the
// supervisor reads the end of that file every codexPoll while it grows, for
// the newest turn's end (usagelimit.CodexLastTurn): the usage limit is
// limited (its reset the 100 % window's, when the provider sent one),
// another error needs you, an end without error is the Stop hook's to
// tell. Each turn is told once (the observation file keeps which). The
// reads go on while the newest turn is open, and for codexGrace after the
// event that began them (Codex may write the turn's start after its
// hook); then the next event begins them again.

// codexPoll is how often a working Codex session's rollout is read; a
// read costs a stat while the file does not grow.
const codexPoll = 2 * time.Second

// codexGrace is how long the reads go on after the event that began them
// when the newest turn is not open.
const codexGrace = 30 * time.Second

// codexTail is how much of the rollout's end is read: a turn's end is
// its last lines, whatever the turn wrote before.
const codexTail = 1 << 20

// watchTurn arms the next read of ss's turn while its Codex works.
func (s *sup) watchTurn(ss *session) {
	if ss.turnStop != nil || !s.codexWorks(ss) {
		return
	}
	ss.turnFrom, ss.turnOpen = s.clock.Now(), true
	s.armTurn(ss)
}

func (s *sup) armTurn(ss *session) {
	name := ss.name
	ss.turnStop = s.clock.AfterFunc(codexPoll, func() {
		select {
		case s.turnCh <- name:
		case <-s.done:
		}
	})
}

// codexWorks: ss runs Codex, which works on a turn (or on a resume).
func (s *sup) codexWorks(ss *session) bool {
	ag, ok := s.cfg.Agents[ss.entry.Agent]
	a := ss.obs.Attention
	return ok && ag.Setup == "codex" && ss.pid != 0 && a != nil &&
		(a.State == attention.Working || a.State == attention.Limited && a.Try > 0 && a.Until.IsZero())
}

// turnDue reads how session name's Codex turn ended, tells it once, and
// reads again while the turn is open (or the grace lasts) and Codex works.
func (s *sup) turnDue(name string) {
	ss := s.sessions[name]
	if ss == nil {
		return
	}
	ss.turnStop = nil
	if !s.codexWorks(ss) {
		return
	}
	if turn, end, reset, read := s.codexTurn(ss); read {
		ss.turnOpen = end == usagelimit.CodexOpen
		if turn != "" && turn != ss.obs.CodexTold && (end == usagelimit.CodexLimited || end == usagelimit.CodexFailed) {
			ss.obs.CodexTold = turn
			s.saveObs(ss)
			ev := attention.Event{Kind: attention.Agent, State: attention.NeedsYou, Reason: attention.ReasonError}
			if end == usagelimit.CodexLimited {
				ev = attention.Event{Kind: attention.Agent, State: attention.Limited, Reason: attention.ReasonLimit, Until: reset}
			}
			s.logf("session %s: Codex's rollout says the turn ended: %s", quote(name), codexEnds[end])
			s.attend(name, ev)
		}
	}
	if ss.turnStop == nil && s.codexWorks(ss) && (ss.turnOpen || s.clock.Now().Sub(ss.turnFrom) < codexGrace) {
		s.armTurn(ss)
	}
}

var codexEnds = map[usagelimit.CodexEnd]string{
	usagelimit.CodexLimited: "at the account's usage limit",
	usagelimit.CodexFailed:  "with an error",
}

// codexTurn reads the newest turn of ss's rollout: its id and how it
// ended; read is false when there was nothing new to read (no transcript
// yet, or the file did not grow).
func (s *sup) codexTurn(ss *session) (turn string, end usagelimit.CodexEnd, reset time.Time, read bool) {
	r, err := conversation.Load(s.cfg.Env.ConversationsDir(), ss.name)
	if err != nil || r.Transcript == "" {
		return "", usagelimit.CodexOpen, time.Time{}, false
	}
	f, err := userfile.Open(r.Transcript, -1)
	if err != nil {
		return "", usagelimit.CodexOpen, time.Time{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == ss.turnSize {
		return "", usagelimit.CodexOpen, time.Time{}, false
	}
	ss.turnSize = fi.Size()
	tail, err := io.ReadAll(io.NewSectionReader(f, max(fi.Size()-codexTail, 0), codexTail))
	if err != nil {
		return "", usagelimit.CodexOpen, time.Time{}, false
	}
	turn, end, reset = usagelimit.CodexLastTurn(tail, fi.Size() <= codexTail)
	return turn, end, reset, true
}
