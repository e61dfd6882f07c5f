package vmtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/agent-box/agent-box/internal/golden"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/scenarios"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Binaries are the agent-box builds a guest gets: the one the golden
// environments hold, and (if not "") a second one, which each environment's
// twin at NextEnv holds (the lifecycle scenario switches to it).
type Binaries struct {
	AgentBox, Next string
	// CLIs (by command) and Model: the agent CLIs and the scripted
	// model, for a golden that runs agent CLIs (installAgents).
	CLIs  map[string]string
	Model string
	// WebAssets: the cached browser libraries (EnsureWebAssets), for a
	// golden whose web daemons name them.
	WebAssets string
}

// NextEnv is the twin of the zero-hash store environment env: the same
// name under the hash of ones (tests/scenarios/lifecycle.sh names it so).
func NextEnv(env string) string {
	return strings.Replace(env, "/nix/store/"+strings.Repeat("0", 32)+"-", "/nix/store/"+strings.Repeat("1", 32)+"-", 1)
}

// Install lays a golden configuration into a guest root, UNCHANGED: its
// files (unit files, drop-ins, seed and agents JSON at their zero-hash store
// paths) and links, plus what the golden bytes refer to: the zero-hash
// per-user environments (bin/ linking to the guest's programs and holding
// the agent-box binary built on the host), the users and their homes. Then
// the scenario scripts and the oneshot unit that runs a phase. A web golden
// also gets what the host adds (installWeb).
func Install(root string, fx golden.Fixture, scenariosDir string, bins Binaries, demo scenarios.Demo) (users []string, err error) {
	agentBox := bins.AgentBox
	envDirs := map[string]bool{}
	envRe := regexp.MustCompile(`(?m)^ExecStart=(/nix/store/[^/\s]+)/bin/agent-box `)
	// an app's PATH: its packages' environment
	pathRe := regexp.MustCompile(`(?m)^Environment="PATH=(/nix/store/[^/"\s]+)/bin"$`)
	pathDirs := map[string]bool{}
	instanceRe := regexp.MustCompile(`^etc/systemd/system/agent-box@([^/]+)\.service\.d/`)
	for rel, data := range fx.Files {
		if m := instanceRe.FindStringSubmatch(rel); m != nil {
			users = append(users, m[1])
		}
		for _, m := range envRe.FindAllStringSubmatch(data, -1) {
			envDirs[m[1]] = true
		}
		for _, m := range pathRe.FindAllStringSubmatch(data, -1) {
			pathDirs[m[1]] = true
		}
		if err := writeFile(filepath.Join(root, filepath.FromSlash(rel)), []byte(data), 0o644); err != nil {
			return nil, fmt.Errorf("installing golden files: %w", err)
		}
	}
	sort.Strings(users)
	for name, target := range fx.Links {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		os.Remove(p)
		if err := os.Symlink(target, p); err != nil {
			return nil, err
		}
	}
	// The environments: every program of the guest, and the runtime.
	guestBin, err := os.ReadDir(filepath.Join(root, "usr/bin"))
	if err != nil {
		return nil, err
	}
	for env := range envDirs {
		bin := filepath.Join(root, env, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			return nil, err
		}
		for _, e := range guestBin {
			if err := os.Symlink("/usr/bin/"+e.Name(), filepath.Join(bin, e.Name())); err != nil {
				return nil, err
			}
		}
		if err := installRuntime(agentBox, bin); err != nil {
			return nil, err
		}
	}
	// The apps' environments: every program of the guest (the golden's
	// packages are stand-ins), without agent-box.
	for env := range pathDirs {
		bin := filepath.Join(root, env, "bin")
		if envDirs[env] {
			continue
		}
		if err := os.MkdirAll(bin, 0o755); err != nil {
			return nil, err
		}
		for _, e := range guestBin {
			if err := os.Symlink("/usr/bin/"+e.Name(), filepath.Join(bin, e.Name())); err != nil {
				return nil, err
			}
		}
	}
	// The lifecycle scenario's second environment per user: the same
	// programs at another store path, holding the second build of
	// agent-box (what a rebuild with a new agent-box installs).
	if bins.Next != "" {
		for env := range envDirs {
			bin := filepath.Join(root, NextEnv(env), "bin")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				return nil, err
			}
			for _, e := range guestBin {
				if err := os.Symlink("/usr/bin/"+e.Name(), filepath.Join(bin, e.Name())); err != nil {
					return nil, err
				}
			}
			if err := installRuntime(bins.Next, bin); err != nil {
				return nil, err
			}
		}
	}
	if err := installAgents(root, fx, bins, envDirs, users); err != nil {
		return nil, err
	}
	if err := installWebAssets(root, fx, bins.WebAssets); err != nil {
		return nil, err
	}
	if err := addUsers(root, users); err != nil {
		return nil, err
	}
	if err := installWeb(root, fx, demo); err != nil {
		return nil, err
	}
	// The image was updated once, as an installed system is after its
	// first boot: ConditionNeedsUpdate= then skips ldconfig.service and
	// systemd-update-done.service (4.3 s of every TCG boot, measured on
	// its critical chain). The stamps are newer than /usr.
	for _, stamp := range []string{"etc/.updated", "var/.updated"} {
		if err := writeFile(filepath.Join(root, stamp), nil, 0o644); err != nil {
			return nil, err
		}
	}
	masks := map[string][]string{"etc/systemd/system": bootMasks, "etc/systemd/system-generators": generatorMasks}
	for dir, names := range masks {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			return nil, err
		}
		for _, u := range names {
			link := filepath.Join(root, dir, u)
			os.Remove(link)
			if err := os.Symlink("/dev/null", link); err != nil {
				return nil, fmt.Errorf("masking %s: %w", u, err)
			}
		}
	}
	// Scenario scripts and the phase runner (harness, not product).
	scen, err := os.ReadDir(scenariosDir)
	if err != nil {
		return nil, err
	}
	for _, e := range scen {
		if e.IsDir() { // __pycache__ of a local python3 run
			continue
		}
		data, err := os.ReadFile(filepath.Join(scenariosDir, e.Name()))
		if err != nil {
			return nil, err
		}
		if err := writeFile(filepath.Join(root, "opt/agent-box-test/scenarios", e.Name()), data, 0o755); err != nil {
			return nil, err
		}
	}
	if err := writeFile(filepath.Join(root, "opt/agent-box-test/run-phase"), []byte(runPhase), 0o755); err != nil {
		return nil, err
	}

	if err := writeFile(filepath.Join(root, "etc/systemd/system/agent-box-scenario.service"), []byte(scenarioUnit), 0o644); err != nil {
		return nil, err
	}
	return users, enable(root, "multi-user.target", "/etc/systemd/system/agent-box-scenario.service")
}

// installRuntime copies the build agentBox and the runtime's other
// programs beside it (the supervisor finds agent-box-exec next to its own
// executable, as in the module's package) into the directory bin.
func installRuntime(agentBox, bin string) error {
	for _, name := range []string{"agent-box", contract.Programs.Spawn.Name} {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(agentBox), name))
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(bin, name), data, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// enable links unit (an absolute path in the guest) into target's wants.
func enable(root, target, unit string) error {
	want := filepath.Join(root, "etc/systemd/system", target+".wants", filepath.Base(unit))
	if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
		return err
	}
	os.Remove(want)
	if err := os.Symlink(unit, want); err != nil {
		return fmt.Errorf("enabling %s: %w", filepath.Base(unit), err)
	}
	return nil
}

// bootMasks are units of the guest's Debian that no check needs, masked in
// every disk (harness, not product: the golden units are untouched). With
// them a TCG guest reached its phase after 22 s of uptime instead of 52 to
// 68 s (one vCPU, the isolation phase, 2026-12-02): udev alone used 10.5 s
// of CPU coldplugging devices nothing waits for (the kernel mounts the root
// and devtmpfs makes the nodes), logind and D-Bus (no PAM session of the
// scenarios uses pam_systemd), the gettys, binfmt, the debug, tracing,
// configfs and fuse mounts with their modprobe@ services, pstore and the
// random seed. With these and generatorMasks, PID 1 itself used 11 s of CPU
// until the phase started instead of 16 s.
var bootMasks = []string{
	"systemd-udevd.service", "systemd-udevd-control.socket", "systemd-udevd-kernel.socket",
	"systemd-udevd-varlink.socket", "systemd-udev-trigger.service", "systemd-udev-load-credentials.service",
	"serial-getty@ttyS0.service", "getty@tty1.service", "getty.target",
	"systemd-logind.service", "dbus.service", "dbus.socket", "systemd-hostnamed.socket",
	"systemd-binfmt.service", "proc-sys-fs-binfmt_misc.automount", "proc-sys-fs-binfmt_misc.mount",
	"modprobe@configfs.service", "modprobe@drm.service", "modprobe@efi_pstore.service",
	"modprobe@fuse.service", "modprobe@dm_mod.service", "modprobe@loop.service",
	"sys-kernel-config.mount", "sys-kernel-debug.mount", "sys-kernel-tracing.mount",
	"sys-fs-fuse-connections.mount", "systemd-pstore.service", "systemd-random-seed.service",
}

// generatorMasks are the systemd generators no check needs: each runs at
// every boot and every daemon-reload. fstab's stays.
var generatorMasks = []string{
	"systemd-debug-generator", "systemd-getty-generator", "systemd-gpt-auto-generator",
	"systemd-hibernate-resume-generator", "systemd-rc-local-generator", "systemd-run-generator",
	"systemd-ssh-generator", "systemd-system-update-generator", "systemd-sysv-generator",
	"systemd-tpm2-generator",
}

// runPhase runs the phase named on the kernel command line and writes its
// TAP to the second serial port, then powers off (unless the harness will
// cut the power itself). First it reports, as "# guest:" diagnostics, the
// guest's kernel, systemd and uptime, and the units that failed while it
// booted (the harness fails the phase on any).
const runPhase = `#!/bin/bash
set -uo pipefail
phase=$(sed -n 's/.*agent_box\.phase=\([^ ]*\).*/\1/p' /proc/cmdline)
stty -F /dev/ttyS1 raw -echo 2>/dev/null || true
exec 3>/dev/ttyS1
# What the guest runs, and what already failed while it booted.
printf '# guest: linux %s, %s, up %s s at the start of the phase\n' "$(uname -r)" "$(systemctl --version | head -n 1)" "$(cut -d' ' -f1 /proc/uptime)" >&3
failed=$(systemctl list-units --failed --plain --no-legend | awk '{print $1}' | paste -sd ' ')
printf '# guest: failed units at boot: %s\n' "${failed:-none}" >&3
# cpu_by_unit: the services that used the most CPU so far, in ms.
cpu_by_unit() {
  echo "CPU time by service so far (ms):"
  systemctl show -p Id -p CPUUsageNSec '*.service' |
    awk 'BEGIN { RS = ""; FS = "\n" } {
      id = ""; ns = ""
      for (i = 1; i <= NF; i++) {
        if ($i ~ /^Id=/) id = substr($i, 4)
        if ($i ~ /^CPUUsageNSec=[0-9]/) ns = substr($i, 14)
      }
      if (ns != "") printf "%8d %s\n", ns / 1e6, id
    }' | sort -rn | head -n 15
  for g in init.scope system.slice; do
    printf '%s %s\n' "$g" "$(grep usage_usec "/sys/fs/cgroup/$g/cpu.stat")"
  done
  head -n 1 /proc/stat
  awk '{ printf "PID 1: user %.2f s, system %.2f s\n", $14 / 100, $15 / 100 }' /proc/1/stat
  echo "processes by CPU time so far (s, then seconds since start):"
  ps -eo cputimes=,etimes=,args= --sort=-cputimes | head -n 12 | cut -c1-150
}
if grep -q 'agent_box\.analyze=1' /proc/cmdline; then
  # Where the boot's time went (the harness asks for it once per run).
  systemctl is-system-running --wait >/dev/null 2>&1 || true
  { systemd-analyze time; systemd-analyze blame | head -n 12; systemd-analyze critical-chain --no-pager multi-user.target; cpu_by_unit; } 2>&1 | sed 's/^/# boot: /' >&3
fi
if [ "$phase" = probe ]; then
  printf '1..0\n# END\n' >&3
elif [ "$phase" = demo ]; then
  # make demo: QEMU's user network (10.0.2.0/24), then wait for Caddy.
  # virtio_net is a module, and no udev runs to load it (bootMasks).
  if ! { modprobe virtio_net && ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0; }; then
    printf '# demo: the guest has no network (virtio_net, eth0)\n' >&3
    systemctl poweroff --no-block
    exit 1
  fi
  for _ in $(seq 600); do
    if curl -skf -o /dev/null --resolve box.localhost:8443:127.0.0.1 https://box.localhost:8443/auth/login; then
      printf '# demo: ready\n' >&3
      exec sleep infinity
    fi
    sleep 0.5
  done
  printf '# demo: Caddy did not answer on 8443 within 300 s\n' >&3
else
  # What agent-box's units and Caddy log goes to the console log as it
  # happens (it is what explains a failed check, even after a deadline).
  journalctl -b -f --no-pager -o short-monotonic -u 'agent-box*' -u agent-box-auth.service -u caddy.service >/dev/ttyS0 2>&1 &
  bash "/opt/agent-box-test/scenarios/${phase}.sh" >&3 2>&1
  echo "# exit status $?" >&3
fi
if ! grep -q 'agent_box\.crash=1' /proc/cmdline; then
  systemctl poweroff --no-block
fi
`

// scenarioUnit is Type=simple so that the boot counts as finished when
// the phase starts (systemd-analyze needs a finished boot).
const scenarioUnit = `[Unit]
Description=agent-box test harness: run one scenario phase
After=multi-user.target

[Service]
Type=simple
ExecStart=/opt/agent-box-test/run-phase
StandardOutput=journal+console
StandardError=journal+console
`

func writeFile(p string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	os.Remove(p) // never write through a hard link into the cached base
	return os.WriteFile(p, data, mode)
}

// addUsers creates the users as NixOS would (normal users, home
// /home/<name> mode 0700, primary group of their own here), uid 1000 up.
func addUsers(root string, users []string) error {
	appendTo := func(name, text string, mode os.FileMode) error {
		p := filepath.Join(root, "etc", name)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return writeFile(p, append(data, text...), mode)
	}
	var passwd, group, shadow strings.Builder
	for i, u := range users {
		id := 1000 + i
		fmt.Fprintf(&passwd, "%s:x:%d:%d::/home/%s:/bin/bash\n", u, id, id, u)
		fmt.Fprintf(&group, "%s:x:%d:\n", u, id)
		fmt.Fprintf(&shadow, "%s:!:19000:0:99999:7:::\n", u)
		home := filepath.Join(root, "home", u)
		if err := os.MkdirAll(home, 0o700); err != nil {
			return err
		}
		if err := os.Chown(home, id, id); err != nil {
			return err
		}
	}
	if err := appendTo("passwd", passwd.String(), 0o644); err != nil {
		return err
	}
	if err := appendTo("group", group.String(), 0o644); err != nil {
		return err
	}
	return appendTo("shadow", shadow.String(), 0o640)
}

// MakeDisk copies the cached base root into a fresh staging tree, lets
// prepare add to it, and writes an ext4 image of it (mkfs.ext4 -d: no loop
// mount, no root privileges beyond reading the tree).
func MakeDisk(ctx context.Context, base, disk string, prepare func(root string) error) error {
	stage, err := os.MkdirTemp(filepath.Dir(disk), "stage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	// Hard links: instant, and writeFile replaces rather than writes through.
	if out, err := exec.CommandContext(ctx, "cp", "-al", base+"/.", stage).CombinedOutput(); err != nil {
		return fmt.Errorf("staging the base image: %v\n%s", err, out)
	}
	if err := prepare(stage); err != nil {
		return err
	}
	os.Remove(disk)
	// -O quota: the filesystem keeps every user's usage (no quota files
	// or tools), what docs/operating.md ("Disk") asks of a host for
	// users.<u>.diskQuota; the mount has no usrquota, so the module's
	// unit turns enforcement on, as it would on such a host.
	if out, err := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-L", "root", "-O", "quota",
		// Initialise inode tables and journal here: ext4lazyinit would do it
		// inside the emulated guest, competing with the scenario for CPU.
		"-E", "lazy_itable_init=0,lazy_journal_init=0,quotatype=usrquota", "-d", stage, disk, "3G").CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4 -d: %v\n%s", err, out)
	}
	return nil
}

// Boot describes one boot.
type Boot struct {
	Disk, Kernel, Initrd string
	Phase                string
	Crash                bool          // kill QEMU after "# END" instead of waiting for poweroff
	Accel                string        // "kvm" or "tcg"
	Deadline             time.Duration // for the whole boot
	Console              string        // file for the console log (ttyS0)
	OnLine               func(string)  // sees every TAP line as it arrives
	// Forward, when set, gives the guest a user-mode network restricted
	// to this host (restrict=on: no route out) with host 127.0.0.1:PORT
	// forwarded to guest port PORT for each port. Otherwise: no network.
	Forward []int
	// CPUs is the guest's number of vCPUs (at least 1). Under TCG each
	// takes a host thread: more vCPUs than host cores in all makes a
	// guest's spinning vCPU wait for one whose thread is not running.
	CPUs int
	// Analyze asks the guest for systemd-analyze's account of its boot
	// ("# boot: " lines) before the phase.
	Analyze bool
	// Log receives the harness's own lines about this boot (a second
	// boot after an early panic); os.Stdout when nil.
	Log io.Writer
}

// Run boots the machine and returns the phase's TAP report. The error says
// why the boot or the report failed (deadline, QEMU failure, broken TAP).
//
// A guest kernel that panics before the phase prints anything is booted
// once more (its console log is kept beside, as .panic.log): under TCG
// with two vCPUs the Debian kernel's early code patching has oopsed
// (int3 in sched_clock_cpu, 3 s into a boot), which is the emulator's
// flake, not the phase's. A second panic, or any panic after the phase
// began, fails as before.
func (b Boot) Run(ctx context.Context) (*TAP, time.Duration, error) {
	seen := 0
	inner := b.OnLine
	b.OnLine = func(line string) {
		seen++
		if inner != nil {
			inner(line)
		}
	}
	tap, took, err := b.boot(ctx)
	if err == nil || seen > 0 || !earlyPanic(b.Console) || ctx.Err() != nil {
		return tap, took, err
	}
	kept := strings.TrimSuffix(b.Console, ".log") + ".panic.log"
	os.Rename(b.Console, kept)
	log := b.Log
	if log == nil {
		log = os.Stdout
	}
	fmt.Fprintf(log, "vmtest: %s: the guest kernel panicked before the phase began (%s); booting it again (console kept in %s)\n", b.Phase, panicLine(kept), kept)
	tap2, took2, err := b.boot(ctx)
	return tap2, took + took2, err
}

// earlyPanic reports a console log that ends in a kernel panic.
func earlyPanic(console string) bool {
	data, err := os.ReadFile(console)
	return err == nil && bytes.Contains(data, []byte("Kernel panic - not syncing"))
}

// panicLine is the first oops or panic line of a console log.
func panicLine(console string) string {
	data, _ := os.ReadFile(console)
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "Oops:") || strings.Contains(l, "Kernel panic") {
			if i := strings.Index(l, "] "); i >= 0 {
				l = l[i+2:]
			}
			return strings.TrimSpace(l)
		}
	}
	return "kernel panic"
}

func (b Boot) boot(ctx context.Context) (*TAP, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, b.Deadline)
	defer cancel()
	// The kernel's own speculation mitigations, zeroing of every
	// allocation, huge pages and audit cost emulated CPU time and protect
	// nothing the phases check, so they are off (one-vCPU boot of the
	// isolation phase, same work: the guest's CPU at the start of the
	// phase 31.1 s with them on, 24.8 s with them off; the machine is
	// noisy).
	cmdline := "console=ttyS0 root=/dev/vda rw rootwait panic=-1 quiet loglevel=4 net.ifnames=0 systemd.show_status=auto mitigations=off init_on_alloc=0 transparent_hugepage=never audit=0 agent_box.phase=" + b.Phase
	if b.Crash {
		cmdline += " agent_box.crash=1"
	}
	if b.Analyze {
		cmdline += " agent_box.analyze=1"
	}
	nic := "none"
	if len(b.Forward) > 0 {
		nic = "user,model=virtio-net-pci,restrict=on"
		for _, p := range b.Forward {
			nic += fmt.Sprintf(",hostfwd=tcp:127.0.0.1:%d-:%d", p, p)
		}
	}
	// Under TCG, QEMU's emulated AVX2 is what Go's SHA-256 picks, and it is
	// slow: one 600,000-round PBKDF2 login hash took 10.0 s under
	// qemu-x86_64 -cpu max and 3.4 s with -cpu max,-avx2 (19 s in the
	// TCG guest before). KVM runs the host's instructions.
	cpu, accel := "max", b.Accel
	if b.Accel == "tcg" {
		cpu, accel = "max,-avx2", "tcg,thread=multi"
	}
	args := []string{
		"-accel", accel, "-cpu", cpu, "-smp", strconv.Itoa(max(b.CPUs, 1)), "-m", "1536",
		"-display", "none", "-vga", "none", "-monitor", "none", "-nic", nic, "-no-reboot",
		"-kernel", b.Kernel, "-initrd", b.Initrd, "-append", cmdline,
		"-drive", "file=" + b.Disk + ",format=raw,if=virtio,cache=unsafe",
		"-serial", "file:" + b.Console,
		"-serial", "stdio",
	}
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", args...)
	cmd.Cancel = func() error { return cmd.Process.Kill() }
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("starting qemu: %w", err)
	}
	tap, tapErr := ParseTAP(out, func(line string) {
		if b.OnLine != nil {
			b.OnLine(line)
		}
		if b.Crash && line == "# END" {
			// Forced power-off: no sync, no unmount.
			cmd.Process.Signal(syscall.SIGKILL)
		}
	})
	waitErr := cmd.Wait()
	took := time.Since(start)
	if ctx.Err() != nil {
		if parent := context.Cause(ctx); errors.Is(parent, context.Canceled) {
			return tap, took, parent // stopped by the caller (the demo's Ctrl-C)
		}
		return tap, took, fmt.Errorf("boot of phase %s did not finish within %s", b.Phase, b.Deadline)
	}
	if waitErr != nil && !b.Crash {
		return tap, took, fmt.Errorf("qemu: %v\n%s", waitErr, stderr.String())
	}
	return tap, took, tapErr
}

// ConsoleTail returns the last n lines of the console log.
func ConsoleTail(file string, n int) string {
	f, err := os.Open(file)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, strings.ReplaceAll(sc.Text(), "\r", ""))
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// Accel chooses the accelerator: $AGENT_BOX_VM_ACCEL if set; otherwise KVM
// only when /dev/kvm exists AND a probe boot (kernel up to its panic for a
// missing root, no disk) finishes quickly; nested KVM hangs on some hosts.
// The probe's answer is cached per kernel and QEMU in the cache directory.
func Accel(ctx context.Context, kernel string, log io.Writer) string {
	if a := os.Getenv("AGENT_BOX_VM_ACCEL"); a == "kvm" || a == "tcg" {
		return a
	}
	if _, err := os.Stat("/dev/kvm"); err != nil {
		return "tcg"
	}
	qv, _ := exec.Command("qemu-system-x86_64", "--version").Output()
	key := regexp.MustCompile(`[^A-Za-z0-9.]+`).ReplaceAllString(filepath.Base(kernel)+"-"+strings.SplitN(string(qv), "\n", 2)[0], "_")
	cache := filepath.Join(CacheDir(), "accel-"+key)
	if data, err := os.ReadFile(cache); err == nil {
		return strings.TrimSpace(string(data))
	}
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(pctx, "qemu-system-x86_64", "-accel", "kvm", "-cpu", "host", "-m", "256",
		"-display", "none", "-vga", "none", "-monitor", "none", "-nic", "none", "-no-reboot",
		"-kernel", kernel, "-append", "console=ttyS0 panic=-1", "-serial", "stdio")
	out, _ := cmd.Output()
	accel := "tcg"
	if pctx.Err() == nil && bytes.Contains(out, []byte("Kernel panic")) {
		accel = "kvm"
	}
	fmt.Fprintf(log, "vmtest: KVM probe: %s (cached in %s)\n", map[string]string{"kvm": "completed, using KVM", "tcg": "did not complete, using TCG"}[accel], cache)
	os.MkdirAll(CacheDir(), 0o755)
	os.WriteFile(cache, []byte(accel+"\n"), 0o644)
	return accel
}
