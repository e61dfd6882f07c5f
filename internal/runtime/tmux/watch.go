package tmux

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// WatchSession is the session a Watcher's control-mode client attaches to
// (a client must attach to one). Its name cannot be a session name of the
// registry ('+'), ListPanes leaves it out, and no one else attaches to it:
// a session a client shows never gets the bell and silence flags, so the
// watcher must not show a session it watches.
var WatchSession = contract.Attention.WatchSession

// alertsSub is the name of the Watcher's subscription.
const alertsSub = "agent-box-alerts"

// alertsFormat lists, for every session whose name holds only the
// characters of a registry name (so no separator of this list; names are
// checked again with the registry's rule), "NAME=ATTACHED:ACTIVITY:FLAGS;"
// where FLAGS has "b" when a window of it has the bell flag and "s" the
// silence flag. tmux evaluates a subscription once a second and writes it
// only when it changed, with no process started.
const alertsFormat = `#{S:#{?#{m/r:^[A-Za-z0-9_-]+$,#{session_name}},#{session_name}=#{session_attached}:#{session_activity}:#{W:#{?window_bell_flag,b,}#{?window_silence_flag,s,}};,}}`

// Alert is what tmux shows of one session.
type Alert struct {
	Attached int    // clients showing it
	Activity string // the time of its last key input or attach (changes when a person types)
	Bell     bool   // a window rang while no client showed it
	Silence  bool   // a window fell silent (monitor-silence) while no client showed it
}

// ParseAlerts reads a value of the alerts subscription; entries that do
// not parse are left out.
func ParseAlerts(v string) map[string]Alert {
	out := map[string]Alert{}
	for _, e := range strings.Split(v, ";") {
		name, rest, ok := strings.Cut(e, "=")
		if !ok || name == "" {
			continue
		}
		f := strings.SplitN(rest, ":", 3)
		if len(f) != 3 {
			continue
		}
		n, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		out[name] = Alert{Attached: n, Activity: f[1], Bell: strings.Contains(f[2], "b"), Silence: strings.Contains(f[2], "s")}
	}
	return out
}

// EnsureWatchSession creates WatchSession, detached, unless it exists.
// Its pane runs `tmux wait-for` on a channel nobody signals (a client of
// this server that waits, without CPU, until the server ends), so the pane
// never dies: a dead pane keeps its terminal's name, and tmux refuses
// `attach` from a terminal that gets the same name later while $TMUX is
// set ("sessions should be nested with care"); and tmux 3.3a's server
// crashed when a control client attached while a pane of its session died.
// It returns once the pane runs, or an error (the session removed again)
// if it died.
func (s *Server) EnsureWatchSession(ctx context.Context) error {
	if s.HasSession(ctx, WatchSession) {
		return nil
	}
	argv := []string{s.Bin, "-N", "-S", s.Socket, "wait-for", WatchSession + "-never"}
	if _, err := s.Run(ctx, append([]string{"new-session", "-d", "-s", WatchSession, "-x", "20", "-y", "2", "--"}, argv...)...); err != nil {
		return err
	}
	// A wait-for client that cannot connect ends within milliseconds: one
	// look after 200 ms tells. (Polling every 20 ms started a tmux client
	// each time, which cost the supervisor's start 0.3 s of an emulated
	// CPU and told nothing sooner: only a dead pane ends the wait.)
	select {
	case <-time.After(200 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	out, err := s.Run(ctx, "list-panes", "-t", "="+WatchSession, "-F", "#{pane_dead}")
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) == "1" {
		s.KillSession(ctx, WatchSession)
		return errors.New("the pane of " + WatchSession + " ended at once")
	}
	return nil
}

// Watch runs a control-mode client attached to WatchSession (read-only,
// no output, not counted for sizes) subscribed to every session's alerts,
// calls ready once tmux took the subscription (the client is attached),
// and sends each new value, parsed, on out until the client exits (the
// server exited, or ctx ended). It returns why it ended.
func (s *Server) Watch(ctx context.Context, out chan<- map[string]Alert, ready func()) error {
	cmd := s.command(ctx, "-C", "attach-session", "-t", "="+WatchSession, "-f", "ignore-size,no-output,read-only")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("tmux control client: %w", err)
	}
	// stdin stays open while the client runs: its end ends the client.
	defer stdin.Close()
	// The subscription is asked for once the client is attached (its
	// %session-changed): tmux runs a command sent earlier before the
	// attach and refuses it ("no current client"; measured with 3.3a).
	prefix := "%subscription-changed " + alertsSub + " "
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var failed string
	asked, took := false, false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case asked && !took && strings.HasPrefix(line, "%end "):
			took = true
			ready()
		case strings.HasPrefix(line, prefix):
			_, v, ok := strings.Cut(line, " : ")
			if !ok {
				continue
			}
			select {
			case out <- ParseAlerts(v):
			case <-ctx.Done():
			}
		case !asked && strings.HasPrefix(line, "%session-changed "):
			asked = true
			if _, err := io.WriteString(stdin, "refresh-client -B '"+alertsSub+"::"+alertsFormat+"'\n"); err != nil {
				failed = err.Error()
			}
		case strings.HasPrefix(line, "%error"):
			failed = line
		}
		if failed != "" {
			cmd.Process.Kill()
			break
		}
	}
	scanErr := sc.Err()
	stdin.Close()
	err = cmd.Wait()
	switch {
	case failed != "":
		return errors.New("tmux control client: " + failed)
	case !asked:
		return errors.New("tmux control client: it never attached")
	case scanErr != nil:
		return fmt.Errorf("tmux control client: %w", scanErr)
	case err != nil:
		return fmt.Errorf("tmux control client: %w", err)
	}
	return errors.New("tmux control client exited")
}
