package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/state"
	"github.com/google/go-cmp/cmp"
)

func TestSeedStartsSessionsAndLaterSeedAddsOnlyNewUntombstonedOnes(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}, {"name": "b", "agent": "sleep"}]}`)
	b.startSupervisor()
	b.waitRunning("a")
	b.waitRunning("b")
	b.stopSupervisor()

	b.ok("session", "rm", "b") // tombstones b
	// the seed changes: a gets other args (must not be applied), c is new, b is back
	b.writeSeed(`{"sessions": [{"name": "a", "agent": "sh", "args": ["exit 3"]}, {"name": "b", "agent": "sleep"}, {"name": "c", "agent": "sleep"}]}`)
	b.startSupervisor()
	b.waitRunning("a")
	b.waitRunning("c")
	r := b.registry()
	var names []string
	for _, s := range r.Sessions {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"a", "c"}, names); diff != "" {
		t.Errorf("registry sessions (-want +got):\n%s", diff)
	}
	if a, _ := r.Find("a"); a.Agent != "sleep" {
		t.Errorf("seed modified existing session a: agent %q", a.Agent)
	}
	if diff := cmp.Diff([]string{"b"}, r.Tombstones); diff != "" {
		t.Errorf("tombstones (-want +got):\n%s", diff)
	}
	if _, ok := b.panes()["b"]; ok {
		t.Errorf("tombstoned session b runs in tmux")
	}
}

func TestKill9RespawnsSession(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}]}`)
	b.startSupervisor()
	p := b.waitRunning("a")
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	b.waitFor(5*time.Second, "a respawns with a new pid", func() bool {
		q, ok := b.running("a")
		return ok && q.PID != p.PID
	})
	t.Logf("respawn after kill -9 took %s", time.Since(start))
	// the observation is written right after the respawn
	b.waitFor(5*time.Second, "the restart is recorded", func() bool { return b.observation("a").Restarts > 0 })
	o := b.observation("a")
	if o.Restarts != 1 || o.LastExit == nil || o.LastExit.Signal != "9" {
		t.Errorf("observation after kill -9: restarts %d, last exit %+v; want 1 and signal 9", o.Restarts, o.LastExit)
	}
}

func TestExitZeroParksSession(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "done", "agent": "sh", "args": ["exit 0"]}]}`)
	b.startSupervisor()
	b.waitFor(10*time.Second, "done is stopped in the registry", func() bool {
		s, ok := b.registry().Find("done")
		return ok && s.Stopped
	})
	b.waitGone("done")
	if o := b.observation("done"); o.LastExit == nil || o.LastExit.Status != 0 || o.Restarts != 0 {
		t.Errorf("observation: %+v, want last exit 0 and no restart", o)
	}
	if got := b.ok("session", "ls"); !strings.Contains(got, "stopped") {
		t.Errorf("session ls does not show the parked session as stopped:\n%s", got)
	}
}

// A session that exits 0 while the registry cannot be written (here its
// lock is held past the writers' wait; a full disk refuses the write the
// same way) is parked once the registry takes the write: not at the next
// registry event or resync, which may be minutes away.
func TestAnExitZeroThatCouldNotBeParkedIsParkedOnceTheRegistryTakesTheWrite(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "done", "agent": "sh", "args": ["sleep 3; exit 0"]}]}`)
	b.startSupervisor()
	b.waitRunning("done")
	// read-only: the holder's close is no write the registry's watch sees
	lock, err := os.Open(b.registryPath() + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	b.waitFor(30*time.Second, "the park fails", func() bool {
		return strings.Contains(b.supLog.String(), `session "done" exited 0 but could not be parked`)
	})
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	b.waitFor(10*time.Second, "done is parked", func() bool {
		s, ok := b.registry().Find("done")
		return ok && s.Stopped
	})
	b.waitGone("done")
}

// `session rm` leaves a tombstone; the supervisor prunes those that keep
// nothing away (a removed name the seed does not hold, once its session is
// killed) and keeps a seed name's, so removed names do not pile up.
func TestTheSupervisorPrunesTombstonesThatKeepNothingAway(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "seeded", "agent": "sleep"}]}`)
	b.startSupervisor()
	b.waitRunning("seeded")
	for _, n := range []string{"x1", "x2", "x3"} {
		b.ok("session", "add", n, "--agent", "sleep")
		b.waitRunning(n)
	}
	for _, n := range []string{"seeded", "x1", "x2", "x3"} {
		b.ok("session", "rm", n)
	}
	b.waitFor(10*time.Second, "only the seed name's tombstone is left", func() bool {
		return slices.Equal(b.registry().Tombstones, []string{"seeded"})
	})
	for _, n := range []string{"seeded", "x1", "x2", "x3"} {
		b.waitGone(n)
	}
	// the seed name's tombstone still works: a new supervisor does not seed it again
	b.stopSupervisor()
	b.startSupervisor()
	b.ok("session", "add", "after", "--agent", "sleep")
	b.waitRunning("after")
	if _, ok := b.registry().Find("seeded"); ok {
		t.Errorf("the removed seed session came back")
	}
}

func TestCrashLoopBacksOffWithoutBusyCPU(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "crash", "agent": "false"}]}`)
	b.startSupervisor()
	pid := b.sup.Process.Pid
	ticks0 := cpuTicks(t, pid)
	// launches at 0, ~0 (first restart immediate), +1 s, +2 s (then +4 s)
	b.waitFor(15*time.Second, "four launches", func() bool { return b.observation("crash").Launches >= 4 })
	o := b.observation("crash")
	s := o.RecentStarts
	gaps := []time.Duration{s[1].Sub(s[0]), s[2].Sub(s[1]), s[3].Sub(s[2])}
	want := []time.Duration{0, time.Second, 2 * time.Second}
	// A gap is the program's time to die (process start-up; slow under
	// -race) plus the backoff delay: the delay is a lower bound, the slack
	// only catches stalls.
	const slack = 1500 * time.Millisecond
	for i := range gaps {
		if gaps[i] < want[i] || gaps[i] > want[i]+slack {
			t.Errorf("gap %d between launches = %s, want %s (+ at most %s); all gaps %v", i, gaps[i], want[i], slack, gaps)
		}
	}
	if o.NextStart == nil {
		// the 4th death schedules a 4 s wait; it may not have happened yet
		b.waitFor(5*time.Second, "a pending delayed restart", func() bool { return b.observation("crash").NextStart != nil })
	}
	used := cpuTicks(t, pid) - ticks0
	if used > 30 { // 300 ms of CPU over ~3.5 s of crash loop
		t.Errorf("supervisor used %d0 ms CPU during the crash loop, want < 300 ms", used)
	}
	t.Logf("supervisor CPU during crash loop: %d0 ms; gaps %v", used, gaps)
}

func TestCLIChangesAreReflectedInTmux(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	b.startSupervisor()

	b.ok("session", "add", "w", "--agent", "sleep")
	p := b.waitRunning("w")
	var ls []struct {
		Name, Agent, State, Cwd string
		Args                    []string
	}
	if err := json.Unmarshal([]byte(b.ok("session", "ls", "--json")), &ls); err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Name != "w" || ls[0].State != "running" || ls[0].Cwd != b.home || ls[0].Agent != "sleep" {
		t.Errorf("session ls --json = %+v, want w running in HOME", ls)
	}

	b.ok("session", "stop", "w")
	b.waitGone("w")
	b.ok("session", "start", "w")
	p = b.waitRunning("w")

	b.ok("session", "restart", "w")
	b.waitFor(5*time.Second, "restart gives w a new process", func() bool {
		q, ok := b.running("w")
		return ok && q.PID != p.PID
	})
	p, _ = b.running("w")

	b.ok("session", "add", "x", "--agent", "sleep")
	px := b.waitRunning("x")
	b.ok("session", "restart", "--all")
	b.waitFor(5*time.Second, "restart --all gives w and x new processes", func() bool {
		q, ok1 := b.running("w")
		r, ok2 := b.running("x")
		return ok1 && ok2 && q.PID != p.PID && r.PID != px.PID
	})

	b.ok("session", "rm", "w")
	b.waitGone("w")
	if _, ok := b.running("x"); !ok {
		t.Errorf("removing w disturbed x")
	}
	if got := b.observation("w").Restarts; got < 2 {
		t.Errorf("w restarts = %d, want >= 2", got)
	}
}

func TestAddWithArgsAndCwdRunsWithoutShell(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	b.startSupervisor()
	cwd := filepath.Join(b.dir, "work dir")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(b.dir, "report.json")
	args := []string{out, "$(touch pwned)", "a;b", ";", "'\"`", "#{session_name}", "*"}
	b.ok(append([]string{"session", "add", "r", "--agent", "report", "--cwd", cwd, "--"}, args...)...)
	rep := waitReport(t, b, out)
	if diff := cmp.Diff(append([]string{"report"}, args...), rep.Args); diff != "" {
		t.Errorf("agent argv (-want +got):\n%s", diff)
	}
	if rep.Cwd != cwd {
		t.Errorf("agent cwd = %q, want %q", rep.Cwd, cwd)
	}
	if rep.OOMScoreAdj != "1000" {
		t.Errorf("agent oom_score_adj = %q, want 1000", rep.OOMScoreAdj)
	}
	if _, err := os.Stat(filepath.Join(cwd, "pwned")); err == nil {
		t.Errorf("an argument was evaluated by a shell")
	}
}

func waitReport(t *testing.T, b *box, path string) agentReport {
	t.Helper()
	var rep agentReport
	b.waitFor(10*time.Second, "the agent writes its report", func() bool {
		data, err := os.ReadFile(path)
		return err == nil && json.Unmarshal(data, &rep) == nil
	})
	return rep
}

func TestEnvFileValuesArriveByteExactAndOverrideInheritedEnvironment(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	b.setEnv("FROM_UNIT", "unit")
	b.setEnv("OVERRIDDEN", "unit")
	values := map[string]string{
		"SPACES":     "  two  spaces  ",
		"QUOTES":     `'single' "double" \back\slash`,
		"SUBST":      "$(touch pwned) ${HOME} $HOME",
		"BACKTICK":   "`touch pwned`",
		"EQUALS":     "a=b==c=",
		"PERCENT":    "100% %i %% %n",
		"UNICODE":    "héllo wörld ✓ 日本語 \u200b",
		"EMPTY":      "",
		"HASH":       "# not a comment",
		"CR":         "carriage\rreturn",
		"TRAILING":   "ends with backslash \\",
		"OVERRIDDEN": "file",
	}
	for k, v := range values {
		if r := b.run(v+"\n", "env", "set", k); r.code != 0 {
			t.Fatalf("env set %s: exit %d: %s", k, r.code, r.stderr)
		}
	}
	// ls prints keys only, never values
	ls := b.ok("env", "ls")
	for k, v := range values {
		if !strings.Contains(ls, k+"\n") {
			t.Errorf("env ls misses %s", k)
		}
		if len(v) > 3 && strings.Contains(ls, v) {
			t.Errorf("env ls shows the value of %s", k)
		}
	}
	if fi, err := os.Stat(filepath.Join(b.home, ".config/agent-box/env")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("env file mode: %v %v, want 0600", fi.Mode(), err)
	}
	b.startSupervisor()
	out := filepath.Join(b.dir, "report.json")
	b.ok("session", "add", "e", "--agent", "report", "--", out)
	rep := waitReport(t, b, out)
	got := map[string]string{}
	for _, kv := range rep.Env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	for k, v := range values {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("agent env %s = %q (present %v), want %q", k, g, ok, v)
		}
	}
	if got["FROM_UNIT"] != "unit" {
		t.Errorf("inherited FROM_UNIT = %q, want %q", got["FROM_UNIT"], "unit")
	}
	if got["AGENT_BOX_SESSION"] != "e" {
		t.Errorf("AGENT_BOX_SESSION = %q, want e", got["AGENT_BOX_SESSION"])
	}
	if _, err := os.Stat(filepath.Join(b.home, "pwned")); err == nil {
		t.Errorf("a value was evaluated by a shell")
	}
}

// Each command runs twice from the same env file, once as `env ...` and
// once as `session env ...`: same stdout, exit code and resulting file, and
// stderr differs only by the leading deprecation note.
func TestSessionEnvIsADeprecatedAliasOfEnv(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	const note = "agent-box: note: 'session env' is deprecated; use 'agent-box env ...'\n"
	envFile := filepath.Join(b.home, ".config/agent-box/env")
	read := func() string {
		data, err := os.ReadFile(envFile)
		if errors.Is(err, os.ErrNotExist) {
			return "(absent)"
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	restore := func(content string) {
		if content == "(absent)" {
			os.Remove(envFile)
			return
		}
		if err := os.WriteFile(envFile, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		stdin string
		args  []string
	}{
		{"v1\n", []string{"set", "A"}},
		{"v2\n", []string{"set", "B"}},
		{"", []string{"ls"}},
		{"", []string{"rm", "A"}},
		{"", []string{"rm", "NOPE"}},
		{"v\n", []string{"set", "1A"}},
		{"", []string{"frob"}},
		{"", nil},
	} {
		before := read()
		want := b.run(tc.stdin, append([]string{"env"}, tc.args...)...)
		wantFile := read()
		restore(before)
		got := b.run(tc.stdin, append([]string{"session", "env"}, tc.args...)...)
		if got.stdout != want.stdout || got.code != want.code || got.stderr != note+want.stderr {
			t.Errorf("session env %q: exit %d stdout %q stderr %q\nwant exit %d stdout %q stderr %q",
				tc.args, got.code, got.stdout, got.stderr, want.code, want.stdout, note+want.stderr)
		}
		if gotFile := read(); gotFile != wantFile {
			t.Errorf("session env %q left env file %q, env left %q", tc.args, gotFile, wantFile)
		}
	}
	if got := b.ok("env", "ls"); got != "B\n" {
		t.Errorf("env ls after the commands = %q, want B", got)
	}
}

func TestCorruptRegistryIsReportedAndLeftByteIdenticalWhileSessionsLive(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}]}`)
	b.startSupervisor()
	p := b.waitRunning("a")
	corrupt := []byte("{\"version\": 1, \"sessions\": [ oops\n")
	tmp := b.registryPath() + ".new"
	if err := os.WriteFile(tmp, corrupt, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, b.registryPath()); err != nil {
		t.Fatal(err)
	}
	b.waitFor(5*time.Second, "the supervisor reports the corrupt registry", func() bool {
		return strings.Contains(b.supLog.String(), "corrupt registry")
	})
	for _, args := range [][]string{
		{"session", "ls"},
		{"session", "add", "n", "--agent", "sleep"},
		{"session", "stop", "a"},
		{"session", "rm", "a"},
	} {
		r := b.run("", args...)
		if r.code != 7 {
			t.Errorf("%s: exit %d, want 7 (corrupt registry)", strings.Join(args, " "), r.code)
		}
		if lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "agent-box: corrupt registry") || !strings.HasPrefix(lines[1], "hint: fix it by hand, or move it away") {
			t.Errorf("%s: stderr %q, want 'agent-box: corrupt registry ...' and one hint: line", strings.Join(args, " "), r.stderr)
		}
	}
	// a death makes the supervisor look at the registry again
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	b.waitFor(5*time.Second, "tmux shows a's pane dead", func() bool { return b.panes()["a"].Dead })
	b.ok("version") // a round trip: the supervisor's pidfd event precedes this
	got, err := os.ReadFile(b.registryPath())
	if err != nil || string(got) != string(corrupt) {
		t.Errorf("registry changed: %q, %v; want byte-identical %q", got, err, corrupt)
	}
	if _, ok := b.panes()["a"]; !ok {
		t.Errorf("session a was removed from tmux while the registry was corrupt")
	}
}

func TestForeignTmuxServerOnSocketIsRefused(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}]}`)
	if err := os.MkdirAll(b.runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	foreign := exec.Command(tmuxBin, "-S", b.tm.Socket, "-f", "/dev/null", "new-session", "-d", "-s", "mine", sleepBin, "100000")
	foreign.Env = b.env
	if out, err := foreign.CombinedOutput(); err != nil {
		t.Fatalf("starting a foreign tmux: %v\n%s", err, out)
	}
	r := b.run("", "supervise")
	if r.code != 9 {
		t.Errorf("supervise on a foreign server: exit %d, want 9; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "agent-box: a tmux server not started by agent-box") {
		t.Errorf("stderr does not explain the refusal:\n%s", r.stderr)
	}
	ps := b.panes()
	if _, ok := ps["mine"]; !ok || len(ps) != 1 {
		t.Errorf("foreign server's sessions changed: %v", ps)
	}
	if _, err := os.Stat(filepath.Join(b.runtime, "state.json")); err == nil {
		t.Errorf("state.json written by a refused supervisor")
	}
}

func TestCrashedSupervisorReadoptsItsServerAndKeepsSessions(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}]}`)
	b.startSupervisor()
	p := b.waitRunning("a")
	b.sup.Process.Kill()
	select {
	case <-b.supDone:
	case <-time.After(10 * time.Second):
		t.Fatal("supervisor survived SIGKILL for 10 s")
	}
	b.sup = nil
	if r := b.run("", "session", "restart", "a"); r.code != 8 {
		t.Errorf("restart with a dead supervisor: exit %d, want 8 (not running); stderr %q", r.code, r.stderr)
	}
	b.startSupervisor()
	if !strings.Contains(b.supLog.String(), "adopted") {
		t.Errorf("supervisor did not report adoption:\n%s", b.supLog)
	}
	if q, ok := b.running("a"); !ok || q.PID != p.PID {
		t.Errorf("session a after re-adoption: %+v, want the same pid %d", q, p.PID)
	}
	// and the adopted server's hooks reach the new supervisor
	syscall.Kill(p.PID, syscall.SIGKILL)
	b.waitFor(5*time.Second, "a respawns under the new supervisor", func() bool {
		q, ok := b.running("a")
		return ok && q.PID != p.PID
	})
}

// A server that carries the token but runs outside the supervisor's unit
// (started from a login with the token file read) is never adopted: the
// supervisor exits 9 and leaves it and its sessions alone.
func TestAServerWithTheTokenOutsideTheUnitIsNotAdopted(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}]}`)
	b.startSupervisor()
	p := b.waitRunning("a")
	b.sup.Process.Kill()
	<-b.supDone
	b.sup = nil
	b.setEnv("AGENT_BOX_TEST_SERVER_UNIT", "elsewhere")
	r := b.run("", "supervise")
	if r.code != 9 || !strings.Contains(r.stderr, "session-3.scope") {
		t.Errorf("supervise beside a server outside its unit: exit %d, want 9 naming where it runs; stderr:\n%s", r.code, r.stderr)
	}
	if q, ok := b.running("a"); !ok || q.PID != p.PID {
		t.Errorf("session a after the refusal: %+v, want the same pid %d", q, p.PID)
	}
}

// An adopted server is driven with its own tmux program, not the one now
// configured (a client of another build may not speak to it); a new
// server runs the configured one.
func TestAnAdoptedServerIsDrivenWithItsOwnTmux(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}]}`)
	data, err := os.ReadFile(tmuxBin)
	if err != nil {
		t.Fatal(err)
	}
	older := filepath.Join(b.dir, "tmux-older")
	if err := os.WriteFile(older, data, 0o755); err != nil {
		t.Fatal(err)
	}
	b.setEnv("AGENT_BOX_TMUX", older)
	b.startSupervisor()
	p := b.waitRunning("a")
	b.sup.Process.Kill()
	<-b.supDone
	b.sup = nil
	b.setEnv("AGENT_BOX_TMUX", tmuxBin)
	b.startSupervisor()
	// The line is written before state.json, but reaches the log through
	// the supervisor's stderr pipe, which a loaded host copies later.
	want := fmt.Sprintf("the tmux server runs %q; %q is installed", older, tmuxBin)
	b.waitFor(10*time.Second, "the log line on the adopted server's tmux", func() bool { return strings.Contains(b.supLog.String(), want) })
	if st, err := state.Read(filepath.Join(b.runtime, "state.json")); err != nil || st.Tmux != older || st.TmuxInstalled != tmuxBin {
		t.Errorf("state.json names tmux %q, installed %q (%v), want the server's %q and %q", st.Tmux, st.TmuxInstalled, err, older, tmuxBin)
	}
	if r := b.run("", "session", "ls"); r.code != 0 || !strings.Contains(r.stderr, "is installed and takes over when agent-box-sessions@") {
		t.Errorf("session ls with an older tmux running: exit %d, stderr %q, want the notice that a newer tmux waits", r.code, r.stderr)
	}
	syscall.Kill(p.PID, syscall.SIGKILL)
	b.waitFor(5*time.Second, "a respawns through the server's own tmux", func() bool {
		q, ok := b.running("a")
		return ok && q.PID != p.PID
	})
	// the sessions unit restarted on purpose: its next server runs the
	// installed tmux, and the supervisor follows it
	if err := b.tm.KillServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-b.srvDone
	b.startServer()
	b.waitRunning("a")
	b.waitFor(5*time.Second, "state.json names the new server's tmux", func() bool {
		st, err := state.Read(filepath.Join(b.runtime, "state.json"))
		return err == nil && st.Tmux == tmuxBin
	})
	if r := b.run("", "session", "ls"); r.code != 0 || strings.Contains(r.stderr, "is installed") {
		t.Errorf("session ls with the installed tmux running: exit %d, stderr %q, want no notice", r.code, r.stderr)
	}
}

func TestSIGTERMLeavesTheServerAndItsSessionsAndRemovesState(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}]}`)
	b.startSupervisor()
	p := b.waitRunning("a")
	cmd := b.sup
	b.stopSupervisor()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("supervisor exit code after SIGTERM = %d, want 0", code)
	}
	if q, ok := b.running("a"); !ok || q.PID != p.PID {
		t.Errorf("session a after the supervisor's SIGTERM: %+v (running %v), want pid %d still running", q, ok, p.PID)
	}
	for _, f := range []string{"state.json", "supervisor.sock"} {
		if _, err := os.Stat(filepath.Join(b.runtime, f)); err == nil {
			t.Errorf("%s left behind after a clean shutdown", f)
		}
	}
}

func TestAttachFromOutsideJoinsSessionOnExplicitSocket(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}]}`)

	// no server: a clear error, and attach must not start one
	r := b.run("", "session", "attach", "a")
	if r.code != 8 || !strings.Contains(r.stderr, "supervisor not running") {
		t.Errorf("attach without a server: exit %d stderr %q, want 8", r.code, r.stderr)
	}
	if b.tm.Alive() {
		t.Fatalf("attach started a tmux server")
	}

	b.startSupervisor()
	b.waitRunning("a")
	// an "SSH login": another terminal (an outer tmux on its own socket) runs attach
	outerSock := filepath.Join(filepath.Dir(b.runtime), "outer.sock")
	env := append(append([]string{}, b.env...), "TERM=xterm")
	outer := exec.Command(tmuxBin, "-S", outerSock, "-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "24", "--",
		testBinary(t), "session", "attach", "a")
	outer.Env = env
	if out, err := outer.CombinedOutput(); err != nil {
		t.Fatalf("outer tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(tmuxBin, "-S", outerSock, "kill-server").Run() })
	b.waitFor(10*time.Second, "a client is attached to session a", func() bool {
		// (the supervisor's watcher is a client too, on a session of its own)
		out, err := exec.Command(tmuxBin, "-S", b.tm.Socket, "list-clients", "-F", "#{client_session}").Output()
		return err == nil && slices.Contains(strings.Fields(string(out)), "a")
	})
	if r := b.run("", "session", "attach", "nope"); r.code != 3 {
		t.Errorf("attach to an unknown session: exit %d, want 3; stderr %q", r.code, r.stderr)
	}
}

func TestSupervisorAndCLIWritingConcurrentlyLoseNothing(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	b.startSupervisor()
	// every session exits 0 at once, so the supervisor writes "stopped"
	// into the registry while other CLI processes add entries
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if r := b.run("", "session", "add", fmt.Sprintf("s%02d", i), "--agent", "sh", "--", "exit 0"); r.code != 0 {
				errs <- fmt.Sprintf("add s%02d: exit %d: %s", i, r.code, r.stderr)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	b.waitFor(30*time.Second, fmt.Sprintf("%d sessions registered and parked", n), func() bool {
		r := b.registry()
		if len(r.Sessions) != n {
			return false
		}
		for _, s := range r.Sessions {
			if !s.Stopped {
				return false
			}
		}
		return true
	})
}

func TestConcurrentAddProcessesAllLand(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	const n = 200
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cmds[i] = b.command(ctx, "session", "add", fmt.Sprintf("c%03d", i), "--agent", "sleep")
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("add c%03d: %v", i, err)
		}
	}
	if got := len(b.registry().Sessions); got != n {
		t.Errorf("registry has %d sessions after %d concurrent adds", got, n)
	}
	fi, err := os.Stat(b.registryPath())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("registry mode %v (%v), want 0600", fi.Mode(), err)
	}
}

func TestExitCodesAndMessages(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	b.ok("session", "add", "dup", "--agent", "sleep")
	for _, tc := range []struct {
		args  []string
		stdin string
		code  int
		msg   string
	}{
		{[]string{"session", "rm", "ghost"}, "", 3, `agent-box: unknown session: "ghost"`},
		{[]string{"session", "stop", "ghost"}, "", 3, `agent-box: unknown session: "ghost"`},
		{[]string{"session", "start", "ghost"}, "", 3, `agent-box: unknown session: "ghost"`},
		{[]string{"env", "rm", "NOPE"}, "", 3, `agent-box: unknown key "NOPE"`},
		{[]string{"session", "add", "dup", "--agent", "sleep"}, "", 4, `agent-box: session already exists: "dup"`},
		{[]string{"session", "add", "bad name"}, "", 5, `agent-box: invalid session name "bad name"`},
		{[]string{"session", "add", ""}, "", 2, "agent-box: usage"},
		{[]string{"session", "add", strings.Repeat("x", 65)}, "", 5, "agent-box: invalid session name"},
		{[]string{"session", "add", "a/b"}, "", 5, "agent-box: invalid session name"},
		{[]string{"session", "add", "ünï"}, "", 5, "agent-box: invalid session name"},
		{[]string{"session", "rm", "../x"}, "", 5, "agent-box: invalid session name"},
		{[]string{"env", "set", "1A"}, "v", 5, `agent-box: invalid key "1A"`},
		{[]string{"env", "set", "A-B"}, "v", 5, `agent-box: invalid key "A-B"`},
		{[]string{"env", "set", "A"}, "two\nlines\n", 5, "agent-box: invalid value"},
		{[]string{"env", "set", "A"}, "nul\x00", 5, "agent-box: invalid value"},
		{[]string{"session", "add", "n", "--agent", "nosuch"}, "", 6, `agent-box: unknown agent "nosuch"`},
		{[]string{"session", "restart", "dup"}, "", 8, "agent-box: supervisor not running"},
		{[]string{"frobnicate"}, "", 2, `agent-box: unknown command "frobnicate"`},
	} {
		r := b.run(tc.stdin, tc.args...)
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		if r.code != tc.code || !strings.HasPrefix(lines[0], tc.msg) {
			t.Errorf("agent-box %q: exit %d, stderr %q; want exit %d and %q", tc.args, r.code, r.stderr, tc.code, tc.msg)
		}
		if tc.code != 2 && len(lines) != 1 {
			t.Errorf("agent-box %q: %d stderr lines, want 1: %q", tc.args, len(lines), r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("agent-box %q: unexpected stdout %q", tc.args, r.stdout)
		}
	}
	if got := len(b.registry().Sessions); got != 1 {
		t.Errorf("rejected commands changed the registry: %d sessions", got)
	}
}

func TestVersionAndHelp(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	if got := b.ok("version"); got != "agent-box dev\n" {
		t.Errorf("version = %q", got)
	}
	help := b.ok("help")
	for _, want := range []string{"3 unknown session", "4 duplicate session", "5 invalid name", "6 unknown agent", "7 corrupt registry", "8 supervisor not running"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func TestUserTmuxConfCannotChangeTheServer(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}]}`)
	hostile := "set -g remain-on-exit off\nset -s exit-empty on\nset-hook -g session-created kill-server\n"
	for _, p := range []string{".tmux.conf", ".config/tmux/tmux.conf"} {
		p = filepath.Join(b.home, p)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(hostile), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b.startSupervisor()
	p := b.waitRunning("a")
	syscall.Kill(p.PID, syscall.SIGKILL)
	b.waitFor(5*time.Second, "a respawns despite the user's tmux.conf", func() bool {
		q, ok := b.running("a")
		return ok && q.PID != p.PID
	})
}

func TestSecondSupervisorAndOldTmuxAreRefused(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	b.startSupervisor()
	if r := b.run("", "supervise"); r.code != 1 || !strings.Contains(r.stderr, "agent-box: another supervisor is running") {
		t.Errorf("second supervisor: exit %d stderr %q, want 1 and 'another supervisor is running'", r.code, r.stderr)
	}
	old := filepath.Join(b.dir, "old-tmux")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho 'tmux 2.9a'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b.stopSupervisor()
	b.setEnv("AGENT_BOX_TMUX", old)
	r := b.run("", "supervise")
	if r.code != 10 || !strings.Contains(r.stderr, "needs tmux >= 3.2") {
		t.Errorf("tmux 2.9: exit %d stderr %q, want 10 and 'needs tmux >= 3.2'", r.code, r.stderr)
	}
}

func TestMissingTmuxIsRefusedWithExit10(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		what      string
		tmux, dir string // AGENT_BOX_TMUX, and PATH if dir is set
		msg       string
	}{
		{"AGENT_BOX_TMUX names no file", "/nonexistent/tmux", "", "agent-box: unusable tmux: /nonexistent/tmux -V: "},
		{"no tmux on PATH", "", t.TempDir(), "agent-box: unusable tmux: tmux not found in PATH and AGENT_BOX_TMUX unset"},
	} {
		b := newBox(t, "")
		b.setEnv("AGENT_BOX_TMUX", tc.tmux)
		if tc.dir != "" {
			b.setEnv("PATH", tc.dir)
		}
		r := b.run("", "supervise")
		if r.code != 10 || !strings.HasPrefix(r.stderr, tc.msg) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%s: exit %d stderr %q, want 10 and one line %q...", tc.what, r.code, r.stderr, tc.msg)
		}
		if _, err := os.Stat(filepath.Join(b.runtime, "state.json")); err == nil {
			t.Errorf("%s: state.json written by a refused supervisor", tc.what)
		}
	}
}

// When the server goes (kill-server, a crash), the supervisor starts no
// server of its own: it waits for the sessions unit's next one (systemd
// restarts it), adopts it and starts the sessions again.
func TestAfterTheServerDiesTheSessionsComeBackOnTheSessionsUnitsNextOne(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}, {"name": "b", "agent": "sleep"}]}`)
	b.startSupervisor()
	pa := b.waitRunning("a")
	b.waitRunning("b")
	if err := b.tm.KillServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-b.srvDone
	b.waitFor(10*time.Second, "the supervisor tried the socket and waits", func() bool {
		return strings.Contains(b.supLog.String(), "(retrying)")
	})
	if b.tm.Alive() {
		t.Fatal("a tmux server answers, and only the supervisor ran: it started one")
	}
	b.startServer()
	b.waitFor(10*time.Second, "a and b run again on the new server", func() bool {
		qa, ok1 := b.running("a")
		_, ok2 := b.running("b")
		return ok1 && ok2 && qa.PID != pa.PID
	})
}

// TestASealedAttachRunsNothingTheTmuxServerAsks: fault 1 of the attack
// (issue 17). Every process of the agent's uid controls its tmux server,
// which can make an attached client run a command: `lock-session` (the
// client runs the lock command) and `detach-client -E`. The web terminal's
// client (`session attach --sealed`) runs neither; an unsealed one, the
// control, runs both.
func TestASealedAttachRunsNothingTheTmuxServerAsks(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}]}`)
	b.startSupervisor()
	b.waitRunning("a")
	dir := t.TempDir()
	for _, sealed := range []bool{true, false} {
		name := map[bool]string{true: "sealed", false: "unsealed"}[sealed]
		t.Run(name, func(t *testing.T) {
			lockMark, execMark := filepath.Join(dir, name+"-lock"), filepath.Join(dir, name+"-exec")
			args := []string{"session", "attach"}
			if sealed {
				args = append(args, "--sealed")
			}
			// the terminal: an outer tmux on its own socket runs attach
			outerSock := filepath.Join(filepath.Dir(b.runtime), name+".sock")
			outer := exec.Command(tmuxBin, append([]string{"-S", outerSock, "-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "24", "--",
				testBinary(t)}, append(args, "a")...)...)
			outer.Env = append(append([]string{}, b.env...), "TERM=xterm")
			if out, err := outer.CombinedOutput(); err != nil {
				t.Fatalf("outer tmux: %v\n%s", err, out)
			}
			t.Cleanup(func() { exec.Command(tmuxBin, "-S", outerSock, "kill-server").Run() })
			// the clients of session a (the supervisor's watcher is on a session of its own)
			clients := func() string {
				out, _ := exec.Command(tmuxBin, "-S", b.tm.Socket, "list-clients", "-t", "=a", "-F", "#{client_session}").Output()
				return strings.TrimSpace(string(out))
			}
			b.waitFor(10*time.Second, "a client is attached to session a", func() bool { return clients() == "a" })
			// what the agent does with its own tmux server
			for _, c := range [][]string{
				{"set-option", "-g", "lock-command", "touch " + lockMark},
				{"lock-session", "-t", "=a"},
				{"detach-client", "-s", "=a", "-E", "touch " + execMark},
			} {
				if out, err := exec.Command(tmuxBin, append([]string{"-S", b.tm.Socket}, c...)...).CombinedOutput(); err != nil {
					t.Fatalf("tmux %v: %v\n%s", c, err, out)
				}
			}
			b.waitFor(10*time.Second, "the client is gone", func() bool { return clients() == "" })
			// the client handled the lock before the detach: both are done
			ran := func(p string) bool {
				if sealed {
					_, err := os.Stat(p)
					return err == nil
				}
				deadline := time.Now().Add(10 * time.Second)
				for time.Now().Before(deadline) {
					if _, err := os.Stat(p); err == nil {
						return true
					}
					time.Sleep(10 * time.Millisecond)
				}
				return false
			}
			if got := ran(lockMark); got != !sealed {
				t.Errorf("the lock command ran: %v", got)
			}
			if got := ran(execMark); got != !sealed {
				t.Errorf("detach-client -E ran its command: %v", got)
			}
		})
	}
}

// A configuration reaches future spawns without touching running agents:
// the supervisor (restarted by a switch) writes its environment for new
// sessions, exec-session lays it over the server's, and `session ls` says
// which sessions run an older one until they restart.
func TestANewSpawnSeesTheNewConfigurationWhileRunningAgentsKeepTheirs(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	// the server's environment is the sessions unit's, set at its start
	b.setEnv("CONFIG_VALUE", "server")
	b.setEnv("SERVER_ONLY", "kept")
	b.startServer()
	unset := func(k string) {
		for i, kv := range b.env {
			if strings.HasPrefix(kv, k+"=") {
				b.env = append(b.env[:i:i], b.env[i+1:]...)
				return
			}
		}
	}
	unset("SERVER_ONLY")
	b.setEnv("CONFIG_VALUE", "old")
	b.setEnv("GONE_LATER", "1")
	b.startSupervisor()
	out1 := filepath.Join(b.dir, "r1.json")
	b.ok("session", "add", "r1", "--agent", "report", "--", out1)
	env := func(rep agentReport) map[string]string {
		m := map[string]string{}
		for _, kv := range rep.Env {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		return m
	}
	e1 := env(waitReport(t, b, out1))
	if e1["CONFIG_VALUE"] != "old" || e1["GONE_LATER"] != "1" || e1["SERVER_ONLY"] != "kept" {
		t.Errorf("first spawn: CONFIG_VALUE=%q GONE_LATER=%q SERVER_ONLY=%q, want old, 1 (the supervisor's) and kept (the server's)",
			e1["CONFIG_VALUE"], e1["GONE_LATER"], e1["SERVER_ONLY"])
	}
	p1 := b.waitRunning("r1")
	// The pane runs before the supervisor records what it started it
	// with: a supervisor killed in between leaves nothing to compare.
	obs := filepath.Join(b.home, ".local/state/agent-box/sessions/r1.json")
	b.waitFor(10*time.Second, "r1's spawn recorded", func() bool {
		data, _ := os.ReadFile(obs)
		return bytes.Contains(data, []byte(`"spawn":`))
	})

	// a switch: the supervisor restarts with a new environment
	b.sup.Process.Kill()
	<-b.supDone
	b.sup = nil
	b.setEnv("CONFIG_VALUE", "new")
	unset("GONE_LATER")
	b.startSupervisor()
	out2 := filepath.Join(b.dir, "r2.json")
	b.ok("session", "add", "r2", "--agent", "report", "--", out2)
	e2 := env(waitReport(t, b, out2))
	if _, gone := e2["GONE_LATER"]; e2["CONFIG_VALUE"] != "new" || gone {
		t.Errorf("spawn after the restart: CONFIG_VALUE=%q, GONE_LATER present %v; want new and absent", e2["CONFIG_VALUE"], gone)
	}
	if q, ok := b.running("r1"); !ok || q.PID != p1.PID {
		t.Errorf("r1 after the supervisor's restart: %+v, want its pid %d", q, p1.PID)
	}
	ls := b.run("", "session", "ls")
	lines := map[string]string{}
	for _, l := range strings.Split(ls.stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = l
		}
	}
	if !strings.Contains(lines["r1"], "running (restart to apply)") || strings.Contains(lines["r2"], "restart to apply") {
		t.Errorf("session ls: r1 %q (want 'restart to apply'), r2 %q (want none)", lines["r1"], lines["r2"])
	}
	if !strings.Contains(ls.stderr, "1 session(s) run an older configuration") {
		t.Errorf("session ls stderr %q, want the count of sessions to restart", ls.stderr)
	}
	os.Remove(out1)
	b.ok("session", "restart", "r1")
	if e := env(waitReport(t, b, out1)); e["CONFIG_VALUE"] != "new" {
		t.Errorf("r1 after its restart: CONFIG_VALUE=%q, want new", e["CONFIG_VALUE"])
	}
	b.waitFor(5*time.Second, "session ls no longer asks for a restart", func() bool {
		return !strings.Contains(b.ok("session", "ls"), "restart to apply")
	})
}
