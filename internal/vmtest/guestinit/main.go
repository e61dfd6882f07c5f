//go:build linux

// Command guestinit is the whole initrd of the VM tier's guest (harness, not product).
//
// It is the whole initrd of the VM tier's guest (harness,
// not product): as PID 1 it loads the modules the root disk needs
// (virtio_blk and the quota format, which Debian's cloud kernel builds as
// modules; ext4 is built in), mounts /dev/vda read-write on /root, makes
// it the root and executes systemd. Debian's mkinitramfs initrd did the same with udev and
// shell scripts in 10 MB that the emulated kernel had to unpack first.
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// modules are the initrd's (initrdModules in ../initrd.go), in the order
// they load: the disk's driver, and the quota format that the root's ext4
// quota feature needs at the mount (quota_v2 uses quota_tree).
var modules = []string{"/virtio_blk.ko.xz", "/quota_tree.ko.xz", "/quota_v2.ko.xz"}

const (
	disk = "/dev/vda"
	// finit_module(2) flag: the kernel decompresses the module itself
	// (CONFIG_MODULE_DECOMPRESS).
	moduleInitCompressedFile = 4
	// finit_module's number on x86_64 (the package syscall lacks it); the
	// harness builds this program for amd64 only.
	sysFinitModule = 313
)

func main() {
	if err := run(); err != nil {
		// The kernel panics when PID 1 exits; the harness reports the
		// panic with the line before it.
		fmt.Fprintf(os.Stderr, "guestinit: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	if err := syscall.Mount("devtmpfs", "/dev", "devtmpfs", 0, ""); err != nil {
		return fmt.Errorf("mounting devtmpfs on /dev: %w", err)
	}
	for _, m := range modules {
		if err := loadModule(m); err != nil {
			return err
		}
	}
	// The disk's node appears when the driver has probed it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(disk); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within 30 s of loading %s", disk, modules[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Mount(disk, "/root", "ext4", 0, ""); err != nil {
		return fmt.Errorf("mounting %s on /root: %w", disk, err)
	}
	if err := syscall.Mount("/dev", "/root/dev", "", syscall.MS_MOVE, ""); err != nil {
		return fmt.Errorf("moving /dev into the root: %w", err)
	}
	// What switch_root does, less deleting the initrd's few files.
	if err := syscall.Chdir("/root"); err != nil {
		return err
	}
	if err := syscall.Mount(".", "/", "", syscall.MS_MOVE, ""); err != nil {
		return fmt.Errorf("moving the root to /: %w", err)
	}
	if err := syscall.Chroot("."); err != nil {
		return fmt.Errorf("chroot: %w", err)
	}
	if err := syscall.Chdir("/"); err != nil {
		return err
	}
	return syscall.Exec("/sbin/init", []string{"/sbin/init"}, os.Environ())
}

func loadModule(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	params := []byte{0} // no module parameters: an empty C string
	_, _, errno := syscall.Syscall(sysFinitModule, f.Fd(), uintptr(unsafe.Pointer(&params[0])), moduleInitCompressedFile)
	if errno != 0 && errno != syscall.EEXIST {
		return fmt.Errorf("loading %s: %w", path, errno)
	}
	return nil
}
