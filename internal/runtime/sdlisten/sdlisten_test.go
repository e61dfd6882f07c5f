package sdlisten

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The child half: the test binary re-run with sockets at fds 3 and 4, as
// systemd passes them.
func TestMain(m *testing.M) {
	if os.Getenv("SDLISTEN_CHILD") == "1" {
		os.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
		ls, err := Listeners()
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(0)
		}
		got, err := Take(ls, "verify", "pages")
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(0)
		}
		// the listeners hold close-on-exec descriptors (no child inherits them)
		cloexec := ""
		for _, l := range got {
			raw, _ := l.(*net.UnixListener).SyscallConn()
			raw.Control(func(fd uintptr) {
				flags, _, _ := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFD, 0)
				cloexec += strconv.Itoa(int(flags & syscall.FD_CLOEXEC))
			})
		}
		os.Stdout.WriteString("ok " + got[0].Addr().String() + " " + got[1].Addr().String() +
			" cloexec=" + cloexec + " env=" + os.Getenv("LISTEN_FDS") + "\n")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func listen(t *testing.T, path string) *os.File {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := l.(*net.UnixListener).File()
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	return f
}

func child(t *testing.T, names string, files ...*os.File) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.ExtraFiles = files
	cmd.Env = append(os.Environ(), "SDLISTEN_CHILD=1", "LISTEN_FDS="+strconv.Itoa(len(files)), "LISTEN_FDNAMES="+names)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestListenersAreFoundByNameAndMarkedCloseOnExec(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "verify.sock"), filepath.Join(dir, "pages.sock")
	got := child(t, "verify:pages", listen(t, a), listen(t, b))
	if want := "ok " + a + " " + b + " cloexec=11 env="; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestAMissingOrExtraSocketIsAnError(t *testing.T) {
	dir := t.TempDir()
	if got := child(t, "verify", listen(t, filepath.Join(dir, "v.sock"))); !strings.Contains(got, `no socket named "pages"`) {
		t.Errorf("missing: %q", got)
	}
	got := child(t, "verify:pages:control", listen(t, filepath.Join(dir, "1.sock")), listen(t, filepath.Join(dir, "2.sock")), listen(t, filepath.Join(dir, "3.sock")))
	if !strings.Contains(got, "want exactly verify, pages") {
		t.Errorf("extra: %q", got)
	}
}

func TestWithoutSystemdThereAreNone(t *testing.T) {
	t.Setenv("LISTEN_PID", "1")
	t.Setenv("LISTEN_FDS", "2")
	if _, err := Listeners(); err != ErrNone {
		t.Errorf("a LISTEN_PID of another process: %v, want ErrNone", err)
	}
}
