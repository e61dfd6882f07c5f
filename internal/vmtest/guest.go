package vmtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agent-box/agent-box/internal/scenarios"
)

// Guest is what every boot of the VM tier and of `make demo` starts from:
// the cached base image, the accelerator that works here, the agent-box
// binary built from this tree, and the demo logins and webhook secrets.
type Guest struct {
	Base     *Base
	Accel    string
	AgentBox string // a static build of ./cmd/agent-box
	// AgentBoxNext is a second build of it (another version string, so
	// other bytes): the "new release" of the lifecycle scenario's switch.
	AgentBoxNext string
	Initrd       string // the guest's initrd: ./internal/vmtest/guestinit and virtio_blk
	Demo         scenarios.Demo

	work        string
	claudeOnce  sync.Once
	claude      string // the cached Claude Code binary, fetched at first use
	model       string // a static build of ./internal/scriptedmodel/scripted-model
	claudeError error
}

// Claude returns Claude Code's binary (fetched into the cache once) and
// the scripted model built for the guest, for a golden that runs Claude.
func (g *Guest) Claude(ctx context.Context, root string) (claude, model string, err error) {
	g.claudeOnce.Do(func() {
		if g.claude, g.claudeError = EnsureClaude(ctx, os.Stderr); g.claudeError != nil {
			return
		}
		g.model = filepath.Join(g.work, "scripted-model")
		build := exec.CommandContext(ctx, "go", "build", "-o", g.model, "./internal/scriptedmodel/scripted-model")
		build.Dir = root
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			g.claudeError = fmt.Errorf("building the scripted model for the guest: %v\n%s", err, out)
		}
	})
	return g.claude, g.model, g.claudeError
}

// Prepare builds (or finds) the base image for root's scenario
// requirements, picks the accelerator and builds agent-box and the
// guest's initrd into work.
func Prepare(ctx context.Context, root, work string, log io.Writer) (*Guest, error) {
	reqs, err := scenarios.Requirements(root)
	if err != nil {
		return nil, err
	}
	demo, err := scenarios.ReadDemo(root)
	if err != nil {
		return nil, err
	}
	base, err := EnsureBase(ctx, reqs, log)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "vmtest: guest: %s\n", strings.Join(base.Versions, "; "))
	accel := Accel(ctx, base.Kernel, log)
	agentBox := filepath.Join(work, "agent-box")
	next := filepath.Join(work, "agent-box-next")
	for _, b := range []struct{ out, version string }{{agentBox, "dev"}, {next, "next"}} {
		build := exec.CommandContext(ctx, "go", "build", "-ldflags=-X main.version="+b.version, "-o", b.out, "./cmd/agent-box")
		build.Dir = root
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building agent-box (%s) for the guest: %v\n%s", b.version, err, out)
		}
	}
	initrd, err := makeInitrd(ctx, root, work, base)
	if err != nil {
		return nil, err
	}
	return &Guest{Base: base, Accel: accel, AgentBox: agentBox, AgentBoxNext: next, Initrd: initrd, Demo: demo, work: work}, nil
}
