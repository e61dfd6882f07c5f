package spawn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
		Env: []string{"TOKEN=from file", "PATH=/bin", "AGENT_BOX_HOOKS_DIR=" + e.Home + "/.local/state/agent-box/hooks",
			"AGENT_BOX_AGENT_PID=" + strconv.Itoa(os.Getpid())},
		Agent: table["tool"],
	}
	if diff := cmp.Diff(want, plan); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
}

func TestPrepareGivesEverySessionTheHooksFolderWhateverTheEnvFileSays(t *testing.T) {
	e := setup(t)
	if err := envfile.Set(context.Background(), e.EnvFile(), "AGENT_BOX_HOOKS_DIR", "/tmp/elsewhere"); err != nil {
		t.Fatal(err)
	}
	table := agents.Table{"tool": {Command: "/bin/tool"}}
	plan, err := Prepare(e, table, "s", []string{"AGENT_BOX_HOOKS_DIR=/inherited", "PATH=/bin"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"AGENT_BOX_HOOKS_DIR=" + filepath.Join(e.Home, ".local/state/agent-box/hooks"), "PATH=/bin", "AGENT_BOX_AGENT_PID=" + strconv.Itoa(os.Getpid())}
	if diff := cmp.Diff(want, plan.Env); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}
}

func TestPrepareRejectsUnknownSessionAndAgent(t *testing.T) {
	e := setup(t)
	if _, err := Prepare(e, agents.Table{"tool": {Command: "/bin/tool"}}, "nope", nil); !errors.Is(err, registry.ErrUnknown) {
		t.Errorf("unknown session: %v", err)
	}
	if _, err := Prepare(e, agents.Table{}, "s", nil); !errors.Is(err, agents.ErrUnknownAgent) {
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

// TestExecNamesTheValueThatHitE2BIG runs Exec in a child process (a
// successful exec would replace the test binary): the child's error must
// name the oversized variable and the per-value limit.
func TestExecNamesTheValueThatHitE2BIG(t *testing.T) {
	if os.Getenv("SPAWN_E2BIG_CHILD") == "1" {
		big := strings.Repeat("x", MaxArgStrlen)
		plan := Plan{Path: "/bin/true", Argv: []string{"/bin/true", "small"}, Dir: os.TempDir(), Env: []string{"A=1", "HUGE=" + big, "B=2"}}
		fmt.Println(Exec(plan))
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestExecNamesTheValueThatHitE2BIG$")
	cmd.Env = append(os.Environ(), "SPAWN_E2BIG_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, want := range []string{
		"argument list too long",
		fmt.Sprintf("environment variable HUGE is over Linux's %d-byte limit per value (%d bytes)", MaxArgStrlen-1, len("HUGE=")+MaxArgStrlen),
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the error %q lacks %q", out, want)
		}
	}
}
