package vmtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// initrdModules are the modules guestinit loads, in its order, under the
// kernel's module directory: the disk's driver, and the quota format of
// the root's ext4 quota feature (without it the mount fails with ESRCH).
var initrdModules = []string{
	"drivers/block/virtio_blk.ko.xz",
	"fs/quota/quota_tree.ko.xz",
	"fs/quota/quota_v2.ko.xz",
}

// makeInitrd builds ./internal/vmtest/guestinit for the guest and writes
// the guest's initrd to work/initrd.cpio: that program as /init and the
// base image kernel's initrdModules. Uncompressed (the emulated
// kernel would only spend time unpacking it) and 1.7 MB, where the
// base image's mkinitramfs initrd is 10 MB of gzip.
func makeInitrd(ctx context.Context, root, work string, base *Base) (string, error) {
	initBin := filepath.Join(work, "guestinit")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", initBin, "./internal/vmtest/guestinit")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the guest's init: %v\n%s", err, out)
	}
	initData, err := os.ReadFile(initBin)
	if err != nil {
		return "", err
	}
	version := strings.TrimPrefix(filepath.Base(base.Kernel), "vmlinuz-")
	var c cpio
	c.dir("dev")
	c.node("dev/console", 0o020600, 5, 1)
	c.dir("root")
	c.file("init", 0o755, initData)
	for _, m := range initrdModules {
		data, err := os.ReadFile(filepath.Join(base.Root, "lib/modules", version, "kernel", m))
		if err != nil {
			return "", fmt.Errorf("the guest's initrd needs %s: %w", filepath.Base(m), err)
		}
		c.file(filepath.Base(m), 0o644, data)
	}
	out := filepath.Join(work, "initrd.cpio")
	return out, os.WriteFile(out, c.close(), 0o644)
}

// cpio writes the "newc" format the kernel unpacks into its initramfs.
type cpio struct {
	buf bytes.Buffer
	ino int
}

func (c *cpio) header(name string, mode uint32, size, rmaj, rmin int) {
	c.ino++
	fmt.Fprintf(&c.buf, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, 1, 0, size, 0, 0, rmaj, rmin, len(name)+1, 0)
	c.buf.WriteString(name)
	c.buf.WriteByte(0)
	c.pad()
}

func (c *cpio) pad() {
	for c.buf.Len()%4 != 0 {
		c.buf.WriteByte(0)
	}
}

func (c *cpio) dir(name string) { c.header(name, 0o040755, 0, 0, 0) }

func (c *cpio) node(name string, mode uint32, major, minor int) {
	c.header(name, mode, 0, major, minor)
}

func (c *cpio) file(name string, perm uint32, data []byte) {
	c.header(name, 0o100000|perm, len(data), 0, 0)
	c.buf.Write(data)
	c.pad()
}

func (c *cpio) close() []byte {
	c.header("TRAILER!!!", 0, 0, 0, 0)
	return c.buf.Bytes()
}
