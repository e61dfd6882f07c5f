package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/approval"
	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// A person's reply from the inbox (docs/web-contract.md, "Replies"): the
// supervisor keeps one GET of the reply path open on the auth service's
// status socket (answered at once when a reply waits, else empty after
// the contract's poll time) and types each reply into its session's
// pane, then Enter, as a person at the terminal would: the agent takes
// it as its next prompt. Without an auth service it does not poll.

// replyMsg is one reply as the auth service gives it.
type replyMsg struct {
	Session string `json:"session"`
	Text    string `json:"text"`
}

// replyBackoff bounds the wait after a failed poll (the auth service
// restarts, or is stopped).
const replyBackoff = 30 * time.Second

// pollReplies hands every reply to the event loop until done is closed.
func (s *sup) pollReplies(done <-chan struct{}) {
	poll := contract.Duration(contract.Approvals.Reply.Poll)
	client := &http.Client{Transport: statusTransport(s.cfg.AuthStatus), Timeout: poll + 10*time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-done
		cancel()
	}()
	wait := time.Second
	for ctx.Err() == nil {
		start := time.Now()
		got, err := s.pollOnce(ctx, client)
		if err == nil && len(got) == 0 && time.Since(start) < time.Second {
			// an empty answer at once is no poll (a service that does not
			// wait): not again at once
			err = errors.New("an empty answer at once")
		}
		if err != nil {
			select {
			case <-done:
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, replyBackoff)
			continue
		}
		wait = time.Second
		for _, m := range got {
			select {
			case s.replyCh <- m:
			case <-done:
				return
			}
		}
	}
}

// pollOnce is one GET: the replies it brought (each checked: a session
// name, one line of clean text within the prompt's bound).
func (s *sup) pollOnce(ctx context.Context, client *http.Client) ([]replyMsg, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://agent-box-auth"+contract.Approvals.Reply.Path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	limit := contract.Approvals.Reply.MaxPending * (contract.Conversations.PromptMaxBytes*6 + 256)
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, &http.ProtocolError{ErrorString: "the reply poll: " + resp.Status}
	}
	var got []replyMsg
	if err := json.Unmarshal(data, &got); err != nil {
		return nil, err
	}
	out := got[:0]
	limit = contract.Conversations.PromptMaxBytes
	for _, m := range got {
		if contract.Names.Session.Match(m.Session) && m.Text != "" && len(m.Text) <= limit && approval.Clean(m.Text, limit) == m.Text && !strings.ContainsAny(m.Text, "\n\t") {
			out = append(out, m)
		}
	}
	return out, nil
}

// replied types m into its session (the event loop: the session must be
// one of the registry's, with a running pane); the typing runs beside
// the loop.
func (s *sup) replied(ctx context.Context, m replyMsg) {
	ss, ok := s.sessions[m.Session]
	if !ok || ss.pid == 0 {
		s.logf("session %s: a person's reply from the inbox was not typed: the session does not run", quote(m.Session))
		return
	}
	s.logf("session %s: typing a person's reply from the inbox (%d bytes)", quote(m.Session), len(m.Text))
	enter := contract.Duration(contract.Approvals.Reply.EnterAfter)
	go func() {
		s.typing.Lock() // one reply at a time: two typed at once would mix
		defer s.typing.Unlock()
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err := s.tm.TypeText(tctx, m.Session, m.Text)
		if err == nil {
			time.Sleep(enter) // an agent's input takes text and Enter apart, as a person types them
			_, err = s.tm.Run(tctx, "send-keys", "-t", "="+m.Session+":", "Enter")
		}
		if err != nil {
			s.logf("session %s: typing a person's reply: %s", quote(m.Session), errText(err))
		}
	}()
}
