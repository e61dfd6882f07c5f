package vmtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

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
	return &Guest{Base: base, Accel: accel, AgentBox: agentBox, AgentBoxNext: next, Initrd: initrd, Demo: demo}, nil
}
