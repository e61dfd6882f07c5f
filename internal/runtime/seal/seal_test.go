package seal

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The test binary re-runs itself as a sealed shell (SEAL_TEST_EXEC=program):
// its first exec is the seal's own, every later one must fail.
func TestMain(m *testing.M) {
	if p := os.Getenv("SEAL_TEST_EXEC"); p != "" {
		err := Exec(p, []string{filepath.Base(p), "-c", os.Getenv("SEAL_TEST_SCRIPT")}, os.Environ())
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(99)
	}
	os.Exit(m.Run())
}

func sealed(t *testing.T, script string) string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "SEAL_TEST_EXEC="+sh, "SEAL_TEST_SCRIPT="+script)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

func TestTheSealedProgramRunsAndCanStartNoOther(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	// sh's own exec fails (and ends the shell: nothing after it runs)
	out := sealed(t, "echo started; touch "+marker+" && echo touched || echo no-exec; exec true; echo after-exec")
	if !strings.Contains(out, "started") {
		t.Fatalf("the sealed program did not run: %q", out)
	}
	if !strings.Contains(out, "no-exec") || strings.Contains(out, "touched") || strings.Contains(out, "after-exec") ||
		strings.Count(out, "Operation not permitted") != 2 {
		t.Errorf("a program started from the sealed one: %q", out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("touch ran: %s exists", marker)
	}
}

// TestWithoutTheSealTheSameScriptRunsPrograms is the control: the script
// above can start programs when nothing seals it, so the test above can
// fail.
func TestWithoutTheSealTheSameScriptRunsPrograms(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	out, err := exec.Command("sh", "-c", "touch "+marker+" && echo touched").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "touched") {
		t.Fatalf("%v %q", err, out)
	}
}

// TestEveryJumpStaysInTheFilter: a BPF jump past the end is a filter the
// kernel refuses; every path ends in a return.
func TestEveryJumpStaysInTheFilter(t *testing.T) {
	a, ok := current()
	if !ok {
		t.Fatal("no filter for this architecture (the flake builds amd64 and arm64 only)")
	}
	f := filter(a)
	for i, ins := range f {
		if ins.code == bpfJeqK || ins.code == bpfJgeK {
			if i+1+int(ins.jt) >= len(f) || i+1+int(ins.jf) >= len(f) {
				t.Errorf("instruction %d jumps past the end", i)
			}
		}
	}
	if f[len(f)-1].code != bpfRetK {
		t.Error("the filter does not end in a return")
	}
}
