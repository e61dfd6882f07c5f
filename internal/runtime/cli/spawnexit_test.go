package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/envfile"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/spawn"
)

// TestTheSpawnProgramExitsAsAgentBoxDoes: agent-box-exec maps the errors
// of exec-session (spawn.ExitCode) to the exit codes agent-box's own
// exec-session gives them (exitCode), so that a pane dies with the same
// status whichever program ran in it.
func TestTheSpawnProgramExitsAsAgentBoxDoes(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("%w: %q", registry.ErrUnknown, "x"),
		fmt.Errorf("%w %q", registry.ErrInvalidName, "a/b"),
		fmt.Errorf("arg: %w", registry.ErrTooLarge),
		fmt.Errorf("%w %q", agents.ErrUnknownAgent, "nope"),
		&registry.CorruptError{Path: "/r", Err: errors.New("bad")},
		&envfile.CorruptError{Path: "/e", Err: errors.New("bad")},
		fmt.Errorf("key: %w", envfile.ErrInvalidKey),
		fmt.Errorf("home: %w", paths.ErrForeignHome),
		errors.New("exec \"/x\": no such file or directory"),
	} {
		if got, want := spawn.ExitCode(err), exitCode(err); got != want {
			t.Errorf("%v: agent-box-exec exits %d, agent-box %d", err, got, want)
		}
	}
}
