package userfile

import (
	"errors"
	"github.com/agent-box/agent-box/internal/hostilefile"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadRefusesWhatIsNotARegularFileWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "dir")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	linkToFifo := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, linkToFifo); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, kind string }{
		{"FIFO", fifo, "a FIFO"},
		{"directory", sub, "a directory"},
		{"socket", sock, "a socket"},
		{"character device", "/dev/zero", "a character device"},
		{"symlink to a FIFO", linkToFifo, "a FIFO"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := hostilefile.Within(t, func() error { _, err := Read(tc.path, 1<<20); return err })
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.kind) {
				t.Errorf("Read(%s) = %v, want ErrNotRegular naming %q", tc.path, err, tc.kind)
			}
		})
	}
}

func TestReadStopsAtTheLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := Read(p, 5); err != nil || string(data) != "12345" {
		t.Errorf("at the limit: %q %v", data, err)
	}
	if _, err := Read(p, 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: %v, want ErrTooLarge", err)
	}
}

func TestReadFollowsASymlinkToARegularFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "real")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	if data, err := Read(link, 10); err != nil || string(data) != "x" {
		t.Errorf("%q %v", data, err)
	}
}

func TestReadOfAMissingFileIsNotExist(t *testing.T) {
	if _, err := Read(filepath.Join(t.TempDir(), "none"), 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%v, want fs.ErrNotExist", err)
	}
}

func TestOpenLockRefusesAFIFOWithoutBlocking(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "x.lock")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	err := hostilefile.Within(t, func() error {
		f, err := OpenLock(fifo)
		if err == nil {
			f.Close()
		}
		return err
	})
	if !errors.Is(err, ErrNotRegular) {
		t.Errorf("%v, want ErrNotRegular", err)
	}
}

func TestOpenLockRefusesADirectoryAndEverySymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.lock")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "dir.lock")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, kind string }{{link, "a symbolic link"}, {sub, "a directory"}} {
		err := hostilefile.Within(t, func() error {
			f, err := OpenLock(tc.path)
			if err == nil {
				f.Close()
			}
			return err
		})
		var ue *Error
		if !errors.As(err, &ue) || ue.Err != ErrNotRegular || ue.Path != tc.path || ue.Kind != tc.kind {
			t.Errorf("OpenLock(%s) = %v, want an *Error naming it %s", tc.path, err, tc.kind)
		}
	}
	if data, _ := os.ReadFile(target); string(data) != "keep me" {
		t.Errorf("the symlink's target changed: %q", data)
	}
}

func TestTooLargeErrorNamesThePathAndTheLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("123456"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Read(p, 4)
	var ue *Error
	if !errors.As(err, &ue) || ue.Path != p || ue.Size != 6 || ue.Limit != 4 || !Bad(err) {
		t.Fatalf("Read over the limit = %#v, want an *Error with size 6 and limit 4", err)
	}
	if want := "holds 6 bytes, more than 4"; !strings.Contains(err.Error(), want) {
		t.Errorf("%q does not say %q", err, want)
	}
}
