// Command agent-box-demo boots the web golden configuration in QEMU with
// its web surface on this machine's loopback, for someone without NixOS:
// `make demo` runs it until Ctrl-C; `make demo-check` (-check) checks it
// and exits (internal/demo).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agent-box/agent-box/internal/demo"
)

func main() {
	check := flag.Bool("check", false, "log in, use a terminal (WebSocket client and headless chromium), then stop")
	root := flag.String("root", ".", "the agent-box source tree")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := demo.Run(ctx, *root, *check, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "agent-box-demo: %v\n", err)
		os.Exit(1)
	}
	if *check {
		fmt.Println("demo-check: ok")
	}
}
