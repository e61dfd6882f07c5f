// Package userfile reads files from places a user (or any process of that
// user's agent) can write: the registry, the env file, state.json,
// observations, the seed, the agents table, the lock files. Such a path may
// have been swapped for a FIFO, a device, a directory or a symlink to one,
// or grown without bound, so every read here opens without blocking
// (O_NONBLOCK, O_NOCTTY), checks with fstat that it holds a regular file,
// and reads at most a stated limit. Both failures are an *Error wrapping
// ErrNotRegular or ErrTooLarge; the owning package maps them to its own
// "corrupt" error.
package userfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

var (
	// ErrNotRegular: the path names a FIFO, socket, device or directory
	// (or, for a lock file, a symbolic link).
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file holds more than the limit.
	ErrTooLarge = errors.New("file too large")
)

// Error reports a file that is not a regular file or holds more than the
// reader's limit. Err is ErrNotRegular or ErrTooLarge.
type Error struct {
	Path  string
	Kind  string // what the path is instead, for ErrNotRegular: "a FIFO", "a directory", ...
	Size  int64  // for ErrTooLarge: the size seen, or -1 when it grew while being read
	Limit int64  // for ErrTooLarge
	Err   error
}

func (e *Error) Error() string {
	if e.Err == ErrTooLarge {
		if e.Size < 0 {
			return fmt.Sprintf("%q holds more than %d bytes: %v", e.Path, e.Limit, e.Err)
		}
		return fmt.Sprintf("%q holds %d bytes, more than %d: %v", e.Path, e.Size, e.Limit, e.Err)
	}
	return fmt.Sprintf("%q is %s: %v", e.Path, e.Kind, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Bad reports whether err says that a file is not a regular file or is over
// its limit: the failures an owning package reports as a corrupt file.
func Bad(err error) bool {
	return errors.Is(err, ErrNotRegular) || errors.Is(err, ErrTooLarge)
}

// Open opens path read-only without blocking and checks that it is a
// regular file of at most limit bytes. A missing file is an error wrapping
// fs.ErrNotExist.
func Open(path string, limit int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, openError(path, err)
	}
	if err := check(f, path, limit); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Read returns the contents of the regular file at path, at most limit
// bytes (more is ErrTooLarge, even if the file grows while it is read).
func Read(path string, limit int64) ([]byte, error) {
	f, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, &Error{Path: path, Size: -1, Limit: limit, Err: ErrTooLarge}
	}
	return data, nil
}

// OpenLock opens (creating it 0600 if missing) a lock file for flock,
// without blocking, and checks that it is a regular file. A symbolic link
// is refused rather than followed: the holder writes its pid into the lock
// file, which must never land in a file the link points to.
func OpenLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, openError(path, err)
	}
	if err := check(f, path, -1); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openError turns the failure to open a socket (ENXIO), a directory for
// writing (EISDIR) or a symbolic link with O_NOFOLLOW (ELOOP) into
// ErrNotRegular.
func openError(path string, err error) error {
	switch {
	case errors.Is(err, syscall.ELOOP):
		if fi, serr := os.Lstat(path); serr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return &Error{Path: path, Kind: "a symbolic link", Err: ErrNotRegular}
		}
	case errors.Is(err, syscall.ENXIO), errors.Is(err, syscall.EISDIR):
		if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			return &Error{Path: path, Kind: kind(fi.Mode()), Err: ErrNotRegular}
		}
	}
	return err
}

func check(f *os.File, path string, limit int64) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %q: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return &Error{Path: path, Kind: kind(fi.Mode()), Err: ErrNotRegular}
	}
	if limit >= 0 && fi.Size() > limit {
		return &Error{Path: path, Size: fi.Size(), Limit: limit, Err: ErrTooLarge}
	}
	return nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "an irregular file"
}
