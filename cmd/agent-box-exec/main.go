// Command agent-box-exec is what tmux runs in every session's pane:
// `agent-box-exec exec-session NAME` prepares the session's agent and
// replaces itself with it (package spawn, Session). It is agent-box's
// command of the same name in a program of its own, built from the spawn
// path alone (no web server, no templates), so that a respawn after an
// agent's death costs as little as it can: this start is most of what a
// respawn adds to tmux's own (BenchmarkRespawn). Standard library only.
package main

import (
	"fmt"
	"os"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/spawn"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "exec-session" {
		fmt.Fprintf(os.Stderr, "usage: %s exec-session NAME (tmux runs it in a session's pane)\n", contract.Programs.Spawn.Name)
		os.Exit(contract.ExitCodes.Usage.Code)
	}
	err := spawn.Session(os.Args[2], os.Stderr)
	fmt.Fprintf(os.Stderr, "agent-box: %s\n", escape.Terminal(err.Error()))
	os.Exit(spawn.ExitCode(err))
}
