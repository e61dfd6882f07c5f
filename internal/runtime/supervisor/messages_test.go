package supervisor

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/journal"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/tmux"
)

// newTestSup is a supervisor whose tmux always fails (/bin/false) and whose
// clock is fake, logging into log.
func newTestSup(t *testing.T, log *bytes.Buffer, table agents.Table) (*sup, *fakeClock) {
	t.Helper()
	home := t.TempDir()
	env, err := paths.FromEnv(func(k string) string {
		return map[string]string{"HOME": home, "AGENT_BOX_RUNTIME_DIR": home + "/run"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := &sup{
		cfg:      Config{Env: env, Spawn: "/bin/agent-box-exec", Agents: table, Log: log},
		log:      journal.New(log, "agent-box"),
		clock:    clock,
		policy:   defaultPolicy(),
		tm:       &tmux.Server{Bin: "/bin/false", Socket: home + "/none"},
		sessions: map[string]*session{},
		timerCh:  make(chan timerMsg, 16),
		reqCh:    make(chan reqMsg, 16),
		junkCh:   make(chan struct{}, 1),
		done:     make(chan struct{}),
		warned:   map[string]bool{},
	}
	t.Cleanup(func() { close(s.done) })
	return s, clock
}

func dgram(s string) datagram { return datagram{data: []byte(s), size: len(s)} }

func TestJunkDatagramsLogOneLineAndACountPerWindow(t *testing.T) {
	var log bytes.Buffer
	s, clock := newTestSup(t, &log, nil)
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		s.handleMessage(ctx, dgram("frobnicate"))
	}
	s.handleMessage(ctx, dgram("restart bad/name"))
	if got := strings.Count(log.String(), "\n"); got != 1 {
		t.Fatalf("101 ignored datagrams logged %d lines, want 1:\n%s", got, log.String())
	}
	if len(clock.delays) != 1 || clock.delays[0] != junkWindow {
		t.Fatalf("timers %v, want one of %s", clock.delays, junkWindow)
	}
	clock.fns[0]()
	<-s.junkCh
	s.junkWindowEnded()
	s.handleMessage(ctx, dgram("again"))
	want := "agent-box: ignoring control message \"frobnicate\"\n" +
		"agent-box: ignored 100 more control messages in the last 1m0s\n" +
		"agent-box: ignoring control message \"again\"\n"
	if log.String() != want {
		t.Errorf("log:\n%s\nwant:\n%s", log.String(), want)
	}
}

func TestOversizedDatagramIsLoggedCutWithItsRealSize(t *testing.T) {
	var log bytes.Buffer
	s, _ := newTestSup(t, &log, nil)
	data := bytes.Repeat([]byte("\x1b[2J"), maxDatagram/4)
	// as read: the first maxDatagram bytes of a 5000-byte datagram
	s.handleMessage(context.Background(), datagram{data: data, size: 5000})
	want := "agent-box: ignoring control message \"" + strings.Repeat(`\x1b[2J`, logBytes/4) + "... (5000 bytes)\"\n"
	if log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
	// restart-all followed by garbage is not restart-all
	log.Reset()
	s.junkWindowEnded()
	s.handleMessage(context.Background(), datagram{data: []byte("restart-all"), size: 300})
	if !strings.Contains(log.String(), "ignoring control message \"restart-all... (300 bytes)\"") {
		t.Errorf("an oversized restart-all was not ignored: %q", log.String())
	}
}

// TestLogLinesEscapeUserControlledText feeds hostile text through the log
// lines that can carry it and requires that no control byte, DEL or bidi
// control reaches the log.
func TestLogLinesEscapeUserControlledText(t *testing.T) {
	var log bytes.Buffer
	const evil = "\x1b]0;owned\x07\x1b[2J\u202e\x7f\r"
	s, _ := newTestSup(t, &log, agents.Table{"ok" + evil: {Command: "/bin/true"}})
	ctx := context.Background()
	s.launch(ctx, registry.Session{Name: "x", Agent: "a" + evil, Cwd: "/" + evil}, nil, false)
	s.handleMessage(ctx, dgram("restart "+evil))
	s.junkWindowEnded()
	s.handleMessage(ctx, dgram(evil+strings.Repeat("x", 200)))
	s.registryError(errors.New("corrupt registry: " + evil))
	s.lastErr = "" // so that the next error is logged too
	s.sessions["lost"] = &session{name: "lost", entry: registry.Session{Name: "lost", Agent: "a" + evil, Cwd: "/" + evil}}
	s.cfg.Env.ConfigDir = "/proc/" + evil // not writable: the write-back fails and says so
	s.restore(ctx, &registry.Registry{})
	s.reconcile(ctx) // tmux fails: its error is logged
	out := log.String()
	t.Logf("log:\n%s", out)
	if n := strings.Count(out, "\n"); n < 5 {
		t.Fatalf("only %d log lines:\n%s", n, out)
	}
	for i, r := range strings.TrimSuffix(out, "\n") {
		if r < 0x20 && r != '\n' || r == 0x7f || r == 0x202e || r >= 0x80 && r <= 0x9f {
			t.Errorf("log has raw %U at byte %d:\n%s", r, i, out)
		}
	}
	for _, want := range []string{`\x1b]0;owned\x07`, `\u202e`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks the escaped text %s:\n%s", want, out)
		}
	}
}
