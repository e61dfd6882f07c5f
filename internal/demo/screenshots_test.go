package demo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/doclists"
)

// TestABrowserRunMustSaveEveryListedScreenshot: a screenshot missing,
// empty or left from an earlier run is named; all saved passes.
func TestABrowserRunMustSaveEveryListedScreenshot(t *testing.T) {
	dir := t.TempDir()
	shots := []doclists.Shot{{File: "a.png", What: "a"}, {File: "b.png", What: "b"}, {File: "c.png", What: "c"}}
	old := filepath.Join(dir, "c.png")
	if err := os.WriteFile(old, []byte("png"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(old, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	if err := os.WriteFile(filepath.Join(dir, "a.png"), []byte("png"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.png"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := savedEach(dir, shots, started)
	if err == nil || !strings.Contains(err.Error(), "without saving b.png, c.png") {
		t.Fatalf("savedEach = %v, want b.png (empty) and c.png (an earlier run's) named", err)
	}
	for _, f := range []string{"b.png", "c.png"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("png"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := savedEach(dir, shots, started); err != nil {
		t.Fatalf("savedEach with all saved: %v", err)
	}
}
