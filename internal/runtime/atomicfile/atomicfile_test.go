package atomicfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestUpdateWritesWithModeAndLeavesNoTempFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	p := filepath.Join(dir, "f")
	err := Update(context.Background(), p, 0o600, 1<<20, func(old []byte, exists bool) ([]byte, error) {
		if exists || len(old) != 0 {
			t.Errorf("new file: exists=%v old=%q", exists, old)
		}
		return []byte("one"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = Update(context.Background(), p, 0o600, 1<<20, func(old []byte, exists bool) ([]byte, error) {
		if !exists || string(old) != "one" {
			t.Errorf("second update saw exists=%v old=%q", exists, old)
		}
		return nil, ErrNoChange
	})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := Update(context.Background(), p, 0o600, 1<<20, func([]byte, bool) ([]byte, error) { return []byte("x"), boom }); !errors.Is(err, boom) {
		t.Errorf("callback error not returned: %v", err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != "one" {
		t.Errorf("content %q, want one", got)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 2 { // f and f.lock
		t.Errorf("directory holds %v, want only f and f.lock", names)
	}
}

func TestTryLockFailsWhileLockIsHeld(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	unlock, ok, err := TryLock(p)
	if err != nil || !ok {
		t.Fatalf("first TryLock: %v %v", ok, err)
	}
	if _, ok, err := TryLock(p); err != nil || ok {
		t.Errorf("second TryLock while held: ok=%v err=%v", ok, err)
	}
	unlock()
	if u, ok, err := TryLock(p); err != nil || !ok {
		t.Errorf("TryLock after unlock: %v %v", ok, err)
	} else {
		u()
	}
}
