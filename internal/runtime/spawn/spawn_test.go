package spawn

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/envfile"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/google/go-cmp/cmp"
)

func setup(t *testing.T) paths.Env {
	t.Helper()
	home := t.TempDir()
	e, err := paths.FromEnv(func(k string) string {
		return map[string]string{"HOME": home, "AGENT_BOX_RUNTIME_DIR": filepath.Join(home, "run")}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	err = registry.Update(context.Background(), e.Registry(), func(r *registry.Registry) error {
		return r.Add(registry.Session{Name: "s", Agent: "tool", Args: []string{"two words", "$(x)"}, Cwd: "/tmp"})
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestPrepareAppendsSessionArgsAndLetsEnvFileWin(t *testing.T) {
	e := setup(t)
	if err := envfile.Set(context.Background(), e.EnvFile(), "TOKEN", "from file"); err != nil {
		t.Fatal(err)
	}
	table := agents.Table{"tool": {Command: "/bin/tool", Args: []string{"--fixed"}}}
	plan, err := Prepare(e, table, "s", []string{"TOKEN=from unit", "PATH=/bin"})
	if err != nil {
		t.Fatal(err)
	}
	want := Plan{
		Path: "/bin/tool",
		Argv: []string{"/bin/tool", "--fixed", "two words", "$(x)"},
		Dir:  "/tmp",
		Env:  []string{"TOKEN=from file", "PATH=/bin"},
	}
	if diff := cmp.Diff(want, plan); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
}

func TestPrepareRejectsUnknownSessionAndAgent(t *testing.T) {
	e := setup(t)
	if _, err := Prepare(e, agents.Table{"tool": {Command: "/bin/tool"}}, "nope", nil); !errors.Is(err, registry.ErrUnknown) {
		t.Errorf("unknown session: %v", err)
	}
	if _, err := Prepare(e, agents.Table{}, "s", nil); !errors.Is(err, ErrUnknownAgent) {
		t.Errorf("unknown agent: %v", err)
	}
	if _, err := Prepare(e, agents.Table{}, "../x", nil); !errors.Is(err, registry.ErrInvalidName) {
		t.Errorf("invalid name: %v", err)
	}
}

func TestExecFailsCleanlyForMissingDirectory(t *testing.T) {
	err := Exec(Plan{Path: "/bin/true", Argv: []string{"/bin/true"}, Dir: filepath.Join(t.TempDir(), "missing")})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Exec into a missing dir: %v", err)
	}
}
