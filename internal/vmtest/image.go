// Package vmtest is the offline VM tier: it boots the golden unit files,
// unchanged, under real systemd in QEMU and runs the scenario scripts of
// tests/scenarios/ in it.
//
// The guest is Debian 13 (trixie: systemd 257, Caddy 2.6) booting its own
// kernel (Debian's cloud flavour, 6.12) with the harness's own initrd
// (initrd.go: a static init and the virtio_blk module). ttyd, which trixie
// lacks, is the one package from Debian sid: only its .deb is downloaded,
// and trixie's apt installs it with trixie's libraries. When sid no longer
// has ttyd, or its dependencies do not resolve on trixie, the image build
// fails and names the version and the unmet dependencies. Debian's own caddy.service and ttyd.service are
// disabled in the image: scenarios start what they configure.
//
// The tier runs with `go test -tags vm ./internal/vmtest` (`make vm`), after
// the ordinary suite. The base image is built once with debootstrap (the
// mirror from this machine's apt sources) and cached outside the
// repository, keyed by imageRecipe, the kernel package and the package list
// (the harness's and tests/scenarios/requirements).
package vmtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/agent-box/agent-box/internal/scenarios"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// imageRecipe changes whenever the way the base image is made changes, so
// that old caches are not reused.
const imageRecipe = "agent-box-vm-base-v2 trixie minbase ttyd-from-sid guest-kernel virtio-initrd"

// suite is the Debian release of the guest. ttyd is not in it: its .deb
// alone comes from ttydSuite and installs against suite's libraries.
const (
	suite     = "trixie"
	ttydSuite = "sid"
)

// guestBasePackages are what the harness itself needs in the guest, on top
// of the scenarios' requirements: an init, the tools that make the guest's
// own initrd, and what the web surface runs on (Caddy, a WebSocket client
// for its tests, fail2ban with its journal backend and nftables for the
// bans; ttyd is added from sid), and polkitd for the apps' rules.
var guestBasePackages = []string{
	"systemd", "systemd-sysv", "udev", "dbus", "e2fsprogs", "initramfs-tools",
	"caddy", "python3-websockets", "fail2ban", "python3-systemd", "nftables",
	// polkit decides what `agent-box app` may do (the module's rules);
	// polkitd depends on a logind, which libpam-systemd provides
	"polkitd", "libpam-systemd",
}

// guestKernelPackage is the guest's kernel, installed after the initramfs
// configuration so that its postinst makes the small initrd at once. The
// cloud flavour (virtual hardware only, a third of the generic kernel's
// modules) reaches the scenario about as fast as the host's Debian 12 kernel
// did under TCG and several seconds sooner than linux-image-amd64; it has
// every feature the scenarios use (cgroup v2 memory and pids, seccomp,
// namespaces, nftables, autofs).
const guestKernelPackage = "linux-image-cloud-amd64"

// Base is a cached guest image: its root tree, the guest's own kernel and
// small initrd (under Root/boot), and the versions of what it runs.
type Base struct {
	Root, Kernel, Initrd string
	Versions             []string
}

// Mirror returns the Debian mirror this machine's apt uses (never a
// hard-coded host).
func Mirror() (string, error) {
	for _, f := range []string{"/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(line)
			switch {
			case len(fields) >= 2 && fields[0] == "URIs:":
				return fields[1], nil
			case len(fields) >= 3 && fields[0] == "deb" && !strings.Contains(fields[2], "security"):
				if strings.HasPrefix(fields[1], "[") {
					if len(fields) >= 4 {
						return fields[2], nil
					}
					continue
				}
				return fields[1], nil
			}
		}
	}
	return "", errors.New("no Debian mirror found in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list")
}

// CacheDir is where images live: $AGENT_BOX_VM_CACHE or
// /var/tmp/agent-box-vm.
func CacheDir() string {
	if d := os.Getenv("AGENT_BOX_VM_CACHE"); d != "" {
		return d
	}
	return "/var/tmp/agent-box-vm"
}

// EnsureBase returns the cached base image for the scenarios' requirements
// (their Debian packages), building it first if needed (minutes, once):
// debootstrap of the guest's suite, ttyd from sid, the guest's kernel with a
// virtio-only initrd. log receives progress lines.
func EnsureBase(ctx context.Context, reqs []scenarios.Requirement, log io.Writer) (*Base, error) {
	all := append([]string{}, guestBasePackages...)
	for _, r := range reqs {
		all = append(all, r.Debian)
	}
	h := sha256.Sum256([]byte(imageRecipe + "\n" + guestKernelPackage + "\n" + strings.Join(all, ",")))
	dir := filepath.Join(CacheDir(), "base-"+hex.EncodeToString(h[:8]))
	if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		return readBase(dir)
	}
	for _, tool := range []string{"debootstrap", "unshare", "chroot", "mkfs.ext4", "qemu-system-x86_64"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s is required for the VM tier: %w (run 'make deps')", tool, err)
		}
	}
	mirror, err := Mirror()
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "vmtest: building the base image in %s (debootstrap %s from %s; once)\n", dir, suite, mirror)
	start := time.Now()
	logFile, err := os.Create(filepath.Join(dir, "build.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	root := filepath.Join(dir, "root")
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", "--include="+strings.Join(all, ","), suite, root, mirror)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Run(); err != nil {
		out, _ := os.ReadFile(logFile.Name())
		return nil, fmt.Errorf("debootstrap: %w\n%s", err, tail(out, 2000))
	}
	fmt.Fprintf(log, "vmtest: debootstrap took %s\n", time.Since(start).Round(time.Second))
	if err := configureBase(root); err != nil {
		return nil, err
	}
	steps := []struct {
		name string
		run  func() error
	}{
		{"ttyd from " + ttydSuite, func() error { return installTtyd(ctx, root, mirror, logFile) }},
		{"the guest's kernel and initrd", func() error { return installKernel(ctx, root, logFile) }},
		{"finishing", func() error { return finishBase(ctx, root, logFile) }},
	}
	for _, st := range steps {
		t0 := time.Now()
		if err := st.run(); err != nil {
			return nil, fmt.Errorf("vmtest: base image, %s: %w\n(full log: %s)", st.name, err, logFile.Name())
		}
		fmt.Fprintf(log, "vmtest: %s took %s\n", st.name, time.Since(t0).Round(time.Second))
	}
	versions, err := inChroot(ctx, root, logFile, `ttyd --version; echo "caddy $(caddy version)"; systemctl --version | head -n 1; echo "linux $(ls /boot | sed -n 's/^vmlinuz-//p')"`)
	if err != nil {
		return nil, fmt.Errorf("vmtest: base image, recording versions: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "versions"), versions, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "complete"), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "vmtest: base image built in %s\n", time.Since(start).Round(time.Second))
	return readBase(dir)
}

// readBase describes a built base image in dir.
func readBase(dir string) (*Base, error) {
	b := &Base{Root: filepath.Join(dir, "root")}
	ks, _ := filepath.Glob(filepath.Join(b.Root, "boot", "vmlinuz-*"))
	if len(ks) != 1 {
		return nil, fmt.Errorf("vmtest: base image %s: want one kernel in /boot, found %d (delete the directory to rebuild it)", dir, len(ks))
	}
	b.Kernel = ks[0]
	b.Initrd = strings.Replace(ks[0], "vmlinuz-", "initrd.img-", 1)
	if _, err := os.Stat(b.Initrd); err != nil {
		return nil, fmt.Errorf("vmtest: base image %s: no initrd for its kernel: %w", dir, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "versions"))
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			b.Versions = append(b.Versions, l)
		}
	}
	return b, nil
}

// inChroot runs a shell script as root in the guest tree, with /proc and
// /sys mounted in a mount namespace of its own and unmounted after it, so a
// failed build never leaves a mount in the cache. Its output goes to log
// and is returned.
func inChroot(ctx context.Context, root string, log io.Writer, script string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", propagation(ctx), "--",
		"/bin/sh", "-c", `mount -t proc proc "$0/proc" && mount -t sysfs sysfs "$0/sys" || exit
chroot "$0" /bin/sh -euc "$1"; rc=$?
umount "$0/sys" "$0/proc"
exit "$rc"`,
		root, script)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8", "DEBIAN_FRONTEND=noninteractive"}
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(&out, log)
	cmd.Stderr = cmd.Stdout
	fmt.Fprintf(log, "vmtest: in the chroot: %s\n", script)
	err := cmd.Run()
	return out.Bytes(), err
}

// propagation is how inChroot's mount namespace treats the mounts it
// inherits: "private", unless "/" is not a mount point (the test command
// itself runs in a chroot, as fresh-debian-run does: unshare then fails
// with "cannot change root filesystem propagation: Invalid argument"), in
// which case "unchanged"; inChroot unmounts what it mounted either way.
func propagation(ctx context.Context) string {
	if exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "--", "true").Run() == nil {
		return "private"
	}
	return "unchanged"
}

// sidDir holds, inside the chroot during the build, the private apt state
// that sees only sid: nothing of it reaches the trixie apt configuration.
const sidDir = "/tmp/agent-box-sid"

// installTtyd downloads the ttyd .deb, and only it, from sid and installs it
// with the guest's own apt, so that its dependencies come from trixie. It
// fails, naming the version and the unmet dependencies, when sid has no ttyd
// or its dependencies do not resolve on trixie: the web scenarios need it.
func installTtyd(ctx context.Context, root, mirror string, log io.Writer) error {
	apt := "apt-get -o Dir::Etc::SourceList=" + sidDir + "/sources.list -o Dir::Etc::SourceParts=" + sidDir + "/parts" +
		" -o Dir::State::Lists=" + sidDir + "/lists -o Dir::Cache=" + sidDir + "/cache" +
		// sid's Release on a mirror can be past its Valid-Until.
		" -o Acquire::Check-Valid-Until=false -o Acquire::Languages=none"
	index := `d=` + sidDir + `
rm -rf "$d" && mkdir -p "$d/parts" "$d/lists/partial" "$d/cache/archives/partial"
echo "deb ` + mirror + ` ` + ttydSuite + ` main" > "$d/sources.list"
chown -R _apt "$d"
` + apt + ` update`
	if out, err := inChroot(ctx, root, log, index); err != nil {
		return fmt.Errorf("reading %s's index from %s (%v):\n%s", ttydSuite, mirror, err, tail(out, 1500))
	}
	if out, err := inChroot(ctx, root, log, "cd "+sidDir+" && "+apt+" download ttyd"); err != nil {
		return fmt.Errorf("%s has no ttyd to download (%v):\n%s\nhint: the web scenarios need ttyd; take it from another suite or build it, then change imageRecipe", ttydSuite, err, tail(out, 1500))
	}
	debs, _ := filepath.Glob(filepath.Join(root, sidDir, "ttyd_*.deb"))
	if len(debs) != 1 {
		return fmt.Errorf("apt-get download ttyd left %d .deb files in %s", len(debs), sidDir)
	}
	deb := filepath.Join(sidDir, filepath.Base(debs[0]))
	fields, err := inChroot(ctx, root, log, "dpkg-deb -f "+deb+" Version Depends")
	if err != nil {
		return fmt.Errorf("reading %s: %v\n%s", deb, err, fields)
	}
	out, err := inChroot(ctx, root, log, "apt-get install -y --no-install-recommends "+deb)
	if err != nil {
		return ttydError(string(fields), string(out), err)
	}
	return nil
}

// ttydError says why the ttyd from sid did not install: its version and
// dependencies (dpkg-deb -f Version Depends) and the dependencies apt found
// unmet, then apt's own words.
func ttydError(fields, aptOut string, err error) error {
	version, depends := "?", "?"
	for _, l := range strings.Split(fields, "\n") {
		if v, ok := strings.CutPrefix(l, "Version: "); ok {
			version = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(l, "Depends: "); ok {
			depends = strings.TrimSpace(v)
		}
	}
	var unmet []string
	for _, l := range strings.Split(aptOut, "\n") {
		l = strings.TrimSpace(l)
		if _, dep, ok := strings.Cut(l, "Depends: "); ok && strings.Contains(l, " but ") {
			unmet = append(unmet, dep)
		}
	}
	if len(unmet) == 0 {
		unmet = []string{"(apt named none; see its output)"}
	}
	return fmt.Errorf("ttyd %s from %s does not install on %s (%v): unmet: %s\nits Depends: %s\napt-get said:\n%s\nhint: the web scenarios need ttyd; take it from another suite or build it, then change imageRecipe",
		version, ttydSuite, suite, err, strings.Join(unmet, "; "), depends, tail([]byte(aptOut), 1500))
}

// installKernel installs the guest's own kernel after telling
// initramfs-tools to make a small initrd (virtio disk and ext4 only, gzip):
// Debian's full initrd takes many seconds to unpack under TCG.
func installKernel(ctx context.Context, root string, log io.Writer) error {
	if err := writeFile(filepath.Join(root, "etc/initramfs-tools/conf.d/agent-box-vm.conf"),
		[]byte("# agent-box VM tier: only what the guest needs to mount its root\nMODULES=list\nCOMPRESS=gzip\n"), 0o644); err != nil {
		return err
	}
	modules := filepath.Join(root, "etc/initramfs-tools/modules")
	data, err := os.ReadFile(modules)
	if err != nil {
		return err
	}
	if err := writeFile(modules, append(data, "virtio_pci\nvirtio_blk\next4\n"...), 0o644); err != nil {
		return err
	}
	if out, err := inChroot(ctx, root, log, "apt-get install -y --no-install-recommends "+guestKernelPackage); err != nil {
		return fmt.Errorf("installing %s: %v\n%s", guestKernelPackage, err, tail(out, 1500))
	}
	return nil
}

// finishBase disables the services Debian enables on installation: Caddy,
// ttyd and fail2ban with Debian's example configurations (the web phases
// start their own) and e2scrub_reap (no LVM in the guest; it sat on the boot's critical
// path). It checks that they stay off, then drops apt's caches and indexes
// (no network in the guest; every disk is smaller).
func finishBase(ctx context.Context, root string, log io.Writer) error {
	script := `systemctl disable caddy.service ttyd.service fail2ban.service e2scrub_reap.service
for u in caddy.service ttyd.service fail2ban.service e2scrub_reap.service; do
  s=$(systemctl is-enabled "$u" || true)
  [ "$s" = disabled ] || { echo "$u is $s, want disabled"; exit 1; }
done
rm -rf ` + sidDir + ` /usr/sbin/policy-rc.d
apt-get clean
rm -rf /var/lib/apt/lists/*`
	if out, err := inChroot(ctx, root, log, script); err != nil {
		return fmt.Errorf("%v\n%s", err, tail(out, 1500))
	}
	return nil
}

// tail returns at most the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// configureBase makes the debootstrapped tree bootable and quick to boot.
func configureBase(root string) error {
	files := map[string]string{
		"etc/fstab":    "/dev/vda / ext4 rw,errors=remount-ro 0 1\n",
		"etc/hostname": "agent-box-vm\n",
		"etc/hosts":    "127.0.0.1 localhost agent-box-vm\n",
		// No network in the guest; apt timers would only slow boots down.
		"etc/systemd/system/apt-daily.timer":         "",
		"etc/systemd/system/apt-daily-upgrade.timer": "",
	}
	for name, data := range files {
		p := filepath.Join(root, name)
		if data == "" && strings.HasPrefix(name, "etc/systemd/system/") {
			os.Remove(p)
			if err := os.Symlink("/dev/null", p); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			return err
		}
	}
	// No service starts inside the chroot while the build installs packages
	// (finishBase removes this again).
	if err := writeFile(filepath.Join(root, "usr/sbin/policy-rc.d"), []byte("#!/bin/sh\nexit 101\n"), 0o755); err != nil {
		return err
	}
	// Root may log in on the console without a password (debugging only).
	shadow := filepath.Join(root, "etc/shadow")
	data, err := os.ReadFile(shadow)
	if err != nil {
		return err
	}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "root:") {
			f := strings.Split(l, ":")
			f[1] = ""
			lines[i] = strings.Join(f, ":")
		}
	}
	return os.WriteFile(shadow, []byte(strings.Join(lines, "\n")), 0o640)
}
