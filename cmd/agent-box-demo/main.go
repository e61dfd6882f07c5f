// Command agent-box-demo boots the web golden configuration in QEMU with
// its web surface on this machine's loopback, for someone without NixOS:
// `make demo` runs it until Ctrl-C; `make demo-check` (-check) checks it
// and exits (internal/demo). With -warm it only fills the caches the
// demo and the VM tier need (vmtest.Warm): `make test` runs that beside
// the unit tests.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agent-box/agent-box/internal/demo"
	"github.com/agent-box/agent-box/internal/vmtest"
)

func main() {
	check := flag.Bool("check", false, "log in, use a terminal (WebSocket client and headless chromium), then stop")
	warm := flag.Bool("warm", false, "fill the caches of the demo and the VM tier (the guest image, the agent CLIs, the web assets), then stop")
	root := flag.String("root", ".", "the agent-box source tree")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *warm {
		if err := vmtest.Warm(ctx, *root, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "agent-box-demo: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := demo.Run(ctx, *root, *check, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "agent-box-demo: %v\n", err)
		os.Exit(1)
	}
	if *check {
		fmt.Println("demo-check: ok")
	}
}
