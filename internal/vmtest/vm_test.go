//go:build vm

package vmtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/golden"
	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/scenarios"
)

// phaseRun is what one boot left for the report: the phases boot in
// parallel, and each is reported whole, in file order, once it is done.
type phaseRun struct {
	out     bytes.Buffer // the harness's lines about this phase
	tap     *TAP
	took    time.Duration
	err     error  // the disk or the boot failed
	failed  string // units that failed while the guest booted
	console string
	// acked: ids the crash phase before printed as acknowledged;
	// stored: ids this phase printed as stored.
	acked, stored []string
	chained       bool // booted the disk of the crash phase before
	// notBooted says why the phase was not booted (its crash phase
	// failed: booting a fresh disk instead would fail every check of what
	// survives a power cut, burying the one failure that counts).
	notBooted string
}

// ok is whether the phase passed (a crash phase that did not leaves no
// disk worth booting again).
func (r *phaseRun) ok() bool {
	if r.err != nil || r.failed != "none" || r.tap == nil {
		return false
	}
	for _, tt := range r.tap.Tests {
		if !tt.OK {
			return false
		}
	}
	return true
}

// TestScenarios boots one golden configuration per phase of
// tests/scenarios/phases under real systemd, AGENT_BOX_VM_JOBS guests at
// once (2 by default; a crash phase and the phase after it share a disk
// and run in order), and turns each TAP line of a phase into a subtest.
// Boot times, the scenarios' measurements ("# measure: ...") and the
// budget are printed.
func TestScenarios(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := module.Root()
	start := time.Now()
	work := t.TempDir()
	jobs, err := Jobs()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Prepare(ctx, root, work, os.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("vmtest: the image, agent-box and the initrd ready after %.1fs\n", time.Since(start).Seconds())
	// Console logs outlive the test: they are what explains a failed boot.
	logs := filepath.Join(CacheDir(), "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	all, err := scenarios.Phases(root)
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
	var phases []scenarios.Phase
	for _, ph := range all {
		if len(only) == 0 || only[ph.Name] {
			phases = append(phases, ph)
		}
	}
	if len(phases) == 0 {
		t.Fatalf("AGENT_BOX_VM_PHASES=%q names no phase of tests/scenarios/phases", os.Getenv("AGENT_BOX_VM_PHASES"))
	}
	runs := map[string]*phaseRun{}
	done := map[string]chan struct{}{}
	for _, ph := range phases {
		runs[ph.Name], done[ph.Name] = &phaseRun{}, make(chan struct{})
	}
	order := Order(Chains(phases), LastTimes())
	cpus := max(1, runtime.NumCPU()/jobs)
	fmt.Printf("vmtest: %d guests at once, %d vCPUs each, %s; chains longest first: %s\n", jobs, cpus, g.Accel, strings.Join(names(order), ", "))

	// The boots: each worker takes the next chain. The first boot also
	// prints where its time went (systemd-analyze).
	tier := &tierRun{root: root, g: g, work: work, logs: logs, analyze: order[0][0].Name, runs: runs, done: done}
	chains := make(chan Chain)
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range chains {
				bootChain(ctx, tier, c, cpus)
			}
		}()
	}
	go func() {
		for _, c := range order {
			chains <- c
		}
		close(chains)
	}()

	// The report, in file order.
	took := map[string]float64{}
	var failed []string
	for _, ph := range phases {
		<-done[ph.Name]
		r := runs[ph.Name]
		if r.notBooted == "" {
			took[ph.Name] = r.took.Seconds()
		}
		t.Run(ph.Name, func(t *testing.T) { failed = append(failed, report(t, ph, r)...) })
	}
	wg.Wait()
	if err := SaveTimes(took); err != nil {
		t.Logf("the phase times for the next run's order: %v", err)
	}
	summary(phases, runs, time.Since(start))
	// Last, so that a log cut in its middle still shows what failed.
	for _, f := range failed {
		fmt.Printf("vmtest: FAILED %s\n", f)
	}
}

// tierRun is what every boot of the run shares.
type tierRun struct {
	root, work, logs string
	g                *Guest
	analyze          string // the phase whose boot is accounted for
	runs             map[string]*phaseRun
	done             map[string]chan struct{}
}

// bootChain makes the chain's disk and boots its phases in order. The
// phase after a crash phase that failed is not booted: what it checks
// (what survived the power cut) was not set up.
func bootChain(ctx context.Context, tr *tierRun, c Chain, cpus int) {
	root, g, work, runs, done := tr.root, tr.g, tr.work, tr.runs, tr.done
	reuse := false
	var acked []string // ids the crash phase before printed as acknowledged
	for i, ph := range c {
		r := runs[ph.Name]
		if i > 0 && c[i-1].Crash && !reuse {
			r.notBooted = fmt.Sprintf("not booted: %s, the phase before its power cut, failed (its failures above are the ones to fix)", c[i-1].Name)
			close(done[ph.Name])
			continue
		}
		disk := filepath.Join(work, ph.Config+"-"+c[0].Name+".img")
		r.chained = reuse
		if reuse {
			r.acked = acked
		} else {
			r.err = makeDisk(ctx, root, g, disk, ph)
		}
		acked = nil
		if r.err == nil {
			acked = bootPhase(ctx, tr, disk, ph, cpus, r)
		}
		reuse = ph.Crash && r.ok()
		close(done[ph.Name])
	}
}

func makeDisk(ctx context.Context, root string, g *Guest, disk string, ph scenarios.Phase) error {
	fx, err := golden.Read(root, ph.Config)
	if err != nil {
		return err
	}
	bins := Binaries{AgentBox: g.AgentBox, Next: g.AgentBoxNext, WebAssets: g.WebAssets}
	if used := UsedCLIs(fx); len(used) > 0 {
		if bins.CLIs, bins.Model, err = g.AgentCLIs(ctx, root, used); err != nil {
			return err
		}
	}
	return MakeDisk(ctx, g.Base.Root, disk, func(r string) error {
		_, err := Install(r, fx, filepath.Join(root, scenarios.Dir), bins, g.Demo)
		return err
	})
}

// bootPhase boots one phase into r and returns the webhook ids it printed
// as acknowledged (a crash phase's, for the phase after it).
func bootPhase(ctx context.Context, tr *tierRun, disk string, ph scenarios.Phase, cpus int, r *phaseRun) (acked []string) {
	g, logs, analyze := tr.g, tr.logs, ph.Name == tr.analyze
	r.console = filepath.Join(logs, ph.Name+".console.log")
	r.failed = "(not reported)"
	tapLog, err := os.Create(filepath.Join(logs, ph.Name+".tap"))
	if err != nil {
		r.err = err
		return nil
	}
	defer tapLog.Close()
	started := time.Now()
	// The deadline of one boot, a guard against a hung guest, not a speed
	// check: claude.pre (Claude Code and Codex started about fifteen times
	// under TCG) took 512 to 665 s warm, passed 600 s in a cold run from a
	// fresh clone, and was at its 65th of 68 checks after 874 s in another
	// (2026-12-03: every check about a third slower than warm, from the
	// first).
	b := Boot{
		Disk: disk, Kernel: g.Base.Kernel, Initrd: g.Initrd, Phase: ph.Name, Crash: ph.Crash,
		Accel: g.Accel, Deadline: 25 * time.Minute, Console: r.console, Log: &r.out, Analyze: analyze,
		CPUs: cpus,
		OnLine: func(line string) {
			// seconds since QEMU started: where a phase's time goes
			fmt.Fprintf(tapLog, "%6.1f %s\n", time.Since(started).Seconds(), line)
			if f, ok := strings.CutPrefix(line, "# guest: failed units at boot: "); ok {
				r.failed = f
			}
			if id, ok := strings.CutPrefix(line, "# acked: "); ok && ph.Crash {
				acked = append(acked, id)
			}
			if id, ok := strings.CutPrefix(line, "# stored: "); ok {
				r.stored = append(r.stored, id)
			}
			if strings.HasPrefix(line, "# measure:") || strings.HasPrefix(line, "# guest:") || strings.HasPrefix(line, "# boot:") {
				fmt.Fprintf(&r.out, "vmtest: %s %s\n", ph.Name, strings.TrimPrefix(line, "# "))
			}
		},
	}
	r.tap, r.took, r.err = b.Run(ctx)
	fmt.Fprintf(&r.out, "vmtest: boot %-16s config %-10s %s %6.1fs\n", ph.Name, ph.Config, g.Accel, r.took.Seconds())
	return acked
}

// report turns one finished phase into subtests and returns a line for
// each failure (the run prints them again at its end).
func report(t *testing.T, ph scenarios.Phase, r *phaseRun) (failed []string) {
	os.Stdout.Write(r.out.Bytes())
	if r.tap != nil {
		for _, tt := range r.tap.Tests {
			t.Run(tt.Desc, func(t *testing.T) {
				if !tt.OK {
					t.Errorf("not ok %d - %s\n%s", tt.Num, tt.Desc, strings.Join(tt.Diags, "\n"))
					failed = append(failed, fmt.Sprintf("%s: not ok %d - %s%s", ph.Name, tt.Num, tt.Desc, firstDiags(tt.Diags, 6)))
				}
			})
		}
	}
	if len(r.stored) > 0 || r.chained && len(r.acked) > 0 {
		t.Run("every webhook delivery acknowledged before the power cut is stored", func(t *testing.T) {
			fmt.Printf("vmtest: %s measure: webhook deliveries acknowledged before the power cut %d, stored after it %d\n", ph.Name, len(r.acked), len(r.stored))
			if len(r.acked) == 0 {
				failed = append(failed, ph.Name+": the phase before the power cut printed no acknowledged id")
				t.Fatal("the phase before the power cut printed no acknowledged id: nothing was proven")
			}
			have := map[string]bool{}
			for _, id := range r.stored {
				have[id] = true
			}
			var lost []string
			for _, id := range r.acked {
				if !have[id] {
					lost = append(lost, id)
				}
			}
			if len(lost) > 0 {
				t.Errorf("%d of %d acknowledged deliveries are not stored: %s", len(lost), len(r.acked), strings.Join(lost, " "))
				failed = append(failed, fmt.Sprintf("%s: %d of %d acknowledged deliveries are not stored", ph.Name, len(lost), len(r.acked)))
			}
		})
	}
	if r.notBooted != "" {
		t.Error(r.notBooted)
		failed = append(failed, ph.Name+": "+r.notBooted)
	} else if r.err != nil {
		t.Errorf("%v\nconsole (last 60 lines of %s):\n%s", r.err, r.console, ConsoleTail(r.console, 60))
		failed = append(failed, fmt.Sprintf("%s: %v; console (last 15 lines):\n%s", ph.Name, r.err, ConsoleTail(r.console, 15)))
	} else if r.failed != "none" {
		t.Errorf("units failed while the guest booted: %s\nconsole: %s", r.failed, r.console)
		failed = append(failed, fmt.Sprintf("%s: units failed while the guest booted: %s", ph.Name, r.failed))
	}
	return failed
}

// firstDiags is at most n of a check's diagnostic lines, indented.
func firstDiags(diags []string, n int) string {
	var b strings.Builder
	for i, d := range diags {
		if i == n {
			fmt.Fprintf(&b, "\n    … %d more lines", len(diags)-n)
			break
		}
		b.WriteString("\n    " + d)
	}
	return b.String()
}

// summary prints each phase's time and the tier's against its budget.
func summary(phases []scenarios.Phase, runs map[string]*phaseRun, total time.Duration) {
	sum := 0.0
	for _, ph := range phases {
		s := runs[ph.Name].took.Seconds()
		sum += s
		checks := 0
		if tap := runs[ph.Name].tap; tap != nil {
			checks = len(tap.Tests)
		}
		fmt.Printf("vmtest: budget %-16s %6.1fs %4d checks\n", ph.Name, s, checks)
	}
	over := ""
	if total > TierBudget {
		over = fmt.Sprintf("  OVER the budget of %.0fs", TierBudget.Seconds())
	}
	fmt.Printf("vmtest: tier took %.0fs (boots %.0fs in all; the image and the disks included in the tier)%s\n", total.Seconds(), sum, over)
}
