package main

// Process tests of the supervisor's robustness against what a user (or an
// agent) can do to its files and its control socket: the registry
// removed, moved or replaced, its directories removed, floods of control
// datagrams, control bytes in them. They use the harness in
// harness_test.go; every wait has a deadline.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/control"
	"github.com/agent-box/agent-box/internal/runtime/registry"
)

// listed reports whether the registry on disk is valid and lists every
// one of names, not stopped.
func (b *box) listed(names ...string) bool {
	r, err := registry.Load(b.registryPath())
	if err != nil {
		return false
	}
	for _, n := range names {
		if s, ok := r.Find(n); !ok || s.Stopped {
			return false
		}
	}
	return true
}

// samePIDs fails the test unless each session runs with the pid it had.
func (b *box) samePIDs(what string, pids map[string]int) {
	b.t.Helper()
	for name, pid := range pids {
		if p, ok := b.running(name); !ok || p.PID != pid {
			b.t.Errorf("%s: session %s runs %v with pid %d, want the untouched pid %d\nsupervisor log:\n%s",
				what, name, ok, p.PID, pid, b.supLog)
		}
	}
}

// roundTrip makes the supervisor handle one more registry event to its
// end: a session added by the CLI runs.
func (b *box) roundTrip(name string) {
	b.t.Helper()
	b.ok("session", "add", name, "--agent", "sleep")
	b.waitRunning(name)
}

// writeRegistry replaces the registry by rename, as every writer does.
func (b *box) writeRegistry(r *registry.Registry) {
	b.t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		b.t.Fatal(err)
	}
	tmp := b.registryPath() + ".by-hand"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		b.t.Fatal(err)
	}
	if err := os.Rename(tmp, b.registryPath()); err != nil {
		b.t.Fatal(err)
	}
}

func TestRegistryRemovedMovedOrReplacedKillsNoSession(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(b *box)
		log    string
	}{
		{"removed", func(b *box) {
			if err := os.Remove(b.registryPath()); err != nil {
				b.t.Fatal(err)
			}
		}, "was missing: rebuilt"},
		{"moved away", func(b *box) {
			if err := os.Rename(b.registryPath(), filepath.Join(b.dir, "sessions.json.moved")); err != nil {
				b.t.Fatal(err)
			}
		}, "was missing: rebuilt"},
		{"replaced by one that omits a running session", func(b *box) {
			r := b.registry()
			var keep []registry.Session
			for _, s := range r.Sessions {
				if s.Name != "b" {
					keep = append(keep, s)
				}
			}
			r.Sessions = keep
			b.writeRegistry(r)
		}, `session "b" is missing from the registry but was not removed with 'session rm': written back`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// a comes from the seed, b only from the CLI: only the
			// supervisor's memory can bring b back
			bx := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}]}`)
			bx.startSupervisor()
			bx.ok("session", "add", "b", "--agent", "sleep", "--", "1")
			pids := map[string]int{"a": bx.waitRunning("a").PID, "b": bx.waitRunning("b").PID}
			tc.change(bx)
			bx.waitFor(10*time.Second, "the registry lists a and b again", func() bool { return bx.listed("a", "b") })
			bx.roundTrip("c")
			bx.samePIDs("after the registry was "+tc.name, pids)
			if b, _ := bx.registry().Find("b"); len(b.Args) != 1 || b.Args[0] != "1" || b.Agent != "sleep" || b.Cwd != bx.home {
				t.Errorf("b written back as %+v, want agent sleep, args [1], cwd %s", b, bx.home)
			}
			if n := strings.Count(bx.supLog.String(), tc.log); n != 1 {
				t.Errorf("log has %d lines with %q, want 1:\n%s", n, tc.log, bx.supLog)
			}
		})
	}
}

func TestDeletedRegistryIsRebuiltWithTheLiveSessions(t *testing.T) {
	t.Parallel()
	b := newBox(t, "") // no seed: the rebuilt registry holds exactly the live sessions
	b.startSupervisor()
	pids := map[string]int{}
	for _, n := range []string{"x", "y"} {
		b.ok("session", "add", n, "--agent", "sleep")
		pids[n] = b.waitRunning(n).PID
	}
	if err := os.Remove(b.registryPath()); err != nil {
		t.Fatal(err)
	}
	b.waitFor(10*time.Second, "the registry is rebuilt", func() bool { return b.listed("x", "y") })
	if got := len(b.registry().Sessions); got != 2 {
		t.Errorf("rebuilt registry has %d sessions, want 2", got)
	}
	b.samePIDs("after the registry was deleted", pids)
	if log := b.supLog.String(); !strings.Contains(log, `was missing: rebuilt with the supervised sessions ["x", "y"]`+"\n") {
		t.Errorf("the rebuild is not logged:\n%s", log)
	}
}

func TestSessionRmAndStopStillEndSessionsAndStayEnded(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	b.startSupervisor()
	for _, n := range []string{"gone", "parked", "kept"} {
		b.ok("session", "add", n, "--agent", "sleep")
		b.waitRunning(n)
	}
	kept := map[string]int{"kept": b.waitRunning("kept").PID}
	b.ok("session", "rm", "gone")
	b.waitGone("gone")
	b.ok("session", "stop", "parked")
	b.waitGone("parked")
	// the registry goes away: only what still runs is written back
	if err := os.Remove(b.registryPath()); err != nil {
		t.Fatal(err)
	}
	b.waitFor(10*time.Second, "the registry is rebuilt", func() bool { return b.listed("kept") })
	b.roundTrip("probe")
	r := b.registry()
	for _, n := range []string{"gone", "parked"} {
		if _, ok := r.Find(n); ok {
			t.Errorf("ended session %s written back into the registry", n)
		}
		if _, ok := b.panes()[n]; ok {
			t.Errorf("ended session %s runs again", n)
		}
	}
	b.samePIDs("after rm, stop and a rebuild", kept)
}

func TestTmuxSessionNotStartedByAgentBoxIsLeftAlone(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	b.startSupervisor()
	own := exec.Command(tmuxBin, "-S", b.tm.Socket, "new-session", "-d", "-s", "mine", sleepBin, "100000")
	own.Env = b.env
	if out, err := own.CombinedOutput(); err != nil {
		t.Fatalf("creating a session on the supervisor's server: %v\n%s", err, out)
	}
	pid := b.waitRunning("mine").PID
	b.roundTrip("x")
	b.roundTrip("y")
	b.samePIDs("after two reconciles", map[string]int{"mine": pid})
	const line = `tmux session "mine" was not started by agent-box and is not in the registry: left alone`
	if n := strings.Count(b.supLog.String(), line); n != 1 {
		t.Errorf("log has %d lines %q, want 1:\n%s", n, line, b.supLog)
	}
}

// removeAll is `rm -rf`, retried while the supervisor writes into the
// directory at the same moment (ENOTEMPTY).
func removeAll(t *testing.T, dir string) {
	t.Helper()
	var err error
	for i := 0; i < 5; i++ {
		if err = os.RemoveAll(dir); err == nil {
			return
		}
	}
	t.Fatal(err)
}

func TestAddAfterConfigDirectoryRemovalIsLiveWithinASecond(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{".config/agent-box", ".config"} {
		for _, running := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s removed, a session running %v", dir, running), func(t *testing.T) {
				t.Parallel()
				b := newBox(t, "")
				b.startSupervisor()
				pids := map[string]int{}
				if running {
					b.ok("session", "add", "a", "--agent", "sleep")
					pids["a"] = b.waitRunning("a").PID
				}
				removeAll(t, filepath.Join(b.home, dir))
				for _, n := range []string{"x", "y"} {
					b.ok("session", "add", n, "--agent", "sleep")
					b.waitFor(time.Second, fmt.Sprintf("%s runs within a second of its add", n), func() bool {
						_, ok := b.running(n)
						return ok
					})
				}
				b.samePIDs("after the removal", pids)
			})
		}
	}
}

// sendDatagrams sends each message to the supervisor's control socket.
func (b *box) sendDatagrams(msgs ...string) {
	b.t.Helper()
	sock := filepath.Join(b.runtime, "supervisor.sock")
	for _, m := range msgs {
		if err := control.Send(sock, []byte(m)); err != nil {
			b.t.Fatalf("sending %q: %v", m, err)
		}
	}
}

var foldedAll = regexp.MustCompile(`restart of all sessions requested (\d+) more times`)

func TestRestartAllFloodCostsOneRoundPerSecond(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}, {"name": "b", "agent": "sleep"}, {"name": "c", "agent": "sleep"}]}`)
	b.startSupervisor()
	for _, n := range []string{"a", "b", "c"} {
		b.waitRunning(n)
	}
	const n = 200
	flood := make([]string, n)
	for i := range flood {
		flood[i] = "restart-all"
	}
	start := time.Now()
	b.sendDatagrams(flood...)
	sent := time.Since(start)
	// every request is accounted for in the log: honoured at once, or
	// folded into a later round
	var rounds int
	b.waitFor(20*time.Second, fmt.Sprintf("the log accounts for all %d requests", n), func() bool {
		log := b.supLog.String()
		rounds = strings.Count(log, "restart of all sessions requested\n")
		total := rounds
		for _, m := range foldedAll.FindAllStringSubmatch(log, -1) {
			k, _ := strconv.Atoi(m[1])
			total += k
			rounds++
		}
		return total >= n
	})
	// one round at once and one folded round per second after it
	if max := 2 + int(sent/time.Second); rounds > max {
		t.Fatalf("%d restart-all datagrams sent in %s caused %d restart rounds, want at most %d", n, sent.Round(time.Millisecond), rounds, max)
	}
	for _, name := range []string{"a", "b", "c"} {
		b.waitFor(10*time.Second, fmt.Sprintf("session %s restarted %d times", name, rounds), func() bool {
			return b.observation(name).Restarts >= rounds
		})
		if got := b.observation(name).Restarts; got != rounds {
			t.Errorf("session %s restarted %d times for %d rounds", name, got, rounds)
		}
		b.waitRunning(name)
	}
	t.Logf("%d datagrams in %s: %d rounds", n, sent.Round(time.Millisecond), rounds)
}

// waitLogged sends a valid request after the others and waits until the
// supervisor logs it: datagrams are handled in order, so every earlier one
// has been handled too.
func (b *box) waitLogged(session string) string {
	b.t.Helper()
	b.sendDatagrams("restart " + session)
	line := fmt.Sprintf("session %q: restart requested", session)
	b.waitFor(10*time.Second, "the supervisor handles the datagrams", func() bool {
		return strings.Contains(b.supLog.String(), line)
	})
	return b.supLog.String()
}

func TestControlDatagramWithEscapeBytesIsLoggedEscapedAndCut(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}]}`)
	b.startSupervisor()
	b.waitRunning("a")
	const prefix = "\x1b]0;owned\x07\x1b[2J\x1b[31m"
	hostile := prefix + strings.Repeat("A", 300)
	b.sendDatagrams(hostile)
	log := b.waitLogged("a")
	if bytes.ContainsAny([]byte(log), "\x1b\x07") {
		t.Errorf("raw control bytes in the log:\n%q", log)
	}
	want := fmt.Sprintf(`agent-box: ignoring control message "\x1b]0;owned\x07\x1b[2J\x1b[31m%s... (%d bytes)"`+"\n",
		strings.Repeat("A", 64-len(prefix)), len(hostile))
	if !strings.Contains(log, want) {
		t.Errorf("log lacks the escaped, cut line %q:\n%s", want, log)
	}
}

func TestJunkDatagramFloodLogsOneLine(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}]}`)
	b.startSupervisor()
	b.waitRunning("a")
	junk := make([]string, 100)
	for i := range junk {
		junk[i] = fmt.Sprintf("junk %d %s", i, strings.Repeat("x", 4000))
	}
	b.sendDatagrams(junk...)
	log := b.waitLogged("a")
	if n := strings.Count(log, "ignoring control message"); n != 1 {
		t.Errorf("100 junk datagrams logged %d lines, want 1", n)
	}
	long := 0
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "control message") && len(l) > 200 {
			long++
		}
	}
	if long > 0 {
		t.Errorf("%d log lines about control messages are longer than 200 bytes", long)
	}
}

// A FIFO in place of tmux.token (the runtime dir is the user's) must not
// hang a supervisor that finds a server on the socket: it is refused as
// foreign, quickly.
func TestFIFOTokenFileHangsNoSupervisorStart(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	b.startSupervisor()
	b.ok("session", "add", "s")
	b.waitRunning("s")
	// a crash leaves the server; then the token is swapped for a FIFO
	b.sup.Process.Kill()
	<-b.supDone
	b.sup = nil
	tok := filepath.Join(b.runtime, "tmux.token")
	os.Remove(tok)
	if err := syscall.Mkfifo(tok, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() { done <- b.run("", "supervise") }()
	select {
	case r := <-done:
		if r.code != 9 {
			t.Errorf("supervise with a FIFO token: exit %d, want 9 (foreign server)\n%s", r.code, r.stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("supervise hung on a FIFO tmux.token")
	}
}
