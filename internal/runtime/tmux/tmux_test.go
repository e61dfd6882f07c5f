package tmux

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
		{"tmux 3.0", fake("new", "tmux 3.0"), true},
		{"tmux 2.9a", fake("old", "tmux 2.9a"), false},
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
	bin, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal("tmux is not installed (scripts/deps installs it):", err)
	}
	dir, err := os.MkdirTemp("/tmp", "tmux-send-") // a short path: socket names are limited
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s := &Server{Bin: bin, Socket: filepath.Join(dir, "s"), Env: []string{"PATH=/usr/bin:/bin", "TERM=xterm"}}
	ctx := context.Background()
	out := filepath.Join(dir, "typed")
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
