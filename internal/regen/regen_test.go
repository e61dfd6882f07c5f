package regen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what Check said.
type recorder struct {
	testing.TB
	errors, logs []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Errorf(f string, a ...any) { r.errors = append(r.errors, f) }
func (r *recorder) Logf(f string, a ...any)   { r.logs = append(r.logs, f) }

// TestAStaleFileFailsWithTheHintOrIsRewritten: equal passes silently; a
// difference fails naming the regeneration command, or with update is
// written and logged.
func TestAStaleFileFailsWithTheHintOrIsRewritten(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.md"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	Check(r, root, "f.md", []byte("old\n"), false, "go test ./x -update")
	if len(r.errors)+len(r.logs) != 0 {
		t.Fatalf("a current file: %q %q", r.errors, r.logs)
	}
	Check(r, root, "f.md", []byte("new\n"), false, "go test ./x -update")
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "hint: %s") {
		t.Fatalf("a stale file: %q", r.errors)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "f.md")); string(data) != "old\n" {
		t.Fatal("a stale file was rewritten without update")
	}
	Check(r, root, "f.md", []byte("new\n"), true, "")
	if data, _ := os.ReadFile(filepath.Join(root, "f.md")); string(data) != "new\n" || len(r.logs) != 1 {
		t.Fatalf("with update: %q, logs %q", data, r.logs)
	}
}
