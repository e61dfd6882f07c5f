// Package atomicfile is the one write path for agent-box's small state files:
// an exclusive flock on a sidecar "<file>.lock", a temp file in the same
// directory, fsync of the file, rename over the target, fsync of the directory.
//
// Readers never take the lock: rename makes every version they can observe
// complete. Writers that read-modify-write (registry, env file) use Update so
// that no concurrent update is lost.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNoChange may be returned by an Update callback to leave the file as it is.
var ErrNoChange = errors.New("no change")

// Update locks path's sidecar lock file, reads the current contents (exists
// is false when the file does not exist), calls fn and atomically replaces the
// file with what fn returns. When fn returns ErrNoChange the file is not
// written and Update returns nil; any other error is returned unchanged and
// the file is not written. The parent directory is created with mode 0700 if
// missing.
func Update(path string, perm fs.FileMode, fn func(old []byte, exists bool) ([]byte, error)) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	unlock, err := lock(path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	old, err := os.ReadFile(path)
	exists := true
	if errors.Is(err, fs.ErrNotExist) {
		exists, err = false, nil
	}
	if err != nil {
		return err
	}
	data, err := fn(old, exists)
	if errors.Is(err, ErrNoChange) {
		return nil
	}
	if err != nil {
		return err
	}
	return WriteFile(path, data, perm)
}

// lock takes an exclusive flock on lockPath (created 0600 if missing) and
// returns the function that releases it. The lock is released by the kernel
// if the process dies.
func lock(lockPath string) (unlock func(), err error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %q: %w", lockPath, err)
	}
	return func() { f.Close() }, nil
}

// TryLock is lock without waiting: it returns ok=false if another process
// holds the lock.
func TryLock(lockPath string) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, false, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == syscall.EWOULDBLOCK {
		f.Close()
		return nil, false, nil
	}
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("lock %q: %w", lockPath, err)
	}
	return func() { f.Close() }, true, nil
}

// WriteFile atomically replaces path with data (mode perm): temp file in the
// same directory, fsync, rename, fsync of the directory. It takes no lock;
// callers that read-modify-write must use Update.
func WriteFile(path string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
