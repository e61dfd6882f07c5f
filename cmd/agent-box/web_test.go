package main

// Process tests of `agent-box web serve`: the test binary as the program,
// given its socket the way systemd gives it (fd 3, LISTEN_FDS=1,
// LISTEN_FDNAMES=web, LISTEN_PID naming the process itself).

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// systemd sets LISTEN_PID between fork and exec, to the pid of the service
// process; a test cannot know the pid before the child starts, so the
// child sets it first thing (package initialisation runs before TestMain
// runs the program).
func init() {
	if os.Getenv("AGENT_BOX_TEST_LISTEN_PID_SELF") == "1" {
		os.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
		os.Unsetenv("AGENT_BOX_TEST_LISTEN_PID_SELF")
	}
}

// webDaemon is one `agent-box web serve` process.
type webDaemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	sock   string
	stderr *syncBuffer
	done   chan struct{}
}

// startWebDaemon runs bin as `agent-box web serve` with env, on a fresh
// socket passed as systemd's "web", plus extra descriptors from fd 4.
func startWebDaemon(t *testing.T, bin string, env []string, cred *syscall.Credential, extra ...*os.File) *webDaemon {
	t.Helper()
	dir, err := os.MkdirTemp("", "abweb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &webDaemon{t: t, sock: filepath.Join(dir, "web.sock"), stderr: &syncBuffer{}, done: make(chan struct{})}
	l, err := net.Listen("unix", d.sock)
	if err != nil {
		t.Fatal(err)
	}
	ul := l.(*net.UnixListener)
	lf, err := ul.File()
	if err != nil {
		t.Fatal(err)
	}
	ul.SetUnlinkOnClose(false)
	ul.Close() // lf holds the socket now
	defer lf.Close()
	d.cmd = exec.Command(bin, "web", "serve")
	d.cmd.Env = append(append([]string{}, env...), "AGENT_BOX_TEST_PROGRAM=1",
		"AGENT_BOX_TEST_LISTEN_PID_SELF=1", "LISTEN_FDS=1", "LISTEN_FDNAMES=web")
	d.cmd.ExtraFiles = append([]*os.File{lf}, extra...)
	d.cmd.Stdout, d.cmd.Stderr = d.stderr, d.stderr
	if cred != nil {
		d.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.done
	})
	return d
}

// get sends GET path with the user header user ("" for none).
func (d *webDaemon) get(path, user string) (int, string) {
	d.t.Helper()
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", d.sock)
		},
	}}
	req, _ := http.NewRequest(http.MethodGet, "http://box-user.box.test"+path, nil)
	if user != "" {
		req.Header.Set("X-Agent-Box-User", user)
	}
	res, err := c.Do(req)
	if err != nil {
		d.t.Fatalf("GET %s: %v\nstderr:\n%s", path, err, d.stderr)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// stop sends SIGTERM and returns the exit code.
func (d *webDaemon) stop() int {
	d.t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(15 * time.Second):
		d.t.Fatalf("web serve ignored SIGTERM for 15 s\nstderr:\n%s", d.stderr)
	}
	return d.cmd.ProcessState.ExitCode()
}

func currentUser(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("id", "-un").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func TestWebServeListsTheSessionsOfItsUser(t *testing.T) {
	b := newBox(t, "")
	b.startSupervisor()
	b.ok("session", "add", "main")
	b.ok("session", "add", "parked")
	b.ok("session", "stop", "parked")
	b.waitRunning("main")
	d := startWebDaemon(t, testBinary(t), append(b.env, "AGENT_BOX_WEB_DOMAIN=box.test", "AGENT_BOX_TTYD="+testBinary(t)), nil)
	me := currentUser(t)
	code, body := d.get("/", me)
	if code != http.StatusOK {
		t.Fatalf("GET / as %s: %d\n%s\nstderr:\n%s", me, code, body, d.stderr)
	}
	for _, want := range []string{
		// running, the attention state the supervisor recorded, up since its launch
		`<tr class="running"><td><a href="/term/?arg=main" data-session="main">main</a></td><td>sleep</td><td>running · working</td><td><time data-up datetime="`,
		`<tr class="stopped"><td><a href="/term/?arg=parked" data-session="parked">parked</a></td><td>sleep</td><td>stopped</td><td></td><td>0</td><td><a href="/uploads?session=parked">Upload</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the list lacks %s:\n%s", want, body)
		}
	}
	if code, _ := d.get("/", "someone-else"); code != http.StatusForbidden {
		t.Errorf("GET / as someone else: %d, want 403", code)
	}
	if code, _ := d.get("/", ""); code != http.StatusForbidden {
		t.Errorf("GET / without the user header: %d, want 403", code)
	}
	if code := d.stop(); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0\nstderr:\n%s", code, d.stderr)
	}
	log := d.stderr.String()
	if n := strings.Count(log, "agent-box: web: refused wrong-user:"); n != 2 {
		t.Errorf("%d refusals logged, want 2:\n%s", n, log)
	}
}

func TestWebServeRefusesToStartWithoutItsConfiguration(t *testing.T) {
	b := newBox(t, "")
	for _, tc := range []struct {
		name string
		env  []string
		code int
		msg  string
	}{
		{"no domain", b.env, 12, "agent-box: web serve: AGENT_BOX_WEB_DOMAIN is unset"},
		{"a domain that is a URL", append(b.env, "AGENT_BOX_WEB_DOMAIN=https://box.test/"), 12, "the port must be"},
		{"a relative ttyd socket", append(b.env, "AGENT_BOX_WEB_DOMAIN=box.test", "AGENT_BOX_TTYD=/bin/ttyd", "AGENT_BOX_TTYD_SOCKET=ttyd.sock"), 12, "AGENT_BOX_TTYD_SOCKET must be an absolute path"},
		{"no ttyd program", append(b.env, "AGENT_BOX_WEB_DOMAIN=box.test"), 12, "AGENT_BOX_TTYD must be the absolute path of the ttyd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := startWebDaemon(t, testBinary(t), tc.env, nil)
			select {
			case <-d.done:
			case <-time.After(15 * time.Second):
				t.Fatal("web serve did not exit")
			}
			if code := d.cmd.ProcessState.ExitCode(); code != tc.code || !strings.Contains(d.stderr.String(), tc.msg) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, d.stderr, tc.code, tc.msg)
			}
		})
	}
	// without systemd's socket: a failure, not a configuration error
	cmd := b.command(context.Background(), "web", "serve")
	cmd.Env = append(cmd.Env, "AGENT_BOX_WEB_DOMAIN=box.test", "AGENT_BOX_TTYD=/bin/ttyd")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "no sockets from systemd") {
		t.Errorf("no socket: exit %d, %q", code, out)
	}
}

// nobodyBinary is a copy of the test binary that nobody may run (the
// build directory is private to root).
func nobodyBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "abwebbin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(testBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "agent-box")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// procField returns the value of "Name:" in /proc/<pid>/<file>.
func procField(t *testing.T, pid int, file, name string) string {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("/proc/%d/%s has no %s", pid, file, name)
	return ""
}

func TestWebServeIsNotDumpableAndPassesNoDescriptorOn(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test runs web serve as nobody: it needs root")
	}
	const nobody = 65534
	home, err := os.MkdirTemp("", "abwebhome")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	if err := os.Chown(home, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	// a descriptor the daemon inherits beside its socket, as a careless
	// parent would leak it
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	env := []string{"HOME=" + home, "AGENT_BOX_RUNTIME_DIR=" + filepath.Join(home, "run"), "AGENT_BOX_WEB_DOMAIN=box.test", "AGENT_BOX_TTYD=/bin/ttyd"}
	d := startWebDaemon(t, nobodyBinary(t), env, &syscall.Credential{Uid: nobody, Gid: nobody}, w)
	if code, body := d.get("/", "nobody"); code != http.StatusOK || !strings.Contains(body, "No sessions") {
		t.Fatalf("GET / as nobody: %d\n%s\nstderr:\n%s", code, body, d.stderr)
	}
	pid := d.cmd.Process.Pid
	if uid := strings.Fields(procField(t, pid, "status", "Uid"))[0]; uid != strconv.Itoa(nobody) {
		t.Fatalf("the daemon runs as uid %s, want %d", uid, nobody)
	}
	// a non-dumpable process's private /proc files belong to root (its
	// world-readable directory /proc/<pid> keeps the process's uid)
	for _, f := range []string{"environ", "fd", "mem"} {
		fi, err := os.Stat(fmt.Sprintf("/proc/%d/%s", pid, f))
		if err != nil {
			t.Fatal(err)
		}
		if owner := fi.Sys().(*syscall.Stat_t).Uid; owner != 0 {
			t.Errorf("/proc/%d/%s belongs to uid %d: the daemon is dumpable (its user's other processes could ptrace it and take its descriptors)", pid, f, owner)
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, e := range fds {
		fd, _ := strconv.Atoi(e.Name())
		if fd <= 2 {
			continue
		}
		flags, err := strconv.ParseUint(procField(t, pid, "fdinfo/"+e.Name(), "flags"), 8, 64)
		if err != nil {
			t.Fatal(err)
		}
		if flags&syscall.O_CLOEXEC == 0 {
			target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
			t.Errorf("fd %d (%s) is not close-on-exec: a program the daemon runs would inherit it", fd, target)
		}
		checked++
	}
	if checked < 2 {
		t.Errorf("only %d descriptors above 2: the inherited pipe is missing?", checked)
	}
	if code := d.stop(); code != 0 {
		t.Errorf("exit %d after SIGTERM\nstderr:\n%s", code, d.stderr)
	}
}
