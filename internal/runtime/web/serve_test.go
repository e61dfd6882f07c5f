package web

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/badconfig"
	"github.com/agent-box/agent-box/internal/runtime/paths"
)

// processChild runs one process-wide step in a fresh process and prints
// what it observed.
func processChild(mode string) int {
	switch mode {
	case "dumpable":
		before, _, _ := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_GET_DUMPABLE, 0, 0)
		if err := SetNotDumpable(); err != nil {
			fmt.Println("error", err)
			return 1
		}
		after, _, _ := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_GET_DUMPABLE, 0, 0)
		fmt.Printf("dumpable %d -> %d\n", before, after)
	case "cloexec":
		flags := func() string {
			var s []string
			for _, fd := range []int{3, 4} {
				f, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
				if e != 0 {
					s = append(s, e.Error())
					continue
				}
				s = append(s, fmt.Sprint(f&syscall.FD_CLOEXEC))
			}
			return strings.Join(s, ",")
		}
		before := flags()
		if err := CloseOnExecInherited(); err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Printf("cloexec %s -> %s\n", before, flags())
	case "listen-fd3":
		// listen on the inherited, bound socket: SO_PEERCRED of its
		// clients names this process; then wait to be killed
		if err := syscall.Listen(3, 16); err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("listening")
		select {}
	default:
		return 2
	}
	return 0
}

func runChild(t *testing.T, mode string, extra ...*os.File) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WEB_TEST_CHILD="+mode)
	cmd.ExtraFiles = extra
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", mode, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestSetNotDumpable(t *testing.T) {
	if got, want := runChild(t, "dumpable"), "dumpable 1 -> 0"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestInheritedDescriptorsBecomeCloseOnExec(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// exec clears close-on-exec of ExtraFiles: the child inherits 3 and 4
	if got, want := runChild(t, "cloexec", r, w), "cloexec 0,0 -> 1,1"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestServeEndsWithItsContextAndClosesWebSockets(t *testing.T) {
	f := newFixture(t)
	l, err := net.Listen("unix", filepath.Join(f.dir, "web.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, l, nil, f.srv.cfg) }()
	c, err := net.DialTimeout("unix", l.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, br, err := wsHandshake(c, testHost, "/term/ws?arg=main", header("Origin", testOrigin))
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", res.Status, err)
	}
	if err := echo(c, br, "0x"); err != nil {
		t.Fatal(err)
	}
	cancel()
	closedWithin(t, c, br, 5*time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10 s of its context ending")
	}
}

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    map[string]string
		tmux   string
		config bool // a *badconfig.Error
		socket string
	}{
		{"domain only", map[string]string{EnvDomain: "box.example.com"}, "", false, ""},
		{"domain with port", map[string]string{EnvDomain: "box.localhost:8443"}, "", false, ""},
		{"own ttyd socket", map[string]string{EnvDomain: "box.test", EnvTTYDSocket: "/tmp/x/ttyd.sock"}, "", false, "/tmp/x/ttyd.sock"},
		{"no domain", map[string]string{}, "", true, ""},
		{"a scheme", map[string]string{EnvDomain: "https://box.test"}, "", true, ""},
		{"a path", map[string]string{EnvDomain: "box.test/x"}, "", true, ""},
		{"upper case", map[string]string{EnvDomain: "Box.test"}, "", true, ""},
		{"port 0", map[string]string{EnvDomain: "box.test:0"}, "", true, ""},
		{"port with a sign", map[string]string{EnvDomain: "box.test:+443"}, "", true, ""},
		{"empty label", map[string]string{EnvDomain: "box..test"}, "", true, ""},
		{"relative ttyd socket", map[string]string{EnvDomain: "box.test", EnvTTYDSocket: "ttyd.sock"}, "", true, ""},
		{"relative tmux", map[string]string{EnvDomain: "box.test"}, "tmux", true, ""},
		{"no ttyd program", map[string]string{EnvDomain: "box.test", EnvTTYD: ""}, "", true, ""},
		{"a relative ttyd program", map[string]string{EnvDomain: "box.test", EnvTTYD: "ttyd"}, "", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{EnvTTYD: "/run/current-system/sw/bin/ttyd"}
			for k, v := range tc.env {
				env[k] = v
			}
			cfg, err := FromEnv(func(k string) string { return env[k] }, pathsWithTmux(tc.tmux))
			isConfig := badconfig.Is(err)
			if isConfig != tc.config || err != nil && !isConfig {
				t.Fatalf("err %v, want a *badconfig.Error: %v", err, tc.config)
			}
			if err != nil {
				return
			}
			want := tc.socket
			if want == "" {
				want = "/run/agent-box-term/" + cfg.User + "/ttyd.sock"
			}
			if cfg.TTYDSocket != want || cfg.UID != os.Getuid() || cfg.StatusSocket != StatusSocket {
				t.Errorf("got %+v", cfg)
			}
		})
	}
}

func pathsWithTmux(tmux string) paths.Env { return paths.Env{Home: "/home/x", Tmux: tmux} }
