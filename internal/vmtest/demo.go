package vmtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/golden"
	"github.com/agent-box/agent-box/internal/scenarios"
)

// DemoDomain is the web golden's domain (tests/golden/web/config.nix),
// which the demo serves on this host's loopback at DemoPort: browsers
// resolve *.localhost to loopback themselves.
const (
	DemoDomain     = "box.localhost:8443"
	DemoAppsDomain = "apps.localhost:8443" // its web.appsDomain
	DemoPort       = 8443
)

// DemoURL is the demo's box origin.
const DemoURL = "https://" + DemoDomain + "/"

// Demo boots the web golden configuration with host 127.0.0.1:8443
// forwarded to the guest's Caddy, calls ready once Caddy answers, and runs
// until ctx ends (then it powers the guest off hard: the disk is a fresh
// copy each run, nothing on it is kept). It returns nil when ctx was
// cancelled after ready, and an error for anything else.
func Demo(ctx context.Context, root string, log io.Writer, ready func(*Guest) error) error {
	// A busy port would make QEMU fail with a terse message after the
	// whole preparation; say it first.
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(DemoPort))
	if err != nil {
		return fmt.Errorf("the demo needs 127.0.0.1:%d: %w (is another demo running?)", DemoPort, err)
	}
	l.Close()
	work := filepath.Join(CacheDir(), "demo")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	g, err := Prepare(ctx, root, work, log)
	if err != nil {
		return err
	}
	fx, err := golden.Read(root, "web")
	if err != nil {
		return err
	}
	disk := filepath.Join(work, "web.img")
	if err := MakeDisk(ctx, g.Base.Root, disk, func(r string) error {
		_, err := Install(r, fx, filepath.Join(root, scenarios.Dir), Binaries{AgentBox: g.AgentBox, WebAssets: g.WebAssets}, g.Demo)
		return err
	}); err != nil {
		return err
	}
	defer os.Remove(disk)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	console := filepath.Join(work, "console.log")
	var readyErr error
	isReady := false
	fmt.Fprintf(log, "demo: booting the web golden configuration (%s; console: %s)\n", g.Accel, console)
	b := Boot{
		Disk: disk, Kernel: g.Base.Kernel, Initrd: g.Initrd, Phase: "demo", Crash: true,
		Accel: g.Accel, Deadline: 1000 * time.Hour, Console: console, Forward: []int{DemoPort}, CPUs: 2,
		OnLine: func(line string) {
			switch {
			case line == "# demo: ready":
				isReady = true
				go func() {
					if err := ready(g); err != nil {
						readyErr = err
						cancel(err)
					}
				}()
			case strings.HasPrefix(line, "# demo: "), strings.HasPrefix(line, "# guest: failed"):
				fmt.Fprintln(log, strings.TrimPrefix(line, "# "))
			}
		},
	}
	start := time.Now()
	_, _, err = b.Run(ctx)
	switch {
	case readyErr != nil:
		return readyErr
	case !isReady:
		return fmt.Errorf("the demo guest stopped before Caddy answered (after %s): %v\nconsole (last 40 lines of %s):\n%s",
			time.Since(start).Round(time.Second), err, console, ConsoleTail(console, 40))
	case errors.Is(err, context.Canceled):
		return nil
	case err == nil:
		return errors.New("the demo guest powered off")
	}
	return err
}
