// Package atomicfile is the one write path for agent-box's small state files:
// an exclusive flock on a sidecar "<file>.lock", a temp file in the same
// directory, fsync of the file, rename over the target, fsync of the directory.
//
// Readers never take the lock: rename makes every version they can observe
// complete. Writers that read-modify-write (registry, env file) use Update so
// that no concurrent update is lost.
package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// ErrNoChange may be returned by an Update callback to leave the file as it is.
var ErrNoChange = errors.New("no change")

// LockWait is how long Update waits while one other writer holds the lock
// before it gives up with ErrLockTimeout: a writer that holds it that long
// is stuck. While the holder changes (a queue of writers, each done in
// milliseconds: 200 `session add` at once) the wait goes on, up to
// LockQueueWait in all.
const LockWait = 10 * time.Second

// LockQueueWait bounds the whole wait for the lock while other writers
// come and go.
const LockQueueWait = 6 * LockWait

// Shortened by this package's tests.
var (
	lockWait      = LockWait
	lockQueueWait = LockQueueWait
	lockPoll      = 100 * time.Millisecond // how often a waiter reads the holder
)

// ErrLockTimeout: one process held the lock for all of LockWait, or
// writers held it in turn for all of LockQueueWait.
var ErrLockTimeout = errors.New("timed out waiting for the lock")

// Update locks path's sidecar lock file, reads the current contents (at most
// limit bytes, through userfile; exists is false when the file does not
// exist), calls fn and atomically replaces the file with what fn returns.
// When fn returns ErrNoChange the file is not written and Update returns
// nil; any other error is returned unchanged and the file is not written.
// A file (or lock file) that is not a regular file, or a file over limit,
// is returned as the *userfile.Error before fn is called. The parent
// directory is created with mode 0700 if missing. Waiting for the lock ends
// when ctx is done (nothing is written, ctx.Err() is returned) or when one
// holder kept the lock for LockWait, or holders in turn for LockQueueWait
// (ErrLockTimeout, naming the holder's pid when known).
func Update(ctx context.Context, path string, perm fs.FileMode, limit int64, fn func(old []byte, exists bool) ([]byte, error)) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	unlock, err := lock(ctx, path+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	old, err := userfile.Read(path, limit)
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

// lock takes an exclusive flock on lockPath (created 0600 if missing, a
// regular file or an error). The blocking flock runs in its own goroutine,
// so that the wait can end when ctx is done, when one holder keeps the
// lock for LockWait or holders in turn for LockQueueWait: the abandoned
// goroutine then releases the lock as soon as it gets it. The
// holder writes its pid into the lock file, so a timeout can name it. The
// lock is released by the kernel if the process dies.
func lock(ctx context.Context, lockPath string) (unlock func(), err error) {
	if unlock, ok, err := TryLock(lockPath); err != nil || ok {
		return unlock, err
	}
	f, err := openLock(lockPath)
	if err != nil {
		return nil, err
	}
	got := make(chan error, 1)
	go func() {
		for {
			err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
			if err != syscall.EINTR {
				got <- err
				return
			}
		}
	}()
	abandon := func() {
		go func() {
			<-got
			f.Close()
		}()
	}
	// The holder's pid in the lock file tells a stuck holder from a queue:
	// each change of it starts the LockWait again.
	start := time.Now()
	held, since := holder(lockPath), start
	tick := time.NewTicker(lockPoll)
	defer tick.Stop()
	for {
		select {
		case err := <-got:
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("lock %q: %w", lockPath, err)
			}
			recordHolder(f)
			return func() { f.Close() }, nil
		case <-ctx.Done():
			abandon()
			return nil, fmt.Errorf("interrupted while waiting for the lock %q%s, nothing changed: %w", lockPath, holder(lockPath), ctx.Err())
		case now := <-tick.C:
			if h := holder(lockPath); h != held {
				held, since = h, now
			}
			switch {
			case now.Sub(since) >= lockWait:
				abandon()
				return nil, fmt.Errorf("%w %q%s: the same holder for %s", ErrLockTimeout, lockPath, held, lockWait)
			case now.Sub(start) >= lockQueueWait:
				abandon()
				return nil, fmt.Errorf("%w %q%s: other writers held it in turn for %s", ErrLockTimeout, lockPath, held, lockQueueWait)
			}
		}
	}
}

// recordHolder writes this process's pid into the lock file it holds.
func recordHolder(f *os.File) {
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
}

// holder describes the pid recorded in a lock file, if any.
func holder(lockPath string) string {
	data, err := userfile.Read(lockPath, 64)
	if err != nil {
		return ""
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return ""
	}
	return fmt.Sprintf(" (held by pid %d)", pid)
}

// TryLock is lock without waiting: it returns ok=false if another process
// holds the lock. The holder's pid is written into the lock file.
func TryLock(lockPath string) (unlock func(), ok bool, err error) {
	f, err := openLock(lockPath)
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
	recordHolder(f)
	return func() { f.Close() }, true, nil
}

// openLock opens lockPath through userfile.OpenLock. A lock file that is not
// a regular file is returned as the *userfile.Error itself (it names the
// path), so that the owning package can report it as corrupt.
func openLock(lockPath string) (*os.File, error) {
	f, err := userfile.OpenLock(lockPath)
	if err != nil && !userfile.Bad(err) {
		return nil, fmt.Errorf("lock %q: %w", lockPath, err)
	}
	return f, err
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
