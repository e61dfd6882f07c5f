// Package regen is the one check of a generated file in tests: the file must hold its rendering, and -update rewrites it.
package regen

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agent-box/agent-box/internal/textdiff"
)

// Check compares the file rel (relative to root) with want. When they
// differ it rewrites the file if update is set (and logs so: the diff is
// for review), else fails t with a readable diff and hint, the command
// that regenerates it. A missing file is written only with update.
func Check(t testing.TB, root, rel string, want []byte, update bool, hint string) {
	t.Helper()
	path := filepath.Join(root, rel)
	old, err := os.ReadFile(path)
	if err != nil && !(update && errors.Is(err, os.ErrNotExist)) {
		t.Fatal(err)
	}
	if string(old) == string(want) {
		return
	}
	if update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("updated %s: review the diff", rel)
		return
	}
	t.Errorf("%s is out of date (-%s +generated):\n%s\nhint: %s", rel, rel, textdiff.Explain(rel, "generated", old, want), hint)
}
