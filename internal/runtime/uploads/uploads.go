// Package uploads stores the files a person uploads on a user's origin in
// that user's ~/uploads (the contract's Uploads.Dir), the directory the
// user's agents see.
//
// Invariants:
//   - everything is opened through an os.Root of the home, then of
//     ~/uploads: no name, symlink or ".." leads out; ~/uploads itself must
//     be a real directory (a symlink there is refused, not followed), and
//     it is created (0700) when missing, so an agent that removed or
//     replaced it gets the next upload in the directory it sees now;
//   - a name is checked, never rewritten: one with a slash, a backslash, a
//     control character, invalid UTF-8, surrounding space, more than
//     NameMaxBytes bytes, the temporary prefix, "." or ".." is refused;
//   - nothing is ever overwritten: a whole upload is hard-linked to its
//     name, and when that name exists to "stem-1.ext", "stem-2.ext", ...;
//     a file appears under its name only whole and synced;
//   - an upload larger than MaxBytes, or one that would make the regular
//     files directly in ~/uploads (plus the uploads in progress) exceed
//     QuotaBytes, is refused and leaves nothing behind.
package uploads

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// The contract's rules.
var (
	DirName      = contract.Uploads.Dir
	MaxBytes     = contract.Uploads.MaxBytes
	QuotaBytes   = contract.Uploads.QuotaBytes
	NameMaxBytes = contract.Uploads.NameMaxBytes
	TempPrefix   = contract.Uploads.TempPrefix
)

// The refusals a person can act on (errors.Is).
var (
	ErrTooLarge = errors.New("too large")
	ErrQuota    = errors.New("quota full")
	ErrBadName  = errors.New("bad name")
	ErrNotDir   = errors.New("not a directory")
)

// staleTemp is the age beyond which a temporary file is a crashed
// upload's leftover and is removed.
const staleTemp = time.Hour

// maxTries bounds the names tried for one upload ("stem-999.ext" last).
const maxTries = 1000

// Dir is one user's ~/uploads. Its zero Max and Quota are the contract's.
type Dir struct {
	Home  string // the user's home, absolute
	Max   int64  // bytes per upload
	Quota int64  // bytes of regular files directly in ~/uploads

	mu       sync.Mutex
	inflight int64 // bytes written by uploads in progress
}

// Stored is one upload as it landed.
type Stored struct {
	Name string // in ~/uploads, maybe not the name asked for
	Path string // absolute, as the agent sees it
	Size int64
}

func (d *Dir) max() int64 {
	if d.Max > 0 {
		return d.Max
	}
	return MaxBytes
}

func (d *Dir) quota() int64 {
	if d.Quota > 0 {
		return d.Quota
	}
	return QuotaBytes
}

// CheckName says why name cannot be an upload's name (nil: it can).
func CheckName(name string) error {
	bad := func(why string) error { return fmt.Errorf("%w: %s", ErrBadName, why) }
	switch {
	case name == "":
		return bad("the name is empty")
	case len(name) > NameMaxBytes:
		return bad(fmt.Sprintf("the name has %d bytes, at most %d are allowed", len(name), NameMaxBytes))
	case !utf8.ValidString(name):
		return bad("the name is not valid UTF-8")
	case name == "." || name == "..":
		return bad("the name is " + name)
	case strings.ContainsAny(name, `/\`):
		return bad("the name contains a slash or a backslash (a file name, not a path)")
	case strings.TrimSpace(name) != name:
		return bad("the name starts or ends with a space")
	case strings.HasPrefix(name, TempPrefix):
		return bad("the name starts with " + TempPrefix + " (the prefix of uploads in progress)")
	}
	for _, r := range name {
		if unicode.IsControl(r) { // valid UTF-8 was checked above
			return bad("the name contains a control character")
		}
	}
	return nil
}

// Store writes r (an upload named name; declared is its announced size,
// -1 if unknown) into ~/uploads. The errors ErrTooLarge, ErrQuota,
// ErrBadName and ErrNotDir are the person's to fix; any other is an I/O
// error.
func (d *Dir) Store(name string, declared int64, r io.Reader) (Stored, error) {
	if err := CheckName(name); err != nil {
		return Stored{}, err
	}
	if declared > d.max() {
		return Stored{}, d.tooLarge()
	}
	up, err := d.open()
	if err != nil {
		return Stored{}, err
	}
	defer up.Close()
	reserve := max(declared, 0)
	if err := d.admit(up, reserve); err != nil {
		return Stored{}, err
	}
	held := reserve
	defer func() { d.release(held) }()

	tmp, f, err := createTemp(up)
	if err != nil {
		return Stored{}, err
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			up.Remove(tmp)
		}
	}()
	w := &quotaWriter{d: d, f: f, up: up, held: &held, max: d.max()}
	n, err := io.Copy(w, r)
	if err != nil {
		if w.err != nil {
			return Stored{}, w.err
		}
		return Stored{}, fmt.Errorf("write %s: %w", d.rel(tmp), err)
	}
	if err := f.Sync(); err != nil {
		return Stored{}, fmt.Errorf("sync %s: %w", d.rel(tmp), err)
	}
	if err := f.Close(); err != nil {
		return Stored{}, fmt.Errorf("close %s: %w", d.rel(tmp), err)
	}
	final, err := publish(up, tmp, name)
	if err != nil {
		return Stored{}, err
	}
	done = true
	if err := up.Remove(tmp); err != nil {
		return Stored{}, fmt.Errorf("remove %s: %w", d.rel(tmp), err)
	}
	if err := syncDir(up); err != nil {
		return Stored{}, err
	}
	return Stored{Name: final, Path: filepath.Join(d.Home, DirName, final), Size: n}, nil
}

// Exists says whether ~/uploads holds a regular file name (not following
// a symlink).
func (d *Dir) Exists(name string) bool {
	if CheckName(name) != nil {
		return false
	}
	home, err := os.OpenRoot(d.Home)
	if err != nil {
		return false
	}
	defer home.Close()
	fi, err := home.Lstat(filepath.Join(DirName, name))
	return err == nil && fi.Mode().IsRegular()
}

func (d *Dir) tooLarge() error {
	return fmt.Errorf("%w: at most %s per file", ErrTooLarge, Size(d.max()))
}

func (d *Dir) rel(name string) string { return "~/" + DirName + "/" + name }

// open returns an os.Root of ~/uploads, the directory the agent sees now,
// created when missing; a symlink or a file there is refused.
func (d *Dir) open() (*os.Root, error) {
	home, err := os.OpenRoot(d.Home)
	if err != nil {
		return nil, fmt.Errorf("open the home: %w", err)
	}
	defer home.Close()
	if err := home.Mkdir(DirName, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create ~/%s: %w", DirName, err)
	}
	fi, err := home.Lstat(DirName)
	if err != nil {
		return nil, fmt.Errorf("~/%s: %w", DirName, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: ~/%s is a %s; move it away and upload again", ErrNotDir, DirName, kind(fi.Mode()))
	}
	up, err := home.OpenRoot(DirName)
	if err != nil {
		return nil, fmt.Errorf("open ~/%s: %w", DirName, err)
	}
	// the directory checked is the one opened (not a symlink swapped in)
	if got, err := up.Stat("."); err != nil || !os.SameFile(fi, got) {
		up.Close()
		return nil, fmt.Errorf("%w: ~/%s changed while it was opened; upload again", ErrNotDir, DirName)
	}
	return up, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsRegular():
		return "file"
	}
	return "special file"
}

// admit takes reserve bytes of the quota for an upload, counting what
// ~/uploads holds now; it removes stale temporary files on the way.
func (d *Dir) admit(up *os.Root, reserve int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	used, err := usage(up)
	if err != nil {
		return err
	}
	if used+d.inflight+reserve > d.quota() {
		return d.quotaFull(used)
	}
	d.inflight += reserve
	return nil
}

func (d *Dir) quotaFull(used int64) error {
	return fmt.Errorf("%w: ~/%s holds %s of its %s; remove files there and upload again", ErrQuota, DirName, Size(used), Size(d.quota()))
}

// grow takes need more bytes of the quota, and up to want when they are
// free (fewer scans of the directory); it returns what it took.
func (d *Dir) grow(up *os.Root, need, want int64) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	used, err := usage(up)
	if err != nil {
		return 0, err
	}
	free := d.quota() - used - d.inflight
	if need > free {
		return 0, d.quotaFull(used)
	}
	n := max(need, min(want, free))
	d.inflight += n
	return n, nil
}

func (d *Dir) release(n int64) {
	d.mu.Lock()
	d.inflight -= n
	d.mu.Unlock()
}

// usage sums the regular files directly in up, uploads in progress left
// out (they are counted as they are written); temporary files older than
// staleTemp are removed.
func usage(up *os.Root) (int64, error) {
	dir, err := up.Open(".")
	if err != nil {
		return 0, fmt.Errorf("read ~/%s: %w", DirName, err)
	}
	defer dir.Close()
	ents, err := dir.ReadDir(-1)
	if err != nil {
		return 0, fmt.Errorf("read ~/%s: %w", DirName, err)
	}
	var used int64
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // gone meanwhile
		}
		if strings.HasPrefix(e.Name(), TempPrefix) {
			if time.Since(fi.ModTime()) > staleTemp {
				up.Remove(e.Name())
			}
			continue
		}
		used += fi.Size()
	}
	return used, nil
}

// quotaWriter writes to f, taking quota in steps and refusing past max.
type quotaWriter struct {
	d       *Dir
	f       *os.File
	up      *os.Root
	held    *int64
	max     int64
	written int64
	err     error // the refusal that stopped the copy
}

// step is how much quota a write takes at once beyond what it holds.
const step = 1 << 20

func (w *quotaWriter) Write(p []byte) (int, error) {
	if w.written+int64(len(p)) > w.max {
		w.err = w.d.tooLarge()
		return 0, w.err
	}
	if need := w.written + int64(len(p)) - *w.held; need > 0 {
		n, err := w.d.grow(w.up, need, min(max(need, step), w.max-*w.held))
		if err != nil {
			w.err = err
			return 0, err
		}
		*w.held += n
	}
	n, err := w.f.Write(p)
	w.written += int64(n)
	return n, err
}

// createTemp creates a new temporary file in up.
func createTemp(up *os.Root) (string, *os.File, error) {
	for range 10 {
		var b [8]byte
		rand.Read(b[:])
		name := TempPrefix + hex.EncodeToString(b[:])
		f, err := up.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("create a file in ~/%s: %w", DirName, err)
		}
		return name, f, nil
	}
	return "", nil, fmt.Errorf("create a file in ~/%s: no free temporary name", DirName)
}

// publish links tmp to name, or to the first free "stem-N.ext".
func publish(up *os.Root, tmp, name string) (string, error) {
	for i := range maxTries {
		cand := Candidate(name, i)
		err := up.Link(tmp, cand)
		if err == nil {
			return cand, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("link ~/%s/%s: %w", DirName, cand, err)
		}
	}
	return "", fmt.Errorf("~/%s already holds %s and %d other files named after it", DirName, name, maxTries-1)
}

// Candidate is the i-th name tried for name: name itself, then
// "stem-i.ext" where ext starts at the first dot after the first byte
// ("a.tar.gz" -> "a-1.tar.gz"), the stem cut (at a rune) to keep the
// result within NameMaxBytes.
func Candidate(name string, i int) string {
	if i == 0 {
		return name
	}
	stem, ext := name, ""
	if j := strings.IndexByte(name[1:], '.'); j >= 0 {
		stem, ext = name[:j+1], name[j+1:]
	}
	suffix := "-" + strconv.Itoa(i) + ext
	for len(stem)+len(suffix) > NameMaxBytes && stem != "" {
		_, size := utf8.DecodeLastRuneInString(stem)
		stem = stem[:len(stem)-size]
	}
	if stem == "" { // an extension alone beyond the limit
		return strconv.Itoa(i)
	}
	return stem + suffix
}

func syncDir(up *os.Root) error {
	dir, err := up.Open(".")
	if err != nil {
		return fmt.Errorf("sync ~/%s: %w", DirName, err)
	}
	defer dir.Close()
	if err := dir.Sync(); err != nil {
		return fmt.Errorf("sync ~/%s: %w", DirName, err)
	}
	return nil
}

// Size is n bytes for a person: "64 MiB", "1.5 KiB", "12 bytes".
func Size(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v, u = v/1024, u+1
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + " " + units[u]
}
