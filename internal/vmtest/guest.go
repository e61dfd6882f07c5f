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

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/scenarios"
)

// Guest is what every boot of the VM tier and of `make demo` starts from:
// the cached base image, the accelerator that works here, the agent-box
// binary built from this tree, and the demo logins and webhook secrets.
type Guest struct {
	Base  *Base
	Accel string
	// AgentBox is a static build of ./cmd/agent-box, with the runtime's
	// other programs (./cmd/agent-box-exec) beside it.
	AgentBox string
	// AgentBoxNext is a second build of it (another version string, so
	// other bytes): the "new release" of the lifecycle scenario's switch.
	AgentBoxNext string
	Initrd       string // the guest's initrd: ./internal/vmtest/guestinit and virtio_blk
	Demo         scenarios.Demo
	WebAssets    string // the workspace's browser libraries (EnsureWebAssets)

	work       string
	modelOnce  sync.Once
	model      string // a static build of ./internal/scriptedmodel/scripted-model
	modelError error
	cliMu      sync.Mutex
	clis       map[string]string // the cached agent CLIs, fetched at first use
}

// AgentCLIs returns the executables of the agent CLIs used (each fetched
// into the cache once) and the scripted model built for the guest.
func (g *Guest) AgentCLIs(ctx context.Context, root string, used []CLI) (clis map[string]string, model string, err error) {
	g.modelOnce.Do(func() {
		g.model = filepath.Join(g.work, "scripted-model")
		build := exec.CommandContext(ctx, "go", "build", "-o", g.model, "./internal/scriptedmodel/scripted-model")
		build.Dir = root
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			g.modelError = fmt.Errorf("building the scripted model for the guest: %v\n%s", err, out)
		}
	})
	if g.modelError != nil {
		return nil, "", g.modelError
	}
	g.cliMu.Lock()
	defer g.cliMu.Unlock()
	if g.clis == nil {
		g.clis = map[string]string{}
	}
	clis = map[string]string{}
	for _, c := range used {
		if g.clis[c.Command] == "" {
			bin, err := c.Ensure(ctx, os.Stderr)
			if err != nil {
				return nil, "", err
			}
			g.clis[c.Command] = bin
		}
		clis[c.Command] = g.clis[c.Command]
	}
	return clis, g.model, nil
}

// Warm fills the caches the tier and the demo take from the network or
// build once (CacheDir): the base image, the accelerator probe, the
// pinned agent CLIs and the web assets. It needs little CPU (downloads,
// unpacking), so `make test` runs it beside the unit tests; the tier then
// finds everything cached.
func Warm(ctx context.Context, root string, log io.Writer) error {
	reqs, err := scenarios.Requirements(root)
	if err != nil {
		return err
	}
	base, err := EnsureBase(ctx, reqs, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "vmtest: guest: %s; %s\n", strings.Join(base.Versions, "; "), Accel(ctx, base.Kernel, log))
	for _, c := range CLIs {
		bin, err := c.Ensure(ctx, log)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "vmtest: %s %s cached: %s\n", c.Command, c.Version, bin)
	}
	dir, err := EnsureWebAssets(ctx, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "vmtest: web assets cached: %s\n", dir)
	return nil
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
	agentBox := filepath.Join(work, "dev", "agent-box")
	next := filepath.Join(work, "next", "agent-box")
	for _, b := range []struct{ out, version string }{{agentBox, "dev"}, {next, "next"}} {
		build := exec.CommandContext(ctx, "go", "build", "-ldflags=-X main.version="+b.version, "-o", filepath.Dir(b.out)+"/", "./cmd/agent-box", "./cmd/"+contract.Programs.Spawn.Name)
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
	assets, err := EnsureWebAssets(ctx, log)
	if err != nil {
		return nil, err
	}
	return &Guest{Base: base, Accel: accel, AgentBox: agentBox, AgentBoxNext: next, Initrd: initrd, Demo: demo, WebAssets: assets, work: work}, nil
}
