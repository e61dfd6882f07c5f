package cli

import (
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
