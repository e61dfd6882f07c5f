// Command agent-box is the runtime of agent-box: the per-user supervisor
// (`agent-box supervise`), the session and secrets CLI, and the program tmux
// runs in every session pane (`agent-box exec-session`). See
// docs/runtime-contract.md.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agent-box/agent-box/internal/runtime/cli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	p := &cli.Program{Version: version, Stdin: stdin, Stdout: stdout, Stderr: stderr}
	return p.Main(ctx, args)
}
