package cli

import (
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAnAppsProgramGetsItsPortAndNoneOfSystemdsVariablesForTheLauncher(t *testing.T) {
	got := programEnv([]string{"PATH=/p", "NOTIFY_SOCKET=/run/n", "LISTEN_FDS=1", "LISTEN_PID=1", "LISTEN_FDNAMES=app", "PORT=1", "STATE_DIRECTORY=/var/lib/x", "A=b"})
	want := []string{"PATH=/p", "STATE_DIRECTORY=/var/lib/x", "A=b", "PORT=8080"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("programEnv (-want +got):\n%s", diff)
	}
}

func TestAppDirMakesTheMissingDirectoryPrivateAndRefusesAFileInTheWay(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	p := &Program{Stdout: io.Discard, Stderr: io.Discard}
	dir := filepath.Join(t.TempDir(), "apps", "records")
	if err := p.appDir([]string{me.Username, dir}); err != nil {
		t.Fatalf("app-dir: %v", err)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("app-dir made %v (%v), want a 0700 directory", fi, err)
	}
	if err := p.appDir([]string{me.Username, dir}); err != nil {
		t.Errorf("app-dir on an existing directory: %v", err)
	}
	file := filepath.Join(t.TempDir(), "records")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.appDir([]string{me.Username, file}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("app-dir on a file: %v, want an error saying it is not a directory", err)
	}
	if err := p.appDir([]string{me.Username, "relative"}); err == nil {
		t.Error("app-dir on a relative path: no error")
	}
}
