package main

// Process-level test harness. The test binary doubles as the agent-box
// program (TestMain runs run() when AGENT_BOX_TEST_PROGRAM=1) and as a fake
// agent ("test-agent ..." as first argument), so the supervisor, tmux, the
// CLI and exec-session all run as real processes against a real tmux on a
// temp socket, with a temp HOME and runtime dir.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/cli"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/observe"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/peer"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/sessionsrv"
	"github.com/agent-box/agent-box/internal/runtime/state"
	"github.com/agent-box/agent-box/internal/runtime/tmux"
	"github.com/agent-box/agent-box/internal/scriptedmodel"
)

// Programs the tests drive, from PATH (`make deps` installs tmux). A missing
// one fails the tests that need it; nothing is skipped.
var (
	tmuxBin  = lookTool("tmux")
	sleepBin = lookTool("sleep")
	shBin    = lookTool("sh")
	falseBin = lookTool("false")
)

func lookTool(name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	return p
}

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "test-agent" {
		os.Exit(testAgent(os.Args[2:]))
	}
	if os.Getenv("AGENT_BOX_TEST_PROGRAM") == "1" {
		// The test binary only: where tests put a login file (the shipped
		// program always reads /etc/agent-box/users).
		if d := os.Getenv("AGENT_BOX_TEST_LOGIN_DIR"); d != "" {
			paths.LoginDir = d
		}
		// The auth service's status socket: a test's own, or none (the
		// host's /run/agent-box-auth is not the test's).
		cli.AuthStatus = os.Getenv("AGENT_BOX_TEST_AUTH_STATUS")
		// What tmux runs in each pane: the test binary itself (agent-box's
		// exec-session), or the benchmarks' shipped build.
		cli.SpawnProgram = os.Getenv("AGENT_BOX_TEST_SPAWN_PROGRAM")
		if cli.SpawnProgram == "" {
			cli.SpawnProgram, _ = os.Executable()
		}
		// The tests run no units: the test process's cgroup (every
		// process of a test shares it) stands for the sessions unit, and
		// "elsewhere" for a server outside it.
		sessionsrv.InUnit = func(string) func(int) error { return peer.InSameCgroup }
		if os.Getenv("AGENT_BOX_TEST_SERVER_UNIT") == "elsewhere" {
			sessionsrv.InUnit = func(string) func(int) error {
				return func(int) error {
					return errors.New("in cgroup \"/user.slice/user-1000.slice/session-3.scope\" (the test's stand-in for a login)")
				}
			}
		}
		// The benchmarks' profile of the supervisor (test binary only).
		if p := os.Getenv("AGENT_BOX_TEST_CPUPROFILE"); p != "" && len(os.Args) > 1 && os.Args[1] == "supervise" {
			if f, err := os.Create(p); err == nil && pprof.StartCPUProfile(f) == nil {
				code := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
				pprof.StopCPUProfile()
				f.Close()
				os.Exit(code)
			}
		}
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	code := m.Run()
	if shippedOnce.dir != "" {
		os.RemoveAll(shippedOnce.dir)
	}
	os.Exit(code)
}

// agentReport is what `test-agent report FILE` writes before it blocks.
type agentReport struct {
	Env         []string `json:"env"`
	Cwd         string   `json:"cwd"`
	Args        []string `json:"args"`
	OOMScoreAdj string   `json:"oomScoreAdj"`
}

func testAgent(args []string) int {
	if len(args) >= 1 && args[0] == "report" {
		cwd, _ := os.Getwd()
		oom, _ := os.ReadFile("/proc/self/oom_score_adj")
		r := agentReport{Env: os.Environ(), Cwd: cwd, Args: args, OOMScoreAdj: strings.TrimSpace(string(oom))}
		data, _ := json.Marshal(r)
		tmp := args[1] + ".tmp"
		os.WriteFile(tmp, data, 0o600)
		os.Rename(tmp, args[1])
		select {} // stay alive like an agent
	}
	if len(args) == 3 && args[0] == "scripted-model" {
		// scripted-model ADDRESS LOG: the scripted model (package
		// scriptedmodel), for a network namespace of an agent's own: one
		// per spawn, each remembering the limits the log shows spent.
		f, err := os.OpenFile(args[2], os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		srv := &scriptedmodel.Server{Log: f}
		if err := srv.Remember(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(os.Stderr, http.ListenAndServe(args[1], srv))
		return 1
	}
	return 2
}

func testBinary(t testing.TB) string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// box is one user's agent-box world in temp directories.
type box struct {
	t       testing.TB
	dir     string
	home    string
	runtime string
	env     []string
	sup     *exec.Cmd
	supLog  *syncBuffer
	supDone chan struct{}
	srv     *exec.Cmd     // `agent-box tmux-server`: the sessions unit's tmux
	srvDone chan struct{} // closed when srv has exited
	tm      *tmux.Server
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newBox prepares HOME, runtime dir, agents table and (optional) seed.
func newBox(t testing.TB, seed string) *box {
	t.Helper()
	for name, p := range map[string]string{"tmux": tmuxBin, "sleep": sleepBin, "sh": shBin, "false": falseBin} {
		if p == "" {
			t.Fatalf("%s is required on PATH for this test\nhint: run 'make deps'", name)
		}
	}
	dir := t.TempDir()
	// unix socket paths are limited to 108 bytes: keep the runtime dir short
	rt, err := os.MkdirTemp("", "ab")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	b := &box{t: t, dir: dir, home: filepath.Join(dir, "home"), runtime: filepath.Join(rt, "u")}
	if err := os.MkdirAll(b.home, 0o700); err != nil {
		t.Fatal(err)
	}
	self := testBinary(t)
	table := agents.Table{
		"sleep":  {Command: sleepBin, Args: []string{"100000"}},
		"sh":     {Command: shBin, Args: []string{"-c"}},
		"false":  {Command: falseBin},
		"report": {Command: self, Args: []string{"test-agent", "report"}},
		// sh that could resume a conversation with a prompt (a usage
		// limit's try is scheduled for it)
		"shr": {Command: shBin, Args: []string{"-c"}, ResumeArgs: []string{contract.Conversations.IDPlaceholder}, PromptArgs: []string{contract.Conversations.PromptPlaceholder}},
	}
	data, _ := json.Marshal(table)
	agentsFile := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(agentsFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	b.env = []string{
		"AGENT_BOX_TEST_PROGRAM=1",
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + b.home,
		"USER=tester",
		"AGENT_BOX_RUNTIME_DIR=" + b.runtime,
		"AGENT_BOX_AGENTS=" + agentsFile,
		"AGENT_BOX_TMUX=" + tmuxBin,
		"AGENT_BOX_DEFAULT_AGENT=sleep",
	}
	if seed != "" {
		b.writeSeed(seed)
	}
	b.tm = &tmux.Server{Bin: tmuxBin, Socket: filepath.Join(b.runtime, "tmux.sock"), Env: b.env}
	t.Cleanup(func() {
		b.stopSupervisor()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		b.tm.KillServer(ctx)
	})
	return b
}

func (b *box) writeSeed(seed string) {
	p := filepath.Join(b.dir, "seed.json")
	if err := os.WriteFile(p, []byte(seed), 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.setEnv("AGENT_BOX_SEED", p)
}

func (b *box) setEnv(k, v string) {
	for i, kv := range b.env {
		if strings.HasPrefix(kv, k+"=") {
			b.env[i] = k + "=" + v
			return
		}
	}
	b.env = append(b.env, k+"="+v)
}

func (b *box) registryPath() string { return filepath.Join(b.home, ".config/agent-box/sessions.json") }

// command returns the test binary as agent-box with args.
func (b *box) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, testBinary(b.t), args...)
	cmd.Env = b.env
	cmd.Dir = b.home
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// shippedCommand is command with the shipped agent-box (see shipped):
// for what a benchmark times, and only where the test binary's stand-ins
// for the units are not needed (the CLI, not the supervisor).
func (b *box) shippedCommand(ctx context.Context, args ...string) *exec.Cmd {
	cmd := b.command(ctx, args...)
	cmd.Path, cmd.Args[0] = shipped(b.t, "agent-box"), shipped(b.t, "agent-box")
	return cmd
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs agent-box args with stdin and returns its output and exit code.
func (b *box) run(stdin string, args ...string) result {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := b.command(ctx, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			b.t.Fatalf("agent-box %q: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{out.String(), errb.String(), code}
}

// ok runs agent-box args and fails the test unless it exits 0.
func (b *box) ok(args ...string) string {
	b.t.Helper()
	r := b.run("", args...)
	if r.code != 0 {
		b.t.Fatalf("agent-box %s: exit %d, stderr:\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// startServer runs `agent-box tmux-server` (the sessions unit's
// ExecStart) and waits until the server answers.
func (b *box) startServer() {
	b.t.Helper()
	b.srv = b.command(context.Background(), "tmux-server")
	log := &syncBuffer{}
	b.srv.Stdout, b.srv.Stderr = log, log
	if err := b.srv.Start(); err != nil {
		b.t.Fatal(err)
	}
	b.srvDone = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(b.srv, b.srvDone)
	b.waitFor(10*time.Second, "tmux-server answers", func() bool {
		select {
		case <-b.srvDone:
			b.t.Fatalf("tmux-server exited early: %v\n%s", b.srv.ProcessState, log)
		default:
		}
		return b.tm.Alive()
	})
}

// startSupervisor runs `agent-box supervise` (after the server, if none
// answers: systemd starts the sessions unit first) and waits until
// state.json names it.
func (b *box) startSupervisor() {
	b.t.Helper()
	if !b.tm.Alive() {
		b.startServer()
	}
	b.supLog = &syncBuffer{}
	b.sup = b.command(context.Background(), "supervise")
	b.sup.Stdout, b.sup.Stderr = b.supLog, b.supLog
	if err := b.sup.Start(); err != nil {
		b.t.Fatal(err)
	}
	b.supDone = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(b.sup, b.supDone)
	pid := b.sup.Process.Pid
	b.waitFor(10*time.Second, "supervisor writes state.json", func() bool {
		st, err := state.Read(filepath.Join(b.runtime, "state.json"))
		select {
		case <-b.supDone:
			b.t.Fatalf("supervisor exited early: %v\n%s", b.sup.ProcessState, b.supLog)
		default:
		}
		return err == nil && st.PID == pid
	})
}

// stopSupervisor sends SIGTERM and waits for the exit.
func (b *box) stopSupervisor() {
	if b.sup == nil {
		return
	}
	b.sup.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.supDone:
	case <-time.After(15 * time.Second):
		b.sup.Process.Kill()
		select {
		case <-b.supDone:
		case <-time.After(10 * time.Second):
		}
		b.t.Errorf("supervisor ignored SIGTERM for 15 s")
	}
	b.sup = nil
}

// waitFor polls cond until it holds or the deadline passes.
func (b *box) waitFor(d time.Duration, what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			log := ""
			if b.supLog != nil {
				log = b.supLog.String()
			}
			b.t.Fatalf("timed out after %s waiting until %s\nsupervisor log:\n%s", d, what, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// panes returns the live tmux panes by session name (nil if no server).
func (b *box) panes() map[string]tmux.Pane {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ps, err := b.tm.ListPanes(ctx)
	if err != nil {
		return nil
	}
	m := map[string]tmux.Pane{}
	for _, p := range ps {
		m[p.Session] = p
	}
	return m
}

// running reports whether name has a live pane whose process has exec'd
// the agent: neither tmux's child before its exec (its exe is still tmux)
// nor agent-box exec-session (the test binary, unless it runs as the test
// agent), so its pid is the agent's.
func (b *box) running(name string) (tmux.Pane, bool) {
	p, ok := b.panes()[name]
	if !ok || p.Dead || p.PID == 0 {
		return p, false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.PID))
	if err != nil || exe == testBinary(b.t) && !b.isTestAgent(p.PID) || exe == realTmux() {
		return p, false
	}
	return p, true
}

// realTmux is tmux's executable as /proc/<pid>/exe names it.
func realTmux() string {
	p, err := filepath.EvalSymlinks(tmuxBin)
	if err != nil {
		return tmuxBin
	}
	return p
}

func (b *box) isTestAgent(pid int) bool {
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return bytes.Contains(cmdline, []byte("test-agent"))
}

func (b *box) waitRunning(name string) tmux.Pane {
	b.t.Helper()
	var p tmux.Pane
	b.waitFor(10*time.Second, fmt.Sprintf("session %q runs", name), func() bool {
		var ok bool
		p, ok = b.running(name)
		return ok
	})
	return p
}

func (b *box) waitGone(name string) {
	b.t.Helper()
	b.waitFor(10*time.Second, fmt.Sprintf("session %q is gone from tmux", name), func() bool {
		_, ok := b.panes()[name]
		return !ok
	})
}

func (b *box) registry() *registry.Registry {
	b.t.Helper()
	r, err := registry.Load(b.registryPath())
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

func (b *box) observation(name string) observe.Session {
	o, _ := observe.Load(filepath.Join(b.home, ".local/state/agent-box/sessions"), name)
	return o
}

// cpuTicks returns utime+stime of pid in clock ticks (1/100 s).
func cpuTicks(t testing.TB, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return ut + st
}

var shippedOnce struct {
	sync.Once
	dir string
	err error
}

// shipped is the runtime's program name (agent-box, agent-box-exec) as
// the module builds it (static, no cgo, trimmed paths, stripped), built
// once per test process: what the benchmarks time, where the test binary
// (cgo, dynamic, with the tests in it) would start slower than what ships.
func shipped(t testing.TB, name string) string {
	shippedOnce.Do(func() {
		if shippedOnce.dir, shippedOnce.err = os.MkdirTemp("", "agent-box-shipped-"); shippedOnce.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", shippedOnce.dir+"/", "./cmd/agent-box", "./cmd/"+contract.Programs.Spawn.Name)
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			shippedOnce.err = fmt.Errorf("building the shipped programs: %v\n%s", err, out)
		}
	})
	if shippedOnce.err != nil {
		t.Fatal(shippedOnce.err)
	}
	return filepath.Join(shippedOnce.dir, name)
}
