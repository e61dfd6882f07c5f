package main

// Process-level tests of the files the runtime reads from user-writable
// places: a FIFO, directory, symlink to a FIFO or oversized file in place of
// one never hangs a command, and values no execve could take are refused
// when written. Helpers from harness_test.go; the ones added here are below.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/agent-box/agent-box/internal/hostilefile"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/envfile"
	"github.com/agent-box/agent-box/internal/runtime/observe"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/state"
)

// runQuick runs agent-box args like box.run, but a command still running
// after 5 s fails the test (SIGTERM, then SIGKILL a second later): a hang
// must not stall the suite.
func (b *box) runQuick(stdin string, args ...string) result {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := b.command(ctx, args...)
	cmd.WaitDelay = time.Second
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		b.t.Fatalf("agent-box %s still running after 5 s", strings.Join(args, " "))
	}
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			b.t.Fatalf("agent-box %s: %v", strings.Join(args, " "), err)
		}
		code = ee.ExitCode()
	}
	return result{out.String(), errb.String(), code}
}

func describe(path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%v %d", fi.Mode(), fi.Size())
}

func TestABadRegistryOrEnvFileIsCorruptForEveryCommandAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file  string
		path  func(b *box) string
		limit int64
		doc   string // valid content, for the oversized file
		cmds  [][]string
	}{
		{"registry", func(b *box) string { return b.registryPath() }, registry.MaxFileSize, `{"version": 1}`, [][]string{
			{"session", "ls"}, {"session", "add", "n"}, {"session", "stop", "a"}, {"session", "rm", "a"},
		}},
		{"registry lock", func(b *box) string { return b.registryPath() + ".lock" }, -1, "", [][]string{
			{"session", "add", "n"}, {"session", "rm", "a"},
		}},
		{"env file", func(b *box) string { return filepath.Join(b.home, ".config/agent-box/env") }, envfile.MaxFileSize, "A=1\n", [][]string{
			{"env", "ls"}, {"env", "set", "K"}, {"env", "rm", "K"},
		}},
		{"env lock", func(b *box) string { return filepath.Join(b.home, ".config/agent-box/env.lock") }, -1, "", [][]string{
			{"env", "set", "K"}, {"env", "rm", "K"},
		}},
	} {
		for _, kind := range hostilefile.Kinds {
			if tc.limit < 0 && kind == "oversized file" {
				continue // a lock file's size does not matter: the holder truncates it
			}
			t.Run(tc.file+": "+kind, func(t *testing.T) {
				b := newBox(t, "")
				p := tc.path(b)
				hostilefile.Plant(t, p, kind, tc.limit, tc.doc)
				before := describe(p)
				for _, args := range tc.cmds {
					r := b.runQuick("v", args...)
					if r.code != 7 || !strings.HasPrefix(r.stderr, "agent-box: corrupt") {
						t.Errorf("%s: exit %d, stderr %q; want exit 7 and 'agent-box: corrupt ...'", strings.Join(args, " "), r.code, r.stderr)
					}
				}
				if after := describe(p); after != before {
					t.Errorf("the %s changed: %s -> %s", tc.file, before, after)
				}
			})
		}
	}
}

func TestABadStateFileOrObservationFileHangsNoCommand(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"state.json", "observations"} {
		for _, kind := range hostilefile.Kinds {
			t.Run(file+": "+kind, func(t *testing.T) {
				b := newBox(t, "")
				b.ok("session", "add", "a")
				p, limit, doc := filepath.Join(b.runtime, "state.json"), int64(state.MaxFileSize), `{"format": 1, "pid": 1}`
				if file == "observations" {
					p, limit, doc = filepath.Join(b.home, ".local/state/agent-box/sessions/a.json"), observe.MaxFileSize, "{}"
				}
				hostilefile.Plant(t, p, kind, limit, doc)
				for _, args := range [][]string{{"session", "ls"}, {"session", "add", "b"}, {"session", "restart", "a"}} {
					r := b.runQuick("", args...)
					if strings.Contains(r.stderr, "\x1b") {
						t.Errorf("%s: raw control bytes on stderr: %q", strings.Join(args, " "), r.stderr)
					}
				}
			})
		}
	}
}

func TestEnvSetOfAHugeValueIsRefusedNamingTheLimit(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	b.run("1\n", "env", "set", "KEEP")
	p := filepath.Join(b.home, ".config/agent-box/env")
	before, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	r := b.runQuick(strings.Repeat("s", 1<<20), "env", "set", "TOKEN")
	if r.code != 5 || !strings.Contains(r.stderr, "131071") || strings.Contains(r.stderr, "sss") {
		t.Errorf("env set of a 1 MiB value: exit %d, stderr %.300q; want exit 5 naming 131071, without the value", r.code, r.stderr)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(after, before) {
		t.Errorf("the env file changed")
	}
}

func TestSessionAddBeyondTheArgumentLimitIsRefusedNamingIt(t *testing.T) {
	t.Parallel()
	b := newBox(t, "")
	b.ok("session", "add", "keep")
	before, err := os.ReadFile(b.registryPath())
	if err != nil {
		t.Fatal(err)
	}
	arg := strings.Repeat("a", 100<<10) // three of them: within ARG_MAX for the CLI, over 256 KiB for a session
	r := b.runQuick("", "session", "add", "big", "--", arg, arg, arg)
	if r.code != 5 || !strings.Contains(r.stderr, "262144") {
		t.Errorf("session add with 300 KiB of arguments: exit %d, stderr %q; want exit 5 naming 262144", r.code, r.stderr)
	}
	if after, _ := os.ReadFile(b.registryPath()); !bytes.Equal(after, before) {
		t.Errorf("the registry changed")
	}
}

// TestEverythingWithinTheLimitsFitsOneExecve backs the totals in the
// contract's "Limits" with a real exec-session: the most an env file of
// envfile.MaxFileSize can hand to execve (the most variables: distinct
// shortest keys, empty values), an agent's command and arguments at
// agents.MaxAgentSize and a session's arguments at registry.MaxArgsSize (as
// many empty ones as fit: the most pointers), plus 768 KiB of unit
// environment, all reach the agent.
func TestEverythingWithinTheLimitsFitsOneExecve(t *testing.T) {
	t.Parallel()
	trueBin := lookTool("true")
	if trueBin == "" {
		t.Fatal("true is required on PATH for this test")
	}
	b := newBox(t, "")

	var env bytes.Buffer
	vars := 0
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
	const rest = letters + "0123456789"
	var keys func(prefix string, n int, emit func(string) bool) bool
	keys = func(prefix string, n int, emit func(string) bool) bool {
		if n == 0 {
			return emit(prefix)
		}
		alphabet := rest
		if prefix == "" {
			alphabet = letters
		}
		for _, c := range alphabet {
			if !keys(prefix+string(c), n-1, emit) {
				return false
			}
		}
		return true
	}
	for n := 1; ; n++ {
		if !keys("", n, func(k string) bool {
			if env.Len()+len(k)+2 > envfile.MaxFileSize {
				return false
			}
			env.WriteString(k + "=\n")
			vars++
			return true
		}) {
			break
		}
	}
	envPath := filepath.Join(b.home, ".config/agent-box/env")
	if err := os.MkdirAll(filepath.Dir(envPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(envPath, env.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	envCost := env.Len() + 8*vars // each line is its execve string with the NUL; plus a pointer

	agentArgs := make([]string, (agents.MaxAgentSize-(len(trueBin)+9))/9)
	table := agents.Table{"fat": {Command: trueBin, Args: agentArgs}}
	data, _ := json.Marshal(table)
	agentsFile := filepath.Join(b.dir, "fat-agents.json")
	if err := os.WriteFile(agentsFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	b.setEnv("AGENT_BOX_AGENTS", agentsFile)
	if _, err := agents.Load(agentsFile); err != nil {
		t.Fatalf("the agents table at the limit is refused: %v", err)
	}

	sessionArgs := make([]string, registry.MaxArgsSize/9)
	err := registry.Update(context.Background(), b.registryPath(), func(r *registry.Registry) error {
		return r.Add(registry.Session{Name: "fat", Agent: "fat", Args: sessionArgs, Cwd: b.home})
	})
	if err != nil {
		t.Fatal(err)
	}

	unit := strings.Repeat("u", 64<<10)
	for i := 0; i < 12; i++ {
		b.setEnv(fmt.Sprintf("UNIT_%d", i), unit)
	}
	r := b.runQuick("", "exec-session", "fat")
	t.Logf("env file: %d variables, %d bytes of execve; agent: %d; session args: %d; unit environment: 768 KiB",
		vars, envCost, (len(trueBin)+9)+9*len(agentArgs), registry.ArgsSize(sessionArgs))
	if r.code != 0 {
		t.Errorf("exec-session at every limit: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestAFIFORegistryHangsNeitherTheSupervisorNorTheCLI(t *testing.T) {
	t.Parallel()
	b := newBox(t, `{"sessions": [{"name": "a", "agent": "sleep"}]}`)
	b.startSupervisor()
	b.waitRunning("a")
	fifo := b.registryPath() + ".fifo"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if fd, err := syscall.Open(b.registryPath(), syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			syscall.Close(fd)
		}
	})
	if err := os.Rename(fifo, b.registryPath()); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"session", "ls"}, {"session", "add", "n"}, {"session", "stop", "a"}} {
		if r := b.runQuick("", args...); r.code != 7 {
			t.Errorf("%s: exit %d, stderr %q; want 7", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if _, ok := b.running("a"); !ok {
		t.Errorf("session a is gone while the registry is a FIFO")
	}
	// the cleanup's stopSupervisor fails the test if SIGTERM is ignored
}
