package paths

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFromEnvDerivesEveryPathFromHomeAndUser(t *testing.T) {
	env := map[string]string{"HOME": "/home/alice/", "USER": "alice"}
	e, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{
		"RuntimeDir":       e.RuntimeDir,
		"Registry":         e.Registry(),
		"EnvFile":          e.EnvFile(),
		"ObservationsDir":  e.ObservationsDir(),
		"HooksDir":         e.HooksDir(),
		"StateFile":        e.StateFile(),
		"TmuxSocket":       e.TmuxSocket(),
		"TmuxConf":         e.TmuxConf(),
		"TokenFile":        e.TokenFile(),
		"SupervisorSocket": e.SupervisorSocket(),
		"SupervisorLock":   e.SupervisorLock(),
	}
	want := map[string]string{
		"RuntimeDir":       "/run/agent-box/alice",
		"Registry":         "/home/alice/.config/agent-box/sessions.json",
		"EnvFile":          "/home/alice/.config/agent-box/env",
		"ObservationsDir":  "/home/alice/.local/state/agent-box/sessions",
		"HooksDir":         "/home/alice/.local/state/agent-box/hooks",
		"StateFile":        "/run/agent-box/alice/state.json",
		"TmuxSocket":       "/run/agent-box/alice/tmux.sock",
		"TmuxConf":         "/run/agent-box/alice/tmux.conf",
		"TokenFile":        "/run/agent-box/alice/tmux.token",
		"SupervisorSocket": "/run/agent-box/alice/supervisor.sock",
		"SupervisorLock":   "/run/agent-box/alice/supervisor.lock",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paths for HOME=/home/alice/ USER=alice (-want +got):\n%s", diff)
	}
}

func TestFromEnvRejectsRelativeRuntimeDirAndMissingHome(t *testing.T) {
	env := map[string]string{"HOME": "/home/alice", envRuntimeDir: "relative"}
	if _, err := FromEnv(func(k string) string { return env[k] }); err == nil {
		t.Errorf("relative %s accepted", envRuntimeDir)
	}
	if _, err := FromEnv(func(string) string { return "" }); err == nil {
		t.Errorf("missing HOME accepted")
	}
}
