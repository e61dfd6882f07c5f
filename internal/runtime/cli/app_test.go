package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/runtime/appctl"
)

// TestAppExitCodes: `agent-box app` with a systemd that knows alice's app
// records only: each mistake gets its own exit code and says why.
func TestAppExitCodes(t *testing.T) {
	old := appCtl
	defer func() { appCtl = old }()
	appCtl = func() (*appctl.Ctl, error) {
		return &appctl.Ctl{User: "alice", Run: func(_ context.Context, name string, args ...string) ([]byte, error) {
			if name == "systemctl" && args[0] == "show" && args[len(args)-1] == "agent-box-app@records--alice.service" {
				return []byte("LoadState=loaded\nActiveState=active\nSubState=running\nStatusText=running\nNRestarts=0\n"), nil
			}
			if name == "systemctl" && args[0] == "show" {
				return []byte("LoadState=not-found\n"), nil
			}
			return nil, nil
		}}, nil
	}
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"app", "restart", "records"}, exitOK, ""},
		{[]string{"app", "restart", "records--bob"}, exitInvalidName, "manages the apps of alice"},
		{[]string{"app", "status", "nothere"}, exitUnknown, `alice has no app "nothere"`},
		{[]string{"app", "logs", "-n", "0", "records"}, exitUsage, "positive number"},
		{[]string{"app", "kill", "records"}, exitUsage, `unknown subcommand "kill"`},
		{[]string{"app"}, exitUsage, "usage: app ls"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			p := &Program{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader("")}
			if code := p.Main(context.Background(), tc.args); code != tc.code || !strings.Contains(errb.String(), tc.says) {
				t.Errorf("exit %d, stderr %q; want %d saying %q", code, errb.String(), tc.code, tc.says)
			}
		})
	}
}
