package registry

import (
	"context"
	"errors"
	"fmt"
	"github.com/agent-box/agent-box/internal/hostilefile"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// badKinds are what a user-writable path can be swapped for.
var badKinds = []string{"FIFO", "directory", "symlink to a FIFO", "oversized file"}

// snapshot describes what is at path, to show it was left as it was.
func snapshot(t *testing.T, path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%v %d", fi.Mode(), fi.Size())
}

func checkHint(t *testing.T, ce *CorruptError, want string) {
	t.Helper()
	h := ce.Hint()
	if h == "" || strings.Contains(h, "\n") || !strings.Contains(h, want) {
		t.Errorf("Hint() = %q, want one line containing %q", h, want)
	}
}

func TestABadRegistryIsCorruptAtOnceForLoadAndUpdate(t *testing.T) {
	for _, kind := range badKinds {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "sessions.json")
			hostilefile.Plant(t, p, kind, MaxFileSize, `{"version": 1}`)
			before := snapshot(t, p)
			var ce *CorruptError
			if err := hostilefile.Within(t, func() error { _, err := Load(p); return err }); !errors.As(err, &ce) || ce.Path != p {
				t.Fatalf("Load = %v, want *CorruptError", err)
			}
			checkHint(t, ce, "mv "+p+" "+p+".bad")
			if kind == "oversized file" {
				checkHint(t, ce, "at most 4194304 bytes")
			}
			called := false
			err := hostilefile.Within(t, func() error {
				return Update(context.Background(), p, func(*Registry) error { called = true; return nil })
			})
			if !errors.As(err, &ce) {
				t.Errorf("Update = %v, want *CorruptError", err)
			}
			if called || snapshot(t, p) != before {
				t.Errorf("Update called fn (%v) or changed the file: %s -> %s", called, before, snapshot(t, p))
			}
		})
	}
}

func TestABadLockFileIsReportedAsCorruptWithItsOwnHint(t *testing.T) {
	for _, kind := range []string{"FIFO", "directory", "symlink to a FIFO"} {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "sessions.json")
			hostilefile.Plant(t, p+".lock", kind, 0, "")
			err := hostilefile.Within(t, func() error {
				return Update(context.Background(), p, func(r *Registry) error { return r.Add(Session{Name: "a", Agent: "x", Cwd: "/"}) })
			})
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Update = %v, want *CorruptError", err)
			}
			checkHint(t, ce, "move the lock file away (mv "+p+".lock ")
			if _, err := os.Stat(p); err == nil {
				t.Errorf("the registry was written without the lock")
			}
		})
	}
}

func TestHintQuotesAPathForTheShell(t *testing.T) {
	ce := &CorruptError{Path: "/home/a b/it's\x1b", Err: errors.New("x")}
	if h, want := ce.Hint(), `mv '/home/a b/it'"'"'s\x1b' '/home/a b/it'"'"'s\x1b.bad'`; !strings.Contains(h, want) {
		t.Errorf("Hint() = %s, want it to contain %s", h, want)
	}
}

func TestLimitsAreRefusedWhenWrittenNamingTheLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sessions.json")
	if err := Update(context.Background(), p, func(r *Registry) error { return r.Add(Session{Name: "ok", Agent: "x", Cwd: "/"}) }); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(p)
	big := strings.Repeat("a", 200<<10)
	third := strings.Repeat("b", 100<<10)
	for _, tc := range []struct {
		name  string
		fn    func(r *Registry) error
		limit string
	}{
		{"a 200 KiB argument", func(r *Registry) error {
			return r.Add(Session{Name: "a", Agent: "x", Cwd: "/", Args: []string{"-p", big}})
		}, "131071"},
		{"three 100 KiB arguments", func(r *Registry) error {
			return r.Add(Session{Name: "a", Agent: "x", Cwd: "/", Args: []string{third, third, third}})
		}, "262144"},
		{"a 4096-byte cwd", func(r *Registry) error {
			return r.Add(Session{Name: "a", Agent: "x", Cwd: "/" + strings.Repeat("d", 4095)})
		}, "4095"},
		{"the 1025th session", func(r *Registry) error {
			for i := len(r.Sessions); i < MaxSessions; i++ {
				if err := r.Add(Session{Name: fmt.Sprintf("s%d", i), Agent: "x", Cwd: "/"}); err != nil {
					return err
				}
			}
			return r.Add(Session{Name: "one-more", Agent: "x", Cwd: "/"})
		}, "1024"},
		{"an argument grown in place", func(r *Registry) error {
			r.Sessions[0].Args = []string{big}
			return nil
		}, "131071"},
		{"a file over 4 MiB", func(r *Registry) error {
			// '<' is written as \u003c: 20 sessions of 2 * 100 KiB take 12 MiB
			lt := strings.Repeat("<", 100<<10)
			for i := 0; i < 20; i++ {
				if err := r.Add(Session{Name: fmt.Sprintf("s%d", i), Agent: "x", Cwd: "/", Args: []string{lt, lt}}); err != nil {
					return err
				}
			}
			return nil
		}, "4194304"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Update(context.Background(), p, tc.fn)
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tc.limit) {
				t.Errorf("Update = %v, want ErrTooLarge naming %s", err, tc.limit)
			}
			if after, _ := os.ReadFile(p); string(after) != string(before) {
				t.Errorf("the registry changed")
			}
		})
	}
}

func TestParseRefusesAHandWrittenRegistryBeyondTheLimits(t *testing.T) {
	entry := func(name, cwd string, args ...string) string {
		q := make([]string, len(args))
		for i, a := range args {
			q[i] = `"` + a + `"`
		}
		return fmt.Sprintf(`{"name": %q, "agent": "x", "cwd": %q, "args": [%s]}`, name, cwd, strings.Join(q, ","))
	}
	doc := func(entries ...string) string {
		return `{"version": 1, "sessions": [` + strings.Join(entries, ",") + `]}`
	}
	var many []string
	for i := 0; i <= MaxSessions; i++ {
		many = append(many, entry(fmt.Sprintf("s%d", i), "/"))
	}
	for _, tc := range []struct{ name, doc, limit string }{
		{"argument of 131072 bytes", doc(entry("a", "/", strings.Repeat("a", MaxArgLen+1))), "131071"},
		{"arguments over 256 KiB", doc(entry("a", "/", strings.Repeat("a", 100<<10), strings.Repeat("a", 100<<10), strings.Repeat("a", 100<<10))), "262144"},
		{"cwd of 4096 bytes", doc(entry("a", "/"+strings.Repeat("d", MaxCwdLen))), "4095"},
		{"1025 sessions", doc(many...), "1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "sessions.json")
			if err := os.WriteFile(p, []byte(tc.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			var ce *CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.limit) {
				t.Errorf("Load = %v, want *CorruptError naming %s", err, tc.limit)
			}
			if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrInvalidName) {
				t.Errorf("a corrupt file reads as an input error: %v", err)
			}
		})
	}
}

func TestErrorsQuoteWhatTheUserWroteEscapedAndCut(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sessions.json")
	name := `\u001b]0;pwned\u0007\u001b[2J` + strings.Repeat("x", 1000)
	doc := `{"version": 1, "sessions": [{"name": "` + name + `", "agent": "x", "cwd": "/"}]}`
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil {
		t.Fatal("Load accepted an invalid name")
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\x1b\x07") || !strings.Contains(msg, `\x1b]0;pwned\x07`) {
		t.Errorf("raw or missing control bytes in %q", msg)
	}
	if len(msg) > 300 || !strings.Contains(msg, "... (1014 bytes)") {
		t.Errorf("the quoted name is not cut at 64 bytes: %d bytes: %s", len(msg), msg)
	}
	if err := CheckName("a\x1b[2J" + strings.Repeat("y", 1<<20)); strings.Contains(err.Error(), "\x1b") || len(err.Error()) > 200 {
		t.Errorf("CheckName echoes %d bytes, raw: %q", len(err.Error()), err.Error()[:80])
	}
}

func TestABadSeedIsRefusedAtOnce(t *testing.T) {
	for _, kind := range badKinds {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "seed.json")
			hostilefile.Plant(t, p, kind, int64(MaxSeedSize), `{"sessions": []}`)
			err := hostilefile.Within(t, func() error { _, err := LoadSeed(p); return err })
			if !userfile.Bad(err) || !strings.Contains(err.Error(), p) {
				t.Errorf("LoadSeed = %v, want a not-regular or too-large error naming the file", err)
			}
		})
	}
	p := filepath.Join(t.TempDir(), "seed.json")
	doc := `{"sessions": [{"name": "a", "agent": "x", "args": ["` + strings.Repeat("a", 200<<10) + `"]}]}`
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSeed(p); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "131071") {
		t.Errorf("LoadSeed of a 200 KiB argument = %v, want ErrTooLarge naming 131071", err)
	}
}

func TestTwoHundredConcurrentUpdatesFinish(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cfg", "sessions.json")
	const n = 200
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs <- Update(context.Background(), p, func(r *Registry) error {
				return r.Add(Session{Name: fmt.Sprintf("s%03d", i), Agent: "x", Cwd: "/", Args: []string{"--flag"}})
			})
		}(i)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d concurrent updates not done after 30 s", n)
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d concurrent updates in %s", n, time.Since(start).Round(time.Millisecond))
	r, err := Load(p)
	if err != nil || len(r.Sessions) != n {
		t.Errorf("after %d concurrent adds: %d sessions, %v", n, len(r.Sessions), err)
	}
}

// TestArgLimitsAreWhatExecveAccepts backs the constants with the kernel: an
// argument of MaxArgLen bytes reaches a program, one more is E2BIG, and
// arguments of MaxArgsSize (as ArgsSize counts) reach it too.
func TestArgLimitsAreWhatExecveAccepts(t *testing.T) {
	run := func(args []string) error {
		cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$"}, args...)...)
		cmd.Env = []string{}
		return cmd.Run()
	}
	if err := run([]string{strings.Repeat("a", MaxArgLen)}); err != nil {
		t.Errorf("exec with an argument of %d bytes: %v", MaxArgLen, err)
	}
	if err := run([]string{strings.Repeat("a", MaxArgLen+1)}); !errors.Is(err, syscall.E2BIG) {
		t.Errorf("exec with an argument of %d bytes: %v, want E2BIG", MaxArgLen+1, err)
	}
	many := make([]string, MaxArgsSize/9) // empty arguments: the most pointers
	if n := ArgsSize(many); n > MaxArgsSize {
		t.Fatalf("ArgsSize = %d", n)
	}
	if err := checkSession(Session{Name: "a", Agent: "x", Cwd: "/", Args: many}); err != nil {
		t.Errorf("%d empty arguments refused: %v", len(many), err)
	}
	if err := run(many); err != nil {
		t.Errorf("exec with %d empty arguments: %v", len(many), err)
	}
}
