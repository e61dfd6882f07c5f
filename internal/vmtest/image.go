// Package vmtest is the offline VM tier: it boots the golden unit files,
// unchanged, under real systemd in QEMU (a Debian 12 guest with Debian's
// kernel) and runs the scenario scripts of tests/scenarios/ in it.
//
// The tier runs with `go test -tags vm ./internal/vmtest` (`make vm`), after
// the ordinary suite. The base image is built once with debootstrap and
// cached outside the repository, keyed by tests/scenarios/requirements.
package vmtest

import (
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
const imageRecipe = "agent-box-vm-base-v1 bookworm minbase"

// guestBasePackages are what the harness itself needs in the guest, on top
// of the scenarios' requirements.
var guestBasePackages = []string{"systemd", "systemd-sysv", "udev", "dbus", "e2fsprogs"}

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

// EnsureBase returns the cached base root directory for the scenarios'
// requirements (their Debian packages), building it with debootstrap first
// if needed (minutes, once). log receives progress lines.
func EnsureBase(ctx context.Context, reqs []scenarios.Requirement, log io.Writer) (string, error) {
	all := append([]string{}, guestBasePackages...)
	for _, r := range reqs {
		all = append(all, r.Debian)
	}
	h := sha256.Sum256([]byte(imageRecipe + "\n" + strings.Join(all, ",")))
	dir := filepath.Join(CacheDir(), "base-"+hex.EncodeToString(h[:8]))
	root := filepath.Join(dir, "root")
	if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		return root, nil
	}
	for _, tool := range []string{"debootstrap", "mkfs.ext4", "qemu-system-x86_64"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%s is required for the VM tier: %w (run 'make deps')", tool, err)
		}
	}
	mirror, err := Mirror()
	if err != nil {
		return "", err
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "vmtest: building the base image in %s (debootstrap bookworm from %s; once)\n", dir, mirror)
	start := time.Now()
	logFile, err := os.Create(filepath.Join(dir, "debootstrap.log"))
	if err != nil {
		return "", err
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", "--include="+strings.Join(all, ","), "bookworm", root, mirror)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Run(); err != nil {
		tail, _ := os.ReadFile(logFile.Name())
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return "", fmt.Errorf("debootstrap: %w\n%s", err, tail)
	}
	if err := configureBase(root); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "complete"), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "vmtest: base image built in %s\n", time.Since(start).Round(time.Second))
	return root, nil
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
