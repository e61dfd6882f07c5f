package tmux

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseVersionReadsMajorMinorOfEveryTmuxSpelling(t *testing.T) {
	for _, tc := range []struct {
		in           string
		major, minor int
		ok           bool
	}{
		{"tmux 3.3a\n", 3, 3, true}, {"tmux 3.0", 3, 0, true}, {"tmux 2.9a", 2, 9, true},
		{"tmux next-3.5", 3, 5, true}, {"tmux master", 999, 0, true}, {"tmux", 0, 0, false},
	} {
		ma, mi, err := parseVersion(tc.in)
		if (err == nil) != tc.ok || ma != tc.major || mi != tc.minor {
			t.Errorf("parseVersion(%q) = %d, %d, %v; want %d, %d, ok=%v", tc.in, ma, mi, err, tc.major, tc.minor, tc.ok)
		}
	}
}

func TestParsePanesKeepsSeparatorInSessionName(t *testing.T) {
	got, err := parsePanes("%0|0|||42|a\n%3|1|1||43|odd|name\n%4|1||9|44|k\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []Pane{
		{ID: "%0", PID: 42, Session: "a"},
		{ID: "%3", Dead: true, Status: "1", PID: 43, Session: "odd|name"},
		{ID: "%4", Dead: true, Signal: "9", PID: 44, Session: "k"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parsePanes (-want +got):\n%s", diff)
	}
	if _, err := parsePanes("garbage\n"); err == nil {
		t.Errorf("parsePanes accepted garbage")
	}
}

func TestCheckVersionRefusesMissingAndOldTmuxWithErrUnusable(t *testing.T) {
	dir := t.TempDir()
	fake := func(name, out string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+out+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		what, bin string
		ok        bool
	}{
		{"tmux 3.2", fake("new", "tmux 3.2"), true},
		{"tmux 3.1c (no -D, no -N)", fake("old", "tmux 3.1c"), false},
		{"tmux 2.9a", fake("older", "tmux 2.9a"), false},
		{"unparsable -V", fake("odd", "tmux"), false},
		{"missing binary", filepath.Join(dir, "missing"), false},
	} {
		err := CheckVersion(context.Background(), tc.bin)
		if tc.ok && err != nil || !tc.ok && !errors.Is(err, ErrUnusable) {
			t.Errorf("%s: CheckVersion = %v, want ok=%v (else wrapping ErrUnusable)", tc.what, err, tc.ok)
		}
	}
}

func TestSendTextTypesTheTextLiterallyThenEnter(t *testing.T) {
	s := startServer(t, "tmux-send-")
	ctx := context.Background()
	out := filepath.Join(filepath.Dir(s.Socket), "typed")
	// the pane's program writes every line it reads
	if _, err := s.NewSession(ctx, "main", []string{"/bin/sh", "-c", "cat > " + out}); err != nil {
		t.Fatal(err)
	}
	defer s.KillServer(ctx)
	lines := []string{`a; b;`, `;`, `x\;`, `$(id) {file} 'q' "d"`, `-t other`, `héllo`}
	for _, l := range lines {
		if err := s.SendText(ctx, "main", l); err != nil {
			t.Fatalf("SendText(%q): %v", l, err)
		}
	}
	want := strings.Join(lines, "\n") + "\n"
	var got []byte
	for i := 0; i < 50; i++ {
		if got, _ = os.ReadFile(out); string(got) == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("the pane read %q, want %q", got, want)
}

func TestNewSessionsCreatesThemInOneCommandAndStopsAtTheFirstFailure(t *testing.T) {
	s := startServer(t, "tmux-new-")
	ctx := context.Background()
	sleep := []string{"/bin/sh", "-c", "exec sleep 1000"}
	if _, err := s.NewSession(ctx, "b", sleep); err != nil {
		t.Fatal(err)
	}
	defer s.KillServer(ctx)
	pids, err := s.NewSessions(ctx, []NewSpec{{"a", sleep}, {"c", sleep}})
	if err != nil || len(pids) != 2 {
		t.Fatalf("two new sessions: pids %v, %v", pids, err)
	}
	// "b" exists: the list stops there, "d" is not created
	pids2, err := s.NewSessions(ctx, []NewSpec{{"e", sleep}, {"b", sleep}, {"d", sleep}})
	if err == nil || len(pids2) != 1 {
		t.Fatalf("a list whose second name is taken: pids %v, err %v; want one pid and an error", pids2, err)
	}
	panes, err := s.ListPanes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, p := range panes {
		got[p.Session] = p.PID
	}
	want := map[string]int{"a": pids[0], "c": pids[1], "e": pids2[0]}
	for name, pid := range want {
		if got[name] != pid {
			t.Errorf("session %s runs pid %d, NewSessions said %d", name, got[name], pid)
		}
	}
	if _, ok := got["d"]; ok || len(got) != 4 {
		t.Errorf("sessions %v: want a, b, c, e", got)
	}
}

// tmuxAndDir is tmux from PATH and a new directory with a short path
// (socket names are limited), removed after the test.
func tmuxAndDir(t *testing.T, prefix string) (bin, dir string) {
	t.Helper()
	bin, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal("tmux is not installed (scripts/deps installs it):", err)
	}
	if dir, err = os.MkdirTemp("/tmp", prefix); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return bin, dir
}

// startServer runs a tmux server in the foreground (-D, as the sessions
// unit does) in a new directory and waits until it answers: the clients
// of this package never start one (-N).
func startServer(t *testing.T, prefix string) *Server {
	t.Helper()
	bin, dir := tmuxAndDir(t, prefix)
	socket := filepath.Join(dir, "s")
	s := &Server{Bin: bin, Socket: socket, Env: []string{"PATH=/usr/bin:/bin", "TERM=xterm"}}
	cmd := exec.Command(bin, "-D", "-S", socket, "-f", "/dev/null")
	cmd.Env = s.Env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	for deadline := time.Now().Add(10 * time.Second); !s.Alive(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("tmux -D on %s did not answer within 10 s", socket)
		}
	}
	return s
}

func TestNoClientCommandStartsAServer(t *testing.T) {
	bin, dir := tmuxAndDir(t, "tmux-none-")
	s := &Server{Bin: bin, Socket: filepath.Join(dir, "s"), Env: []string{"PATH=/usr/bin:/bin", "TERM=xterm"}}
	ctx := context.Background()
	if _, err := s.NewSession(ctx, "a", []string{"/bin/sh", "-c", "exec sleep 1000"}); err == nil {
		s.KillServer(ctx)
		t.Fatal("new-session with no server running succeeded: a client started a server")
	}
	if _, err := s.NewSessions(ctx, []NewSpec{{"a", []string{"/bin/sleep", "1000"}}}); err == nil {
		s.KillServer(ctx)
		t.Fatal("a new-session list with no server running succeeded")
	}
	if s.Alive() {
		s.KillServer(ctx)
		t.Fatal("a server answers on the socket after client commands alone")
	}
}

func TestRespawnFailedRespawnsOnlyAFailedDeadPaneOfThatProcess(t *testing.T) {
	s := startServer(t, "tmux-rf-")
	ctx := context.Background()
	if _, err := s.Run(ctx, "set-option", "-g", "remain-on-exit", "on"); err != nil {
		t.Fatal(err)
	}
	again := []string{"/bin/sh", "-c", "exec sleep 1000"}
	start := func(name string, argv ...string) int {
		pid, err := s.NewSession(ctx, name, argv)
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	failed := start("failed", "/bin/sh", "-c", "exit 3")
	clean := start("clean", "/bin/sh", "-c", "exit 0")
	killed := start("killed", "/bin/sh", "-c", "exec sleep 1000")
	alive := start("alive", "/bin/sh", "-c", "exec sleep 1000")
	syscall.Kill(killed, syscall.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ps, _ := s.ListPanes(ctx)
		dead := 0
		for _, p := range ps {
			if p.Dead {
				dead++
			}
		}
		if dead == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("3 panes did not die within 10 s: %+v", ps)
		}
	}
	for _, tc := range []struct {
		name      string
		pid       int
		respawned bool
		want      Exit
	}{
		{"failed", failed, true, Exit{Dead: true, Status: "3", Respawned: true}},
		{"clean", clean, false, Exit{Dead: true, Status: "0"}},
		{"killed", killed, true, Exit{Dead: true, Signal: "9", Respawned: true}},
		{"alive", alive, false, Exit{}},
		{"failed", failed, false, Exit{}}, // its process is another one now
	} {
		x, err := s.RespawnFailed(ctx, tc.name, tc.pid, again)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.respawned && (x.NewPID <= 0 || x.NewPID == tc.pid) {
			t.Errorf("%s: new pid %d", tc.name, x.NewPID)
		}
		x.NewPID = 0
		if x != tc.want {
			t.Errorf("%s (pid %d): %+v, want %+v", tc.name, tc.pid, x, tc.want)
		}
	}
	if _, err := s.RespawnFailed(ctx, "clean", clean, []string{"/bin/sh", "it's"}); !errors.Is(err, ErrUnquotable) {
		t.Errorf("an argument with a quote: %v, want ErrUnquotable", err)
	}
}
