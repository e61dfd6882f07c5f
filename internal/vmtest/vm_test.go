//go:build vm

package vmtest

import (
	"context"
	"fmt"
	"github.com/agent-box/agent-box/internal/golden"
	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/scenarios"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScenarios boots one golden configuration per phase of
// tests/scenarios/phases under real systemd and turns each TAP line of the
// phase into a subtest. Boot times and the scenarios' measurements
// ("# measure: ...") are printed.
func TestScenarios(t *testing.T) {
	ctx := context.Background()
	root := module.Root()
	start := time.Now()
	work := t.TempDir()
	g, err := Prepare(ctx, root, work, os.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	base, accel := g.Base, g.Accel
	// Console logs outlive the test: they are what explains a failed boot.
	logs := filepath.Join(CacheDir(), "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	phases, err := scenarios.Phases(root)
	if err != nil {
		t.Fatal(err)
	}
	// AGENT_BOX_VM_PHASES=a,b runs only those phases (while working on them).
	only := map[string]bool{}
	for _, p := range strings.Split(os.Getenv("AGENT_BOX_VM_PHASES"), ",") {
		if p != "" {
			only[p] = true
		}
	}
	disk := ""
	reuse := false
	// Webhook ids a crash phase's sender printed as acknowledged, to be
	// found among those the next phase (same disk) prints as stored.
	var acked []string
	for _, ph := range phases {
		ph := ph
		if len(only) > 0 && !only[ph.Name] {
			continue
		}
		ok := t.Run(ph.Name, func(t *testing.T) {
			if !reuse {
				disk = filepath.Join(work, ph.Config+"-"+ph.Name+".img")
				fx, err := golden.Read(root, ph.Config)
				if err != nil {
					t.Fatal(err)
				}
				err = MakeDisk(ctx, base.Root, disk, func(r string) error {
					_, err := Install(r, fx, filepath.Join(root, scenarios.Dir), g.AgentBox, g.Demo)
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			console := filepath.Join(logs, ph.Name+".console.log")
			tapLog, err := os.Create(filepath.Join(logs, ph.Name+".tap"))
			if err != nil {
				t.Fatal(err)
			}
			defer tapLog.Close()
			failed := "(not reported)"
			var stored []string
			b := Boot{
				Disk: disk, Kernel: base.Kernel, Initrd: base.Initrd, Phase: ph.Name, Crash: ph.Crash,
				Accel: accel, Deadline: 10 * time.Minute, Console: console,
				OnLine: func(line string) {
					fmt.Fprintln(tapLog, line)
					if f, ok := strings.CutPrefix(line, "# guest: failed units at boot: "); ok {
						failed = f
					}
					if id, ok := strings.CutPrefix(line, "# acked: "); ok && ph.Crash {
						acked = append(acked, id)
					}
					if id, ok := strings.CutPrefix(line, "# stored: "); ok {
						stored = append(stored, id)
					}
					if strings.HasPrefix(line, "# measure:") || strings.HasPrefix(line, "# guest:") {
						fmt.Printf("vmtest: %s %s\n", ph.Name, strings.TrimPrefix(line, "# "))
					}
				},
			}
			tap, took, err := b.Run(ctx)
			fmt.Printf("vmtest: boot %-16s config %-10s %s %6.1fs\n", ph.Name, ph.Config, accel, took.Seconds())
			if tap != nil {
				for _, tt := range tap.Tests {
					tt := tt
					t.Run(tt.Desc, func(t *testing.T) {
						if !tt.OK {
							t.Errorf("not ok %d - %s\n%s", tt.Num, tt.Desc, strings.Join(tt.Diags, "\n"))
						}
					})
				}
			}
			if len(stored) > 0 || reuse && len(acked) > 0 {
				t.Run("every webhook delivery acknowledged before the power cut is stored", func(t *testing.T) {
					fmt.Printf("vmtest: %s measure: webhook deliveries acknowledged before the power cut %d, stored after it %d\n", ph.Name, len(acked), len(stored))
					if len(acked) == 0 {
						t.Fatal("the phase before the power cut printed no acknowledged id: nothing was proven")
					}
					have := map[string]bool{}
					for _, id := range stored {
						have[id] = true
					}
					var lost []string
					for _, id := range acked {
						if !have[id] {
							lost = append(lost, id)
						}
					}
					if len(lost) > 0 {
						t.Errorf("%d of %d acknowledged deliveries are not stored: %s", len(lost), len(acked), strings.Join(lost, " "))
					}
				})
				acked = nil
			}
			if failed != "none" {
				t.Errorf("units failed while the guest booted: %s\nconsole: %s", failed, console)
			}
			if err != nil {
				t.Errorf("%v\nconsole (last 60 lines of %s):\n%s", err, console, ConsoleTail(console, 60))
			}
		})
		reuse = ph.Crash
		if !ok && ph.Crash {
			reuse = false
		}
	}
	fmt.Printf("vmtest: tier took %.0fs\n", time.Since(start).Seconds())
}
