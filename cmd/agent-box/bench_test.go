package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// BenchmarkRuntime measures the runtime's latency and idle-cost figures
// (docs/runtime-contract.md, "Measuring") and prints them; nothing is
// asserted. Run it alone (it takes about 2.5 minutes):
//
//	go test -run '^$' -bench Runtime -benchtime 1x -timeout 10m ./cmd/agent-box
func BenchmarkRuntime(b *testing.B) {
	const sessions = 10
	seed := sleepSeed(sessions)
	bx := newBox(b, seed)
	bx.setEnv("AGENT_BOX_TEST_SPAWN_PROGRAM", shipped(b, contract.Programs.Spawn.Name))
	fmt.Printf("machine: %d CPUs, load %s\n", numCPU(), loadavg())

	// phase 1: respawn after kill -9, never inside the 10 s backoff window,
	// each kill followed by the floor: a pane of the same server that no
	// supervisor watches, killed the same way and respawned with a bare
	// `tmux respawn-pane` issued right after the kill (what tmux alone
	// costs; the supervisor's respawn adds the exit notice, its own
	// respawn-pane and exec-session before the agent runs).
	bx.startSupervisor()
	respawn, floor := respawnVsFloor(b, bx, sessions, 5)
	fmt.Printf("respawn after kill -9 (%d kills over %d sessions): %s\n", len(respawn), sessions, stats(respawn))
	fmt.Printf("floor, a bare tmux respawn-pane right after a kill (%d, interleaved): %s\n", len(floor), stats(floor))
	fmt.Printf("respawn / floor at p50: %.2f (target at most 1.8)\n", float64(median(respawn))/float64(median(floor)))

	// phase 2: CLI add -> live session
	var add, cliOnly, afterCLI []time.Duration
	for i := 0; i < 30; i++ {
		name := fmt.Sprintf("a%d", i)
		t0 := time.Now()
		bx.ok("session", "add", name, "--agent", "sleep")
		t1 := time.Now()
		waitNewAgent(bx, name, 0)
		add = append(add, time.Since(t0))
		cliOnly = append(cliOnly, t1.Sub(t0))
		afterCLI = append(afterCLI, time.Since(t1))
	}
	fmt.Printf("CLI add -> live session (30 adds, incl. CLI process start): %s\n", stats(add))
	fmt.Printf("  of which the CLI process: %s; CLI exit -> live: %s\n", stats(cliOnly), stats(afterCLI))
	bx.stopSupervisor()

	// phase 3: idle minute, every tmux invocation of the supervisor counted
	count := filepath.Join(bx.dir, "tmux-invocations")
	wrapper := filepath.Join(bx.dir, "tmux-counting")
	script := "#!/bin/sh\necho \"$*\" >> " + count + "\nexec " + tmuxBin + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	bx.setEnv("AGENT_BOX_TMUX", wrapper)
	bx.startSupervisor()
	for i := 0; i < sessions; i++ {
		bx.waitRunning(fmt.Sprintf("s%d", i))
	}
	time.Sleep(2 * time.Second) // let start-up settle before the idle window
	sup := bx.sup.Process.Pid
	server := tmuxServerPID(b, bx)
	n0 := lines(count)
	c0, s0 := cpuTicks(b, sup), cpuTicks(b, server)
	kids0 := childCount(server)
	forks0 := systemForks()
	time.Sleep(60 * time.Second)
	n1 := lines(count)
	c1, s1 := cpuTicks(b, sup), cpuTicks(b, server)
	fmt.Printf("idle 60 s with %d sessions: supervisor spawned %d processes (tmux invocations), tmux server children %d -> %d, system-wide forks %d\n",
		sessions+30, n1-n0, kids0, childCount(server), systemForks()-forks0)
	fmt.Printf("idle CPU per minute: supervisor %d ms, tmux server %d ms\n", (c1-c0)*10, (s1-s0)*10)
	fmt.Printf("supervisor RSS: %s\n", rss(sup))

	// phase 4: 200 concurrent CLI adds against the running supervisor
	const burst = 200
	cliDone, allLive := concurrentAdds(b, bx, burst)
	fmt.Printf("%d concurrent adds: %d registry entries, all CLIs done in %s, all %d sessions run their agent in %s (target: under 3 s)\n",
		burst, len(bx.registry().Sessions)-sessions-30, cliDone.Round(time.Millisecond), burst, allLive.Round(time.Millisecond))
	fmt.Printf("supervisor RSS with %d sessions: %s\n", sessions+30+burst, rss(sup))
	fmt.Printf("load after: %s\n", loadavg())
}

// respawnVsFloor kills each of the running sessions s0… rounds times,
// never inside the supervisor's 10 s backoff window, and after each kill
// the floor: a pane of the same server that no supervisor watches, killed
// the same way and respawned with a bare `tmux respawn-pane` issued right
// after the kill (what tmux alone costs; the supervisor's respawn adds the
// exit notice, its own respawn-pane and exec-session before the agent
// runs). It returns both latencies, interleaved samples.
func respawnVsFloor(b *testing.B, bx *box, sessions, rounds int) (respawn, floor []time.Duration) {
	pids := make([]int, sessions)
	for i := range pids {
		pids[i] = bx.waitRunning(fmt.Sprintf("s%d", i)).PID
	}
	floorPID := startFloorPane(b, bx)
	gap := max(10500*time.Millisecond, time.Duration(sessions)*time.Second)
	base := time.Now().Add(gap)
	for round := 0; round < rounds; round++ {
		for i := 0; i < sessions; i++ {
			time.Sleep(time.Until(base.Add(time.Duration(round)*gap + time.Duration(i)*gap/time.Duration(sessions))))
			name := fmt.Sprintf("s%d", i)
			t0 := time.Now()
			syscall.Kill(pids[i], syscall.SIGKILL)
			pid := waitNewAgent(bx, name, pids[i])
			respawn = append(respawn, time.Since(t0))
			pids[i] = pid

			time.Sleep(100 * time.Millisecond) // the supervisor is idle again
			t0 = time.Now()
			syscall.Kill(floorPID, syscall.SIGKILL)
			if _, err := bx.tm.Run(context.Background(), "respawn-pane", "-k", "-t", "="+floorSession+":", "--", sleepBin, "100000"); err != nil {
				b.Fatal(err)
			}
			floorPID = waitNewAgent(bx, floorSession, floorPID)
			floor = append(floor, time.Since(t0))
		}
	}
	if _, err := bx.tm.Run(context.Background(), "kill-session", "-t", "="+floorSession); err != nil {
		b.Fatal(err)
	}
	return respawn, floor
}

// BenchmarkRespawn is phase 1 of BenchmarkRuntime with what ships: the
// static build of agent-box-exec runs in the panes (the supervisor is the
// test binary, which stands in for the units). Each of -count's runs
// prints its ratio to the floor at p50 (target at most 1.8):
//
//	go test -run '^$' -bench Respawn -benchtime 1x -count 3 ./cmd/agent-box
func BenchmarkRespawn(b *testing.B) {
	const sessions = 10
	for range b.N {
		b.StopTimer()
		bx := newBox(b, sleepSeed(sessions))
		bx.setEnv("AGENT_BOX_TEST_SPAWN_PROGRAM", shipped(b, contract.Programs.Spawn.Name))
		bx.startSupervisor()
		b.StartTimer()
		respawn, floor := respawnVsFloor(b, bx, sessions, 5)
		b.StopTimer()
		ratio := float64(median(respawn)) / float64(median(floor))
		fmt.Printf("respawn after kill -9 %s; floor %s; respawn / floor at p50: %.2f (target at most 1.8)\n", stats(respawn), stats(floor), ratio)
		b.ReportMetric(ratio, "respawn/floor")
		bx.stopSupervisor()
	}
}

// BenchmarkConcurrentAdds is phase 4 of BenchmarkRuntime alone, to profile
// it: 200 concurrent `session add` against a supervisor that runs 40
// sessions, until every added session runs its agent (target: under 3 s).
// With AGENT_BOX_TEST_CPUPROFILE=FILE the supervisor writes a CPU profile.
func BenchmarkConcurrentAdds(b *testing.B) {
	const running, burst = 40, 200
	seed := sleepSeed(running)
	for range b.N {
		b.StopTimer()
		bx := newBox(b, seed)
		if p := os.Getenv("AGENT_BOX_TEST_CPUPROFILE"); p != "" {
			bx.setEnv("AGENT_BOX_TEST_CPUPROFILE", p)
		}
		bx.startSupervisor()
		for i := 0; i < running; i++ {
			bx.waitRunning(fmt.Sprintf("s%d", i))
		}
		b.StartTimer()
		cliDone, allLive := concurrentAdds(b, bx, burst)
		b.ReportMetric(float64(cliDone.Milliseconds()), "clis-done-ms")
		b.ReportMetric(float64(allLive.Milliseconds()), "all-live-ms")
		b.StopTimer()
		bx.stopSupervisor()
	}
}

// BenchmarkAddAllAtOnce: one `session add` of 200 names (one registry
// write) against a supervisor that runs 40 sessions, until every added
// session runs its agent (target: under 2 s), beside 200 concurrent
// single adds as phase 4 of BenchmarkRuntime makes them, interleaved.
func BenchmarkAddAllAtOnce(b *testing.B) {
	const running, burst = 40, 200
	seed := sleepSeed(running)
	var one, many []time.Duration
	for range b.N {
		for _, all := range []bool{true, false} {
			b.StopTimer()
			bx := newBox(b, seed)
			bx.setEnv("AGENT_BOX_TEST_SPAWN_PROGRAM", shipped(b, contract.Programs.Spawn.Name))
			bx.startSupervisor()
			for i := 0; i < running; i++ {
				bx.waitRunning(fmt.Sprintf("s%d", i))
			}
			b.StartTimer()
			if all {
				_, live := oneAdd(b, bx, burst)
				one = append(one, live)
			} else {
				_, live := concurrentAdds(b, bx, burst)
				many = append(many, live)
			}
			b.StopTimer()
			bx.stopSupervisor()
		}
	}
	fmt.Printf("%d sessions live from one session add: %s; from %d concurrent adds: %s (target: one call under 2 s)\n", burst, stats(one), burst, stats(many))
	b.ReportMetric(float64(median(one).Milliseconds()), "one-call-ms")
	b.ReportMetric(float64(median(many).Milliseconds()), "concurrent-ms")
}

// oneAdd adds c000… (n names) in one `session add` and returns when the
// CLI exited and when every added session ran its agent.
func oneAdd(b *testing.B, bx *box, n int) (cliDone, allLive time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"session", "add"}
	for i := 0; i < n; i++ {
		args = append(args, fmt.Sprintf("c%03d", i))
	}
	args = append(args, "--agent", "sleep")
	t0 := time.Now()
	if out, err := bx.shippedCommand(ctx, args...).CombinedOutput(); err != nil {
		b.Fatalf("session add of %d names: %v\n%s", n, err, out)
	}
	cliDone = time.Since(t0)
	waitAllLive(b, bx, n)
	return cliDone, time.Since(t0)
}

// BenchmarkSupervisorRestart kills the supervisor (-9) and starts a new one
// 100 times beside 45 live sessions. Where the tmux server outlives the
// supervisor (here: no unit kills it), each new supervisor re-adopts it:
// it reports the time from the kill to the new supervisor's state.json
// (the server adopted, the control socket open), and how many agents had
// another pid afterwards (target: under 500 ms p50, none).
func BenchmarkSupervisorRestart(b *testing.B) {
	const sessions, restarts = 45, 100
	seed := sleepSeed(sessions)
	for range b.N {
		b.StopTimer()
		bx := newBox(b, seed)
		bx.startSupervisor()
		before := map[string]int{}
		for i := 0; i < sessions; i++ {
			name := fmt.Sprintf("s%d", i)
			before[name] = bx.waitRunning(name).PID
		}
		b.StartTimer()
		var took []time.Duration
		for range restarts {
			t0 := time.Now()
			bx.sup.Process.Kill()
			<-bx.supDone
			bx.sup = nil
			bx.startSupervisor() // returns once state.json names the new one
			took = append(took, time.Since(t0))
		}
		b.StopTimer()
		if !strings.Contains(bx.supLog.String(), "adopted the tmux server (pid ") {
			b.Fatalf("the last supervisor did not adopt the server:\n%s", bx.supLog)
		}
		changed := 0
		for name, p := range bx.panes() {
			if pid, ok := before[name]; ok && (p.Dead || p.PID != pid) {
				changed++
			}
		}
		fmt.Printf("%d supervisor restarts (kill -9, start) beside %d sessions: kill -> adopted and listening %s; agents with another pid after them: %d\n",
			restarts, sessions, stats(took), changed)
		b.ReportMetric(float64(median(took).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(changed), "agents-killed")
		bx.stopSupervisor()
	}
}

// concurrentAdds starts n `session add c000…` at once and returns when the
// last CLI exited and when every added session ran its agent.
func concurrentAdds(b *testing.B, bx *box, n int) (cliDone, allLive time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t0 := time.Now()
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cmds[i] = bx.shippedCommand(ctx, "session", "add", fmt.Sprintf("c%03d", i), "--agent", "sleep")
		if err := cmds[i].Start(); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			b.Fatalf("session add: %v", err)
		}
	}
	cliDone = time.Since(t0)
	waitAllLive(b, bx, n)
	return cliDone, time.Since(t0)
}

// waitAllLive waits until the n sessions c… run their agent.
func waitAllLive(b *testing.B, bx *box, n int) {
	bx.waitFor(2*time.Minute, fmt.Sprintf("all %d added sessions run their agent", n), func() bool {
		live := 0
		for name, p := range bx.panes() {
			if strings.HasPrefix(name, "c") && !p.Dead && p.PID != 0 {
				if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.PID)); err == nil && strings.HasSuffix(exe, "/sleep") {
					live++
				}
			}
		}
		return live == n
	})
}

// sleepSeed is a seed of n sessions s0… running the sleep agent.
func sleepSeed(n int) string {
	var seed strings.Builder
	seed.WriteString(`{"sessions": [`)
	for i := 0; i < n; i++ {
		if i > 0 {
			seed.WriteString(", ")
		}
		fmt.Fprintf(&seed, `{"name": "s%d", "agent": "sleep"}`, i)
	}
	seed.WriteString("]}")
	return seed.String()
}

// waitNewAgent waits until session name runs an agent process other than old.
func waitNewAgent(bx *box, name string, old int) int {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out, err := bx.tm.Run(context.Background(), "list-panes", "-t", "="+name, "-F", "#{pane_pid}")
		if pid, _ := strconv.Atoi(strings.TrimSpace(out)); err == nil && pid != 0 && pid != old {
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && strings.HasSuffix(exe, "/sleep") {
				return pid
			}
		}
		time.Sleep(time.Millisecond)
	}
	bx.t.Fatalf("session %s did not come back", name)
	return 0
}

// floorSession is the benchmark's own pane, outside the registry: the
// supervisor leaves it alone.
const floorSession = "floor"

// startFloorPane starts floorSession running sleep, kept when its process
// dies (remain-on-exit), and returns its pid.
func startFloorPane(b *testing.B, bx *box) int {
	b.Helper()
	if _, err := bx.tm.Run(context.Background(), "new-session", "-d", "-s", floorSession, "--", sleepBin, "100000",
		";", "set-option", "-w", "-t", "="+floorSession+":", "remain-on-exit", "on"); err != nil {
		b.Fatal(err)
	}
	return waitNewAgent(bx, floorSession, 0)
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration{}, d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func stats(d []time.Duration) string {
	s := append([]time.Duration{}, d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(p float64) time.Duration { return s[int(p*float64(len(s)-1)+0.5)] }
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	return fmt.Sprintf("p50 %s, p90 %s, p99 %s, max %s", r(q(0.5)), r(q(0.9)), r(q(0.99)), r(s[len(s)-1]))
}

func loadavg() string {
	data, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(data))
}

func numCPU() int {
	data, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(data), "processor\t:")
}

func lines(path string) int {
	data, _ := os.ReadFile(path)
	return strings.Count(string(data), "\n")
}

func tmuxServerPID(t testing.TB, bx *box) int {
	out, err := bx.tm.Run(context.Background(), "display-message", "-p", "#{pid}")
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(out))
	return pid
}

func childCount(pid int) int {
	n := 0
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		data, _ := os.ReadFile(t)
		n += len(strings.Fields(string(data)))
	}
	return n
}

func systemForks() int {
	data, _ := os.ReadFile("/proc/stat")
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "processes "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

func rss(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
		}
	}
	return "?"
}

// BenchmarkExecSession measures agent-box's own time from a spawn to the
// agent's execve (docs/runtime-contract.md, "Measuring"; target: p50 under
// 50 ms), with the shipped programs: `agent-box-exec exec-session` of an
// agent with the "claude" setup and a
// conversation to resume (~/.claude.json of 40 projects merged under its
// lock, the conversation file read and written) against the same program
// run directly, and against a plain agent. The agent is `false`, so each
// run ends at once. Nothing is asserted:
//
//	go test -run '^$' -bench ExecSession -benchtime 1x ./cmd/agent-box
func BenchmarkExecSession(b *testing.B) {
	bx := newBox(b, "")
	table := map[string]any{
		"plain": map[string]any{"command": falseBin},
		"claude": map[string]any{"command": falseBin, "resumeArgs": []string{"--resume", "{id}"},
			"newArgs": []string{"--session-id", "{id}"}, "promptArgs": []string{"--", "{prompt}"}, "setup": "claude"},
	}
	data, _ := json.Marshal(table)
	agentsFile := filepath.Join(bx.dir, "agents-bench.json")
	if err := os.WriteFile(agentsFile, data, 0o644); err != nil {
		b.Fatal(err)
	}
	bx.setEnv("AGENT_BOX_AGENTS", agentsFile)
	bx.ok("session", "add", "c", "--agent", "claude", "--prompt", "start")
	bx.ok("session", "add", "p", "--agent", "plain")
	// A ~/.claude.json as Claude leaves it after some use, and a
	// conversation to resume.
	projects := map[string]any{}
	for i := range 40 {
		projects[fmt.Sprintf("/home/u/p%d", i)] = map[string]any{"hasTrustDialogAccepted": true, "history": []string{strings.Repeat("x", 80)}}
	}
	cj, _ := json.MarshalIndent(map[string]any{"numStartups": 9, "projects": projects}, "", "  ")
	os.WriteFile(filepath.Join(bx.home, ".claude.json"), cj, 0o600)
	transcript := filepath.Join(bx.home, "t.jsonl")
	os.WriteFile(transcript, []byte("{}\n"), 0o600)
	conv := filepath.Join(bx.home, ".local/state/agent-box/conversations/c.json")
	rec, _ := json.Marshal(map[string]any{"version": 1, "id": "c1", "transcript": transcript})
	os.WriteFile(conv, rec, 0o600)

	timed := func(args ...string) time.Duration {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env, cmd.Dir = bx.env, bx.home
		t0 := time.Now()
		cmd.Run() // false exits 1: expected
		return time.Since(t0)
	}
	exe, self := shipped(b, contract.Programs.Spawn.Name), shipped(b, "agent-box")
	var claude, plain, floor, version []time.Duration
	for range 60 {
		claude = append(claude, timed(exe, "exec-session", "c"))
		plain = append(plain, timed(exe, "exec-session", "p"))
		version = append(version, timed(self, "version"))
		floor = append(floor, timed(falseBin))
	}
	got, _ := os.ReadFile(conv)
	if !strings.Contains(string(got), `"resume": true`) {
		b.Fatalf("the claude session did not resume: %s", got)
	}
	fmt.Printf("exec-session, claude setup, resuming (60 runs): %s\n", stats(claude))
	fmt.Printf("exec-session, plain agent: %s\n", stats(plain))
	fmt.Printf("agent-box version (the program's own start): %s\n", stats(version))
	fmt.Printf("the agent alone (false): %s\n", stats(floor))
	fmt.Printf("agent-box's time to the agent's execve at p50: %s (claude minus the agent alone; target under 50 ms)\n",
		(median(claude) - median(floor)).Round(10*time.Microsecond))
}
