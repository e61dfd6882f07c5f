package observe

import (
	"errors"
	"github.com/agent-box/agent-box/internal/hostilefile"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

func TestABadObservationFileIsAnErrorAtOnce(t *testing.T) {
	for _, kind := range []string{"FIFO", "directory", "symlink to a FIFO", "oversized file"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "x.json")
			hostilefile.Plant(t, p, kind, MaxFileSize, "{}")
			var s Session
			err := hostilefile.Within(t, func() error { var err error; s, err = Load(dir, "x"); return err })
			if !userfile.Bad(err) || !strings.Contains(err.Error(), p) {
				t.Errorf("Load = %v, want a not-regular or too-large error naming the file", err)
			}
			if s.Name != "x" || s.Launches != 0 {
				t.Errorf("Load returned %+v with the error, want a zero Session named x", s)
			}
		})
	}
}

func TestLoadKeepsTheNameItWasAskedFor(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.json"), []byte(`{"name": "../../elsewhere", "launches": 3}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Load(dir, "x")
	if err != nil || s.Name != "x" || s.Launches != 3 {
		t.Errorf("Load = %+v, %v; want name x (a later Save must not write elsewhere)", s, err)
	}
	if _, err := Load(dir, "missing"); err != nil {
		t.Errorf("Load of a missing file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, "bad"); err == nil || errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of unparseable JSON = %v", err)
	}
}
