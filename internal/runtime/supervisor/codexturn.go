package supervisor

import (
	"bytes"
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
// UserPromptSubmit hook) or works on a resume, the supervisor reads the end
// of that file every codexPoll, from the newest turn's start, for the
// turn's end (usagelimit.CodexTurn): the usage limit is limited (its reset
// the 100 % window's, when the provider sent one), another error needs
// you, an end without error is the Stop hook's to tell. Each turn is told
// once.

// codexPoll is how often a working Codex session's rollout is read; a
// read costs a stat while the file does not grow.
const codexPoll = 2 * time.Second

// codexTail is how much of the rollout's end is read: a turn's end follows
// its start by the turn's own lines (a refused turn's, about 30 KiB).
const codexTail = 1 << 20

// watchTurn arms the next read of ss's turn while its Codex works.
func (s *sup) watchTurn(ss *session) {
	if ss.turnStop != nil || !s.codexWorks(ss) {
		return
	}
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
// reads again later while it works.
func (s *sup) turnDue(name string) {
	ss := s.sessions[name]
	if ss == nil {
		return
	}
	ss.turnStop = nil
	if !s.codexWorks(ss) {
		return
	}
	turn, end, reset := s.codexTurn(ss)
	if turn != "" && turn != ss.turnTold && (end == usagelimit.CodexLimited || end == usagelimit.CodexFailed) {
		ss.turnTold = turn
		ev := attention.Event{Kind: attention.Agent, State: attention.NeedsYou, Reason: attention.ReasonError}
		if end == usagelimit.CodexLimited {
			ev = attention.Event{Kind: attention.Agent, State: attention.Limited, Reason: attention.ReasonLimit, Until: reset}
		}
		s.logf("session %s: Codex's rollout says the turn ended: %s", quote(name), codexEnds[end])
		s.attend(name, ev)
	}
	s.watchTurn(ss)
}

var codexEnds = map[usagelimit.CodexEnd]string{
	usagelimit.CodexLimited: "at the account's usage limit",
	usagelimit.CodexFailed:  "with an error",
}

// codexTurn reads the newest turn of ss's rollout: its id (the
// task_started line's turn_id) and how it ended.
func (s *sup) codexTurn(ss *session) (turn string, end usagelimit.CodexEnd, reset time.Time) {
	r, err := conversation.Load(s.cfg.Env.ConversationsDir(), ss.name)
	if err != nil || r.Transcript == "" {
		return "", usagelimit.CodexOpen, time.Time{}
	}
	f, err := userfile.Open(r.Transcript, -1)
	if err != nil {
		return "", usagelimit.CodexOpen, time.Time{}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == ss.turnSize {
		return "", usagelimit.CodexOpen, time.Time{}
	}
	ss.turnSize = fi.Size()
	tail, err := io.ReadAll(io.NewSectionReader(f, max(fi.Size()-codexTail, 0), codexTail))
	if err != nil {
		return "", usagelimit.CodexOpen, time.Time{}
	}
	i := bytes.LastIndex(tail, []byte(`"payload":{"type":"task_started"`))
	if i < 0 {
		return "", usagelimit.CodexOpen, time.Time{}
	}
	start := bytes.LastIndexByte(tail[:i], '\n') + 1
	turn = usagelimit.CodexTurnID(tail[start:])
	end, reset, _ = usagelimit.CodexTurn(tail[start:])
	return turn, end, reset
}
