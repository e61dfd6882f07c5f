package envfile

import (
	"context"
	"errors"
	"fmt"
	"github.com/agent-box/agent-box/internal/hostilefile"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func snapshot(path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%v %d", fi.Mode(), fi.Size())
}

func checkHint(t *testing.T, err error, want string) {
	t.Helper()
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("%v, want *CorruptError", err)
	}
	if h := ce.Hint(); h == "" || strings.Contains(h, "\n") || !strings.Contains(h, want) {
		t.Errorf("Hint() = %q, want one line containing %q", h, want)
	}
}

func TestABadEnvFileIsCorruptAtOnceAndLeftAsItIs(t *testing.T) {
	for _, kind := range []string{"FIFO", "directory", "symlink to a FIFO", "oversized file"} {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "env")
			hostilefile.Plant(t, p, kind, MaxFileSize, "A=1\n")
			before := snapshot(p)
			err := hostilefile.Within(t, func() error { _, err := Load(p); return err })
			var se *SyntaxError // the name the CLI maps to exit 7 today
			if !errors.As(err, &se) || se.Line != 0 {
				t.Fatalf("Load = %v, want *CorruptError for the whole file", err)
			}
			checkHint(t, err, "mv "+p+" "+p+".bad")
			if kind == "oversized file" {
				checkHint(t, err, "at most 262144 bytes")
			}
			for name, change := range map[string]func() error{
				"Set":    func() error { return Set(context.Background(), p, "K", "v") },
				"Remove": func() error { return Remove(context.Background(), p, "A") },
			} {
				if err := hostilefile.Within(t, change); !errors.As(err, &se) {
					t.Errorf("%s = %v, want *CorruptError", name, err)
				}
			}
			if after := snapshot(p); after != before {
				t.Errorf("the file changed: %s -> %s", before, after)
			}
		})
	}
}

func TestABadLockFileIsCorruptWithItsOwnHint(t *testing.T) {
	for _, kind := range []string{"FIFO", "directory", "symlink to a FIFO"} {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "env")
			hostilefile.Plant(t, p+".lock", kind, 0, "A=1\n")
			err := hostilefile.Within(t, func() error { return Set(context.Background(), p, "K", "v") })
			checkHint(t, err, "move the lock file away (mv "+p+".lock ")
			if _, err := os.Stat(p); err == nil {
				t.Errorf("the env file was written without the lock")
			}
		})
	}
}

func TestHugeValuesAreRefusedNamingTheLimitAndNothingIsWritten(t *testing.T) {
	p := filepath.Join(t.TempDir(), "env")
	if err := Set(context.Background(), p, "KEEP", "me"); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(p)
	secret := strings.Repeat("s", 1<<20)
	err := Set(context.Background(), p, "TOKEN", secret)
	if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "131071") {
		t.Errorf("Set of a 1 MiB value = %v, want ErrInvalidValue naming 131071", err)
	}
	if err != nil && strings.Contains(err.Error(), "ssss") {
		t.Errorf("the error echoes the value")
	}
	// the limit is on KEY=VALUE, one execve string
	if err := Set(context.Background(), p, "K", strings.Repeat("v", MaxVarLen-2)); err != nil {
		t.Errorf("Set of a K=VALUE of exactly %d bytes: %v", MaxVarLen, err)
	}
	if err := Set(context.Background(), p, "K", strings.Repeat("v", MaxVarLen-1)); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("Set of a K=VALUE of %d bytes = %v, want ErrInvalidValue", MaxVarLen+1, err)
	}
	if err := Remove(context.Background(), p, "K"); err != nil {
		t.Fatal(err)
	}
	// the file as a whole: two 100 KiB values fit, a third does not
	v := strings.Repeat("v", 100<<10)
	for _, k := range []string{"A", "B"} {
		if err := Set(context.Background(), p, k, v); err != nil {
			t.Fatal(err)
		}
	}
	before, _ = os.ReadFile(p)
	if err := Set(context.Background(), p, "C", v); !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "262144") {
		t.Errorf("Set past 256 KiB = %v, want ErrInvalidValue naming 262144", err)
	}
	if after, _ := os.ReadFile(p); string(after) != string(before) {
		t.Errorf("a refused Set changed the file")
	}
}

func TestParseRefusesALineNoProgramCouldReceive(t *testing.T) {
	p := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(p, []byte("A=1\nBIG="+strings.Repeat("x", MaxVarLen)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Line != 2 || !strings.Contains(err.Error(), "131071") {
		t.Fatalf("Load = %v, want a *CorruptError on line 2 naming 131071", err)
	}
	if errors.Is(err, ErrInvalidValue) {
		t.Errorf("a corrupt file reads as an input error: %v", err)
	}
	checkHint(t, err, "fix line 2")
}

func TestParseErrorsNeverEchoTheLine(t *testing.T) {
	for _, doc := range []string{"sk-ant-secret\n", "sk-ant-secret==\n", "\x1b[2Jsk-ant-secret=x\n"} {
		p := filepath.Join(t.TempDir(), "env")
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if err == nil || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "\x1b") {
			t.Errorf("Load(%q) = %v, want an error that does not quote the line", doc, err)
		}
	}
}

// TestMaxVarLenIsWhatExecveAccepts backs the constant with the kernel: an
// environment entry of MaxVarLen bytes reaches a program, one more is E2BIG.
func TestMaxVarLenIsWhatExecveAccepts(t *testing.T) {
	for _, tc := range []struct {
		n  int
		ok bool
	}{{MaxVarLen, true}, {MaxVarLen + 1, false}} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = []string{"K=" + strings.Repeat("v", tc.n-2)}
		err := cmd.Run()
		if tc.ok && err != nil || !tc.ok && !errors.Is(err, syscall.E2BIG) {
			t.Errorf("exec with an entry of %d bytes: %v", tc.n, err)
		}
	}
}
