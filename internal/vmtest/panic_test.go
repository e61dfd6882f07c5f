package vmtest

import (
	"os"
	"path/filepath"
	"testing"
)

// What the harness boots again: only a console that ends in a kernel
// panic; the oops line says why.
func TestAnEarlyKernelPanicIsRecognisedAndNamed(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	panicked := write("panic.log", "[    3.174345] CPU: 0 UID: 0 PID: 0 Comm: swapper/0\n"+
		"[    3.179965] Oops: int3: 0000 [#2] PREEMPT SMP NOPTI\n"+
		"[    3.180575] Kernel panic - not syncing: Fatal exception in interrupt\n")
	fine := write("fine.log", "[    1.0] Run /init as init process\n[   40.1] agent-box-vm login:\n")
	if !earlyPanic(panicked) {
		t.Error("a console ending in a kernel panic is not recognised")
	}
	if earlyPanic(fine) || earlyPanic(filepath.Join(dir, "missing.log")) {
		t.Error("a console without a panic (or none at all) is taken for one")
	}
	if got, want := panicLine(panicked), "Oops: int3: 0000 [#2] PREEMPT SMP NOPTI"; got != want {
		t.Errorf("panicLine = %q, want %q", got, want)
	}
}
