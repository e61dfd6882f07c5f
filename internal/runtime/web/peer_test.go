package web

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeTTYDChild is the test binary as a listener of another user on the
// ttyd socket: it prints "listening", then for each connection either
// "closed unused" (the daemon hung up without a byte) or "request LINE"
// (and answers fakeBody).
func fakeTTYDChild(path string) int {
	l, err := net.Listen("unix", path)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("listening")
	for {
		c, err := l.Accept()
		if err != nil {
			return 1
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		switch {
		case line == "" && err == io.EOF:
			fmt.Println("closed unused")
		case line != "":
			fmt.Printf("request %q\n", strings.TrimSpace(line))
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(fakeBody), fakeBody)
		default:
			fmt.Println("error", err)
		}
		c.Close()
	}
}

const nobody = 65534

// startFakeTTYDAsNobody runs fakeTTYDChild as nobody on path and returns
// its output lines. The test binary is copied where nobody may run it.
func startFakeTTYDAsNobody(t *testing.T, path string) <-chan string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Fatal("this test runs a child as nobody: it needs root")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(sockDir(t), "web.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(bin), filepath.Dir(path)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(filepath.Dir(path), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = []string{"WEB_TEST_FAKE_TTYD=" + path}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if l := nextLine(t, lines); l != "listening" {
		t.Fatalf("fake ttyd: %q", l)
	}
	return lines
}

func nextLine(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l := <-lines:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("the fake ttyd said nothing for 10 s")
		return ""
	}
}

func TestAListenerOfAnotherUidIsNeverUsed(t *testing.T) {
	path := filepath.Join(sockDir(t), "ttyd.sock")
	lines := startFakeTTYDAsNobody(t, path)
	// the unit check accepts anything: only the uid refuses
	f := newFixture(t, func(c *Config) { c.TTYDSocket = path })
	for _, tc := range []struct {
		name string
		ws   bool
	}{{"page", false}, {"WebSocket", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var code int
			var body string
			if tc.ws {
				res, c, _ := f.ws("/term/ws?arg=main", header("Origin", testOrigin))
				code = res.StatusCode
				c.SetDeadline(time.Now().Add(5 * time.Second))
				b, _ := io.ReadAll(res.Body)
				body = string(b)
			} else {
				code, _, body = f.do(http.MethodGet, "/term/?arg=main", header("Cookie", "__Host-agentbox=x.y"))
			}
			if code != http.StatusBadGateway {
				t.Errorf("status %d, want 502", code)
			}
			if strings.Contains(body, fakeBody) {
				t.Errorf("the other uid's answer reached the client: %q", body)
			}
			if l := nextLine(t, lines); l != "closed unused" {
				t.Errorf("the other uid's listener got %s", l)
			}
		})
	}
	if !strings.Contains(f.log.String(), fmt.Sprintf("refused ttyd-peer: GET \"/term/\": socket peer refused: the listener's uid is %d, not %d", nobody, os.Getuid())) {
		t.Errorf("log:\n%s", f.log)
	}
}

func TestAListenerOutsideTheTermUnitIsNeverUsed(t *testing.T) {
	// the real unit check: this test process is not in agent-box-term@alice.service
	f := newFixture(t, func(c *Config) { c.InUnit = nil })
	code, _, body := f.do(http.MethodGet, "/term/?arg=main", header())
	if code != http.StatusBadGateway || strings.Contains(body, fakeBody) {
		t.Errorf("status %d, body %q; want 502 without ttyd's answer", code, body)
	}
	res, _, _ := f.ws("/term/ws?arg=main", header("Origin", testOrigin))
	if res.StatusCode != http.StatusBadGateway {
		t.Errorf("WebSocket: status %d, want 502", res.StatusCode)
	}
	if n := len(f.ttyd.requests()); n != 0 {
		t.Errorf("the listener outside the unit got %d requests", n)
	}
	if want := "not in agent-box-term@alice.service"; !strings.Contains(f.log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, f.log)
	}
}

func TestNoTTYDIsA502(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.TTYDSocket = filepath.Join(c.TTYDSocket, "..", "absent.sock") })
	if code, _, _ := f.do(http.MethodGet, "/term/?arg=main", header()); code != http.StatusBadGateway {
		t.Errorf("status %d, want 502", code)
	}
}

func TestInTermUnitReadsTheProcessCgroup(t *testing.T) {
	err := InTermUnit("alice")(os.Getpid())
	if err == nil || !strings.Contains(err.Error(), "not in agent-box-term@alice.service") {
		t.Errorf("this test process: %v, want not in agent-box-term@alice.service", err)
	}
	if err := InTermUnit("alice")(1 << 30); err == nil {
		t.Errorf("a pid that does not exist: no error")
	}
}

func TestAListenerWhoseProcessIsGoneIsNeverUsed(t *testing.T) {
	// The socket is bound here and listened on by a child, which then
	// dies: its clients' SO_PEERCRED still names the child's pid, which a
	// process in the term unit could get next. This process keeps the
	// socket and would answer.
	path := filepath.Join(sockDir(t), "ttyd.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	sock := os.NewFile(uintptr(fd), "ttyd.sock")
	defer sock.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WEB_TEST_CHILD=listen-fd3")
	cmd.ExtraFiles = []*os.File{sock}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "listening\n" {
		cmd.Process.Kill()
		t.Fatalf("child: %q", line)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := net.FileListener(sock)
	if err != nil {
		t.Fatal(err)
	}
	ttyd := &fakeTTYD{path: path}
	go (&http.Server{Handler: http.HandlerFunc(ttyd.serve)}).Serve(l)
	defer l.Close()

	f := newFixture(t, func(c *Config) { c.TTYDSocket = path })
	code, _, body := f.do(http.MethodGet, "/term/?arg=main", header())
	if code != http.StatusBadGateway || strings.Contains(body, fakeBody) {
		t.Errorf("status %d, body %q; want 502 without the answer", code, body)
	}
	if n := len(ttyd.requests()); n != 0 {
		t.Errorf("the orphaned listener got %d requests", n)
	}
	if !strings.Contains(f.log.String(), "the process that listened is gone") {
		t.Errorf("log:\n%s", f.log)
	}
}

// TestAListenerThatIsNotTTYDIsNeverUsed: fault 1 of the attack (issue 17).
// A process in agent-box-term@U (here: any, as the unit check accepts it)
// that runs another program than ttyd is refused before a byte is written;
// the ttyd program itself passes.
func TestAListenerThatIsNotTTYDIsNeverUsed(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// the fake ttyd listens in this test process: its program is the test binary
	f := newFixture(t, func(c *Config) { c.IsTTYD = RunsProgram("/bin/sh") })
	code, _, body := f.do(http.MethodGet, "/term/?arg=main", header())
	if code != http.StatusBadGateway || strings.Contains(body, fakeBody) {
		t.Errorf("status %d, body %q; want 502 without the listener's answer", code, body)
	}
	if n := len(f.ttyd.requests()); n != 0 {
		t.Errorf("the listener got %d requests", n)
	}
	if want := "not /bin/sh"; !strings.Contains(f.log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, f.log)
	}
	link := filepath.Join(t.TempDir(), "ttyd") // the module names ttyd through a symlink
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	f = newFixture(t, func(c *Config) { c.IsTTYD = RunsProgram(link) })
	if code, _, body := f.do(http.MethodGet, "/term/?arg=main", header()); code != http.StatusOK {
		t.Errorf("the ttyd program itself: %d %q", code, body)
	}
}
