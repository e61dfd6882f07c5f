package uploads

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// newDir is a home with no ~/uploads yet.
func newDir(t *testing.T) *Dir {
	t.Helper()
	return &Dir{Home: t.TempDir(), Max: 1000, Quota: 5000}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// names lists ~/uploads, temporary files included.
func names(t *testing.T, d *Dir) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(d.Home, DirName))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestStoreWritesTheBytesIntoUploadsCreatedWhenMissing(t *testing.T) {
	d := newDir(t)
	body := "shot\x00\xff\r\nbytes"
	got, err := d.Store("screen shot.png", int64(len(body)), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	want := Stored{Name: "screen shot.png", Path: filepath.Join(d.Home, "uploads", "screen shot.png"), Size: int64(len(body))}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Stored (-want +got):\n%s", diff)
	}
	if s := read(t, got.Path); s != body {
		t.Errorf("content %q, want %q", s, body)
	}
	fi, _ := os.Stat(filepath.Join(d.Home, DirName))
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("~/uploads mode %v, want 0700", fi.Mode().Perm())
	}
	fi, _ = os.Stat(got.Path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	if diff := cmp.Diff([]string{"screen shot.png"}, names(t, d)); diff != "" {
		t.Errorf("~/uploads (-want +got):\n%s", diff)
	}
}

func TestStoreNeverOverwritesAndPicksTheNextFreeName(t *testing.T) {
	d := newDir(t)
	for i, want := range []string{"log.tar.gz", "log-1.tar.gz", "log-2.tar.gz"} {
		got, err := d.Store("log.tar.gz", -1, strings.NewReader(strings.Repeat("x", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != want {
			t.Errorf("upload %d named %q, want %q", i, got.Name, want)
		}
	}
	if s := read(t, filepath.Join(d.Home, DirName, "log.tar.gz")); s != "x" {
		t.Errorf("the first upload was overwritten: %q", s)
	}
}

func TestStoreGoesIntoTheUploadsDirectoryTheAgentSeesNow(t *testing.T) {
	d := newDir(t)
	if _, err := d.Store("a", -1, strings.NewReader("1")); err != nil {
		t.Fatal(err)
	}
	up := filepath.Join(d.Home, DirName)
	// the agent removes ~/uploads: the next upload creates it again
	if err := os.RemoveAll(up); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Store("b", -1, strings.NewReader("2")); err != nil {
		t.Fatal(err)
	}
	if s := read(t, filepath.Join(up, "b")); s != "2" {
		t.Errorf("after removal: %q", s)
	}
	// the agent replaces it with a new directory of its own
	if err := os.Rename(up, up+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(up, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Store("c", -1, strings.NewReader("3")); err != nil {
		t.Fatal(err)
	}
	if s := read(t, filepath.Join(up, "c")); s != "3" {
		t.Errorf("after replacement: %q", s)
	}
}

func TestStoreRefusesBadNamesAndWritesNothing(t *testing.T) {
	for _, name := range []string{
		"", ".", "..", "../escape", "a/b", "/etc/passwd", `..\x`, "nul\x00", "line\nbreak", "tab\tx",
		" lead", "trail ", TempPrefix + "x", strings.Repeat("n", 256), "bad\xffutf8", "del\x7f",
	} {
		t.Run(name, func(t *testing.T) {
			d := newDir(t)
			_, err := d.Store(name, 1, strings.NewReader("x"))
			if !errors.Is(err, ErrBadName) {
				t.Fatalf("Store(%q): %v, want ErrBadName", name, err)
			}
			if _, err := os.Lstat(filepath.Join(d.Home, DirName)); !os.IsNotExist(err) {
				t.Errorf("~/uploads exists after a refused name")
			}
			if _, err := os.Lstat(filepath.Join(filepath.Dir(d.Home), "escape")); !os.IsNotExist(err) {
				t.Errorf("a file escaped the home")
			}
		})
	}
	for _, name := range []string{"ok.txt", ".env", "ünïcode 🙂.md", strings.Repeat("n", 255), "-rf"} {
		if err := CheckName(name); err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", name, err)
		}
	}
}

func TestStoreRefusesTooLargeUploadsAndLeavesNothing(t *testing.T) {
	d := newDir(t)
	// announced too large: refused before anything is read
	r := &countingReader{r: strings.NewReader(strings.Repeat("x", 1001))}
	if _, err := d.Store("big", 1001, r); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("declared 1001 > 1000: %v, want ErrTooLarge", err)
	}
	if r.n != 0 {
		t.Errorf("read %d bytes of a refused upload", r.n)
	}
	// not announced: refused at the first byte past the limit
	if _, err := d.Store("big", -1, strings.NewReader(strings.Repeat("x", 1001))); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("1001 bytes streamed: %v, want ErrTooLarge", err)
	}
	if got := names(t, d); len(got) != 0 {
		t.Errorf("left behind: %q", got)
	}
	// exactly the limit fits
	if _, err := d.Store("edge", -1, strings.NewReader(strings.Repeat("x", 1000))); err != nil {
		t.Errorf("1000 bytes: %v", err)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestStoreRefusesAnUploadBeyondTheQuota(t *testing.T) {
	d := newDir(t)
	for i := range 4 {
		if _, err := d.Store("f", -1, strings.NewReader(strings.Repeat("x", 1000))); err != nil {
			t.Fatalf("upload %d: %v", i, err)
		}
	}
	// 4000 held; 1000 more fits exactly, one byte more does not
	if _, err := d.Store("g", 1001, strings.NewReader("")); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%v", err)
	}
	_, err := d.Store("g", -1, strings.NewReader(strings.Repeat("x", 1000)))
	if err != nil {
		t.Fatalf("the last 1000 bytes: %v", err)
	}
	_, err = d.Store("h", -1, strings.NewReader("x"))
	if !errors.Is(err, ErrQuota) {
		t.Fatalf("one byte past the quota: %v, want ErrQuota", err)
	}
	if !strings.Contains(err.Error(), "4.9 KiB") {
		t.Errorf("the message does not say what the quota is: %v", err)
	}
	if got := len(names(t, d)); got != 5 {
		t.Errorf("%d files after a refused upload, want 5", got)
	}
}

func TestUploadsInProgressCountAgainstTheQuota(t *testing.T) {
	d := newDir(t)
	d.Quota = 1500
	pr, pw := io.Pipe()
	done := make(chan error)
	go func() {
		_, err := d.Store("slow", -1, pr)
		done <- err
	}()
	// 1000 bytes of the first upload are written (its reads wait on the pipe)
	if _, err := pw.Write(bytes.Repeat([]byte("x"), 1000)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		d.mu.Lock()
		n := d.inflight
		d.mu.Unlock()
		if n >= 1000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first upload never took its quota")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := d.Store("other", -1, strings.NewReader(strings.Repeat("y", 600))); !errors.Is(err, ErrQuota) {
		t.Errorf("a second upload while 1000 of 1500 bytes are in progress: %v, want ErrQuota", err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inflight != 0 {
		t.Errorf("inflight %d after every upload ended, want 0", d.inflight)
	}
}

func TestStoreNeverFollowsSymlinks(t *testing.T) {
	t.Run("uploads is a symlink", func(t *testing.T) {
		d := newDir(t)
		elsewhere := t.TempDir()
		if err := os.Symlink(elsewhere, filepath.Join(d.Home, DirName)); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Store("x", -1, strings.NewReader("x")); !errors.Is(err, ErrNotDir) {
			t.Fatalf("%v, want ErrNotDir", err)
		}
		if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
			t.Errorf("wrote through the symlink: %v", ents)
		}
	})
	t.Run("uploads is a file", func(t *testing.T) {
		d := newDir(t)
		os.WriteFile(filepath.Join(d.Home, DirName), []byte("agent's"), 0o600)
		if _, err := d.Store("x", -1, strings.NewReader("x")); !errors.Is(err, ErrNotDir) {
			t.Fatalf("%v, want ErrNotDir", err)
		}
	})
	t.Run("a symlink with the upload's name", func(t *testing.T) {
		d := newDir(t)
		victim := filepath.Join(t.TempDir(), "victim")
		os.WriteFile(victim, []byte("keep"), 0o600)
		os.Mkdir(filepath.Join(d.Home, DirName), 0o700)
		if err := os.Symlink(victim, filepath.Join(d.Home, DirName, "report")); err != nil {
			t.Fatal(err)
		}
		got, err := d.Store("report", -1, strings.NewReader("new"))
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "report-1" {
			t.Errorf("stored as %q, want report-1", got.Name)
		}
		if s := read(t, victim); s != "keep" {
			t.Errorf("the symlink's target was written: %q", s)
		}
	})
}

func TestStaleTemporaryFilesAreRemovedAndFreshOnesNotCounted(t *testing.T) {
	d := newDir(t)
	up := filepath.Join(d.Home, DirName)
	os.Mkdir(up, 0o700)
	stale, fresh := filepath.Join(up, TempPrefix+"old"), filepath.Join(up, TempPrefix+"new")
	os.WriteFile(stale, bytes.Repeat([]byte("s"), 4000), 0o600)
	os.WriteFile(fresh, bytes.Repeat([]byte("f"), 4000), 0o600)
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(stale, old, old)
	// 8000 bytes of temporary files: a counted one would refuse this
	if _, err := d.Store("x", -1, strings.NewReader(strings.Repeat("x", 1000))); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale temporary file is still there")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("the fresh temporary file (an upload in progress) was removed: %v", err)
	}
}

func TestCandidate(t *testing.T) {
	long := strings.Repeat("é", 125) + ".txt" // 254 bytes: "-1" needs a rune (2 bytes) cut
	for _, c := range []struct {
		name string
		i    int
		want string
	}{
		{"a.png", 0, "a.png"},
		{"a.png", 1, "a-1.png"},
		{"a.tar.gz", 12, "a-12.tar.gz"},
		{".env", 1, ".env-1"},
		{"README", 3, "README-3"},
		{strings.Repeat("n", 255), 1, strings.Repeat("n", 253) + "-1"},
		{long, 1, strings.Repeat("é", 124) + "-1.txt"},
	} {
		got := Candidate(c.name, c.i)
		if got != c.want {
			t.Errorf("Candidate(%q, %d) = %q, want %q", c.name, c.i, got, c.want)
		}
		if CheckName(got) != nil && CheckName(c.name) == nil {
			t.Errorf("Candidate(%q, %d) = %q, not a valid name", c.name, c.i, got)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 KiB", 1536: "1.5 KiB", 64 << 20: "64 MiB", 512 << 20: "512 MiB", 3 << 30: "3 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
