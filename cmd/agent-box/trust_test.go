package main

// Who the CLI trusts: it never executes a path or dials a socket named in a
// file the home's owner can write (state.json), refuses a home that is not
// its own user's, and finds the agents table of a plain login in the
// module's root-owned login file.

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/state"
)

// plantEvil writes an executable that leaves a marker when run, and
// returns both paths.
func plantEvil(t *testing.T, dir string) (evil, marker string) {
	t.Helper()
	marker = filepath.Join(dir, "evil-ran")
	evil = filepath.Join(dir, "evil.sh")
	if err := os.WriteFile(evil, []byte("#!/bin/sh\necho ran >> "+marker+"\nexec sleep 100000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return evil, marker
}

func assertNotRun(t *testing.T, marker string) {
	t.Helper()
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the planted program ran (%s exists)", marker)
	}
}

// A state.json that names another tmux and a listening socket, as a
// hostile user can write it: ls, attach and restart use neither.
func TestCLINeverExecutesOrDialsWhatStateJSONNames(t *testing.T) {
	b := newBox(t, "")
	b.ok("session", "add", "s")
	evil, marker := plantEvil(t, b.dir)
	sock := filepath.Join(b.dir, "planted.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dgram := filepath.Join(b.dir, "planted-control.sock")
	pc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: dgram, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if err := os.MkdirAll(b.runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	st := state.State{Format: state.Format, PID: os.Getpid(), Socket: sock, Tmux: evil, Control: dgram,
		Agents: agents.Table{"sleep": {Command: evil}}, StartedAt: time.Now()}
	if err := state.Write(filepath.Join(b.runtime, "state.json"), st); err != nil {
		t.Fatal(err)
	}
	b.setEnv("AGENT_BOX_TMUX", "")
	if r := b.run("", "session", "ls"); r.code != 0 {
		t.Errorf("session ls: exit %d\n%s", r.code, r.stderr)
	}
	if r := b.run("", "session", "attach", "s"); r.code != 8 {
		t.Errorf("session attach: exit %d, want 8 (no server on the real socket)\n%s", r.code, r.stderr)
	}
	if r := b.run("", "session", "restart", "s"); r.code != 8 {
		t.Errorf("session restart: exit %d, want 8 (nothing listens on the real control socket)\n%s", r.code, r.stderr)
	}
	pc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, _, err := pc.ReadFrom(make([]byte, 64)); err == nil {
		t.Errorf("restart sent %d bytes to the control socket state.json names", n)
	}
	assertNotRun(t, marker)
}

// exec-session runs the agent the unit's agents table names, even when
// state.json names another command for it.
func TestExecSessionRunsTheUnitsAgentNotStateJSONs(t *testing.T) {
	b := newBox(t, "")
	b.startSupervisor()
	b.ok("session", "add", "s")
	p := b.waitRunning("s")
	evil, marker := plantEvil(t, b.dir)
	stPath := filepath.Join(b.runtime, "state.json")
	st, err := state.Read(stPath)
	if err != nil {
		t.Fatal(err)
	}
	st.Agents = agents.Table{"sleep": {Command: evil}}
	if err := state.Write(stPath, st); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(p.PID, syscall.SIGKILL)
	b.waitFor(10*time.Second, "s respawns", func() bool {
		q, ok := b.running("s")
		return ok && q.PID != p.PID
	})
	q, _ := b.running("s")
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(q.PID) + "/exe")
	if exe != sleepBin {
		if real, _ := filepath.EvalSymlinks(sleepBin); exe != real {
			t.Errorf("the respawned session runs %s, want %s", exe, sleepBin)
		}
	}
	assertNotRun(t, marker)
}

// Root, or any user, acting on a home another user owns is refused with
// exit 11 and a runuser hint, before any of that user's files is read.
func TestCLIRefusesAHomeOwnedByAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test needs root (to own files as another uid); the suite runs as root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)

	t.Run("root on a home owned by nobody", func(t *testing.T) {
		b := newBox(t, "")
		evil, marker := plantEvil(t, b.dir)
		if err := os.MkdirAll(b.runtime, 0o700); err != nil {
			t.Fatal(err)
		}
		st := state.State{Format: state.Format, PID: os.Getpid(), Tmux: evil, StartedAt: time.Now()}
		if err := state.Write(filepath.Join(b.runtime, "state.json"), st); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(b.home, uid, gid); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"session", "ls"}, {"session", "add", "x"}, {"env", "ls"}, {"session", "attach"}} {
			r := b.run("", args...)
			if r.code != 11 || !strings.Contains(r.stderr, "belongs to nobody") || !strings.Contains(r.stderr, "hint: run it as that user: runuser -u nobody -- agent-box ...") {
				t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 11, the owner and the runuser hint", args, r.code, r.stderr)
			}
		}
		if _, err := os.Stat(b.registryPath()); err == nil {
			t.Error("a refused command wrote the registry")
		}
		assertNotRun(t, marker)
	})

	t.Run("nobody on a home owned by root", func(t *testing.T) {
		b := newBox(t, "")
		if err := os.Chmod(b.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Dir(b.dir), 0o755)
		bin := filepath.Join(t.TempDir(), "agent-box")
		if out, err := exec.Command("cp", testBinary(t), bin).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		os.Chmod(filepath.Dir(bin), 0o755)
		cmd := exec.Command(bin, "session", "ls")
		cmd.Env = b.env
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 11 || !strings.Contains(string(out), "belongs to root") {
			t.Errorf("nobody: %v, output:\n%s\nwant exit 11 naming root", err, out)
		}
	})
}

// writeLogin writes the module's login file for the user running the tests
// into a directory the test binary reads instead of /etc/agent-box/users.
func writeLogin(t *testing.T, b *box, content string, uid int) string {
	t.Helper()
	me, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(b.dir, "login")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, me.Username+".env")
	if err := os.WriteFile(p, []byte(content), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, uid, -1); err != nil {
		t.Fatal(err)
	}
	b.setEnv("AGENT_BOX_TEST_LOGIN_DIR", dir)
	return p
}

// A plain login has none of the unit's AGENT_BOX_* variables: add, with and
// without --agent, works from the login file, with no supervisor running.
func TestAddFromAPlainLoginUsesTheLoginFile(t *testing.T) {
	b := newBox(t, "")
	var agentsFile string
	for _, kv := range b.env {
		if v, ok := strings.CutPrefix(kv, "AGENT_BOX_AGENTS="); ok {
			agentsFile = v
		}
	}
	for _, k := range []string{"AGENT_BOX_AGENTS", "AGENT_BOX_DEFAULT_AGENT", "AGENT_BOX_TMUX", "AGENT_BOX_RUNTIME_DIR"} {
		b.setEnv(k, "")
	}
	writeLogin(t, b, "# Generated by the agent-box NixOS module.\nAGENT_BOX_AGENTS="+agentsFile+"\nAGENT_BOX_DEFAULT_AGENT=sleep\nAGENT_BOX_TMUX="+tmuxBin+"\n", 0)
	r := b.run("", "session", "add", "one")
	if r.code != 0 || !strings.Contains(r.stderr, "supervisor not running") {
		t.Fatalf("add without --agent: exit %d\n%s", r.code, r.stderr)
	}
	b.ok("session", "add", "two", "--agent", "sh", "--", "true")
	if r := b.run("", "session", "add", "three", "--agent", "nope"); r.code != 6 {
		t.Errorf("add with an unknown agent: exit %d, want 6\n%s", r.code, r.stderr)
	}
	reg := b.registry()
	one, ok1 := reg.Find("one")
	two, ok2 := reg.Find("two")
	if !ok1 || !ok2 || one.Agent != "sleep" || two.Agent != "sh" {
		t.Errorf("registry: %+v", reg.Sessions)
	}
}

// A login file that its owner (or anyone but root) could have written is
// refused rather than trusted.
func TestALoginFileNotOwnedByRootIsRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test needs root")
	}
	b := newBox(t, "")
	b.setEnv("AGENT_BOX_AGENTS", "")
	writeLogin(t, b, "AGENT_BOX_AGENTS=/tmp/x.json\n", 65534)
	r := b.run("", "session", "add", "one", "--agent", "sleep")
	if r.code == 0 || !strings.Contains(r.stderr, "owned by root") {
		t.Errorf("exit %d, stderr:\n%s\nwant a refusal naming the ownership rule", r.code, r.stderr)
	}
}

// Names, agents and directories a user wrote reach the terminal escaped.
func TestSessionLsEscapesControlBytes(t *testing.T) {
	b := newBox(t, "")
	cwd := filepath.Join(b.home, "dir\x1b[2J\x07")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	b.ok("session", "add", "s", "--cwd", cwd)
	out := b.ok("session", "ls")
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("ls printed raw control bytes: %q", out)
	}
	if !strings.Contains(out, `dir\x1b[2J\x07`) {
		t.Errorf("ls lacks the escaped directory: %q", out)
	}
	js := b.ok("session", "ls", "--json")
	var entries []struct{ Cwd string }
	if err := json.Unmarshal([]byte(js), &entries); err != nil || len(entries) != 1 || entries[0].Cwd != cwd {
		t.Errorf("ls --json must carry the exact bytes: %v %q", err, js)
	}
	if err := os.WriteFile(b.registryPath(), []byte("{\"version\": 1, \x1b[31mnot json"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := b.run("", "session", "ls")
	if r.code != 7 || strings.ContainsAny(r.stderr, "\x1b") {
		t.Errorf("corrupt registry: exit %d, stderr %q; want 7 and no raw ESC", r.code, r.stderr)
	}
}
