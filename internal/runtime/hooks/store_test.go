package hooks

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond) // every delivery its own instant
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newClock() *clock { return &clock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)} }

func open(t *testing.T, dir string, quota int64, c *clock) *Store {
	t.Helper()
	s, err := Open(dir, "gh", quota, time.Hour, c.now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// files lists dir: every name, temporary files included, but SeenLog
// (seenIDs reads it).
func files(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range ents {
		if e.Name() != SeenLog {
			n = append(n, e.Name())
		}
	}
	sort.Strings(n)
	return n
}

func read(t *testing.T, path string) Delivery {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d Delivery
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, data)
	}
	return d
}

func TestPutStoresTheBodyWithItsHeadersAndHashBeforeReturning(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		check      func(Delivery) error
	}{
		{"json", "{ \"action\": \"created\",\n  \"comment\": {\"body\": \"<b>hi</b> & bye\"} }", func(d Delivery) error {
			// byte for byte: the agent can check the stored hash
			if string(d.Body) != "{ \"action\": \"created\",\n  \"comment\": {\"body\": \"<b>hi</b> & bye\"} }" {
				return fmt.Errorf("body %s", d.Body)
			}
			if sum := sha256.Sum256(d.Body); hex.EncodeToString(sum[:]) != d.SHA256 {
				return fmt.Errorf("the stored body's sha256 is not the stored hash")
			}
			return nil
		}},
		{"form", "payload=a%20b&x=1\n", func(d Delivery) error {
			if d.Body != nil || d.BodyBase64 == nil || *d.BodyBase64 != "cGF5bG9hZD1hJTIwYiZ4PTEK" {
				return fmt.Errorf("body %s base64 %v", d.Body, d.BodyBase64)
			}
			return nil
		}},
		{"JSON that is not UTF-8", "\"\xff\"", func(d Delivery) error {
			if d.Body != nil || d.BodyBase64 == nil || *d.BodyBase64 != "Iv8i" {
				return fmt.Errorf("body %q base64 %v", d.Body, d.BodyBase64)
			}
			return nil
		}},
		{"binary", "\xff\x00\xfe", func(d Delivery) error {
			if d.BodyBase64 == nil || *d.BodyBase64 != "/wD+" {
				return fmt.Errorf("base64 %v", d.BodyBase64)
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "gh")
			s := open(t, dir, 1<<20, newClock())
			id, dup, err := s.Put([]byte(tc.body), map[string]string{"X-GitHub-Event": "issue_comment"})
			if err != nil || dup {
				t.Fatalf("Put = %q, %v, %v", id, dup, err)
			}
			if got := files(t, dir); !cmp.Equal(got, []string{id + ".json"}) {
				t.Fatalf("folder holds %q, want only %s.json", got, id)
			}
			fi, _ := os.Stat(filepath.Join(dir, id+".json"))
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", fi.Mode().Perm())
			}
			d := read(t, s.Path(id))
			if d.ID != id || d.Hook != "gh" || d.Headers["X-GitHub-Event"] != "issue_comment" || !strings.HasPrefix(id, "20261201T120000.") {
				t.Errorf("stored %+v", d)
			}
			if !strings.HasSuffix(id, "-"+d.SHA256[:32]) || len(d.SHA256) != 64 {
				t.Errorf("id %s does not end in the body's hash %s", id, d.SHA256)
			}
			if err := tc.check(d); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestARepeatedBodyIsNotStoredAgainAndGetsTheStoredIDAfterARestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gh")
	c := newClock()
	s := open(t, dir, 1<<20, c)
	id, _, err := s.Put([]byte(`{"n":1}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	id2, dup, err := s.Put([]byte(`{"n":1}`), map[string]string{"X-GitHub-Delivery": "fresh-id"})
	if err != nil || !dup || id2 != id {
		t.Fatalf("repeat: %q, %v, %v; want %q, true", id2, dup, err, id)
	}
	s.Close()
	s2 := open(t, dir, 1<<20, c)
	id3, dup, err := s2.Put([]byte(`{"n":1}`), nil)
	if err != nil || !dup || id3 != id {
		t.Fatalf("after reopening: %q, %v, %v; want %q, true", id3, dup, err, id)
	}
	if n := len(files(t, dir)); n != 1 {
		t.Errorf("%d files, want 1", n)
	}
	if _, dup, _ := s2.Put([]byte(`{"n":2}`), nil); dup {
		t.Error("another body was taken for a repeat")
	}
}

func TestAFullQuotaRefusesAndStoresNothingUntilOldDeliveriesExpire(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gh")
	c := newClock()
	s := open(t, dir, 700, c) // room for two of these documents (about 300 bytes each)
	var err error
	stored := 0
	for i := 0; i < 10 && err == nil; i++ {
		if _, _, err = s.Put([]byte(fmt.Sprintf(`{"pad":"%0100d"}`, i)), nil); err == nil {
			stored++
		}
	}
	if !errors.Is(err, ErrFull) || stored != 2 {
		t.Fatalf("filling a 700-byte quota: %d stored, then %v; want 2, then ErrFull", stored, err)
	}
	full := files(t, dir)
	_, _, err = s.Put([]byte(`{"pad":"another"}`), nil)
	if !errors.Is(err, ErrFull) {
		t.Fatalf("a full store: %v, want ErrFull", err)
	}
	if got := files(t, dir); !cmp.Equal(got, full) {
		t.Errorf("a refused delivery changed the folder: %q, was %q", got, full)
	}
	c.advance(2 * time.Hour) // past the retention of 1h
	id, _, err := s.Put([]byte(`{"pad":"after expiry"}`), nil)
	if err != nil {
		t.Fatalf("after the retention: %v", err)
	}
	if got := files(t, dir); !cmp.Equal(got, []string{id + ".json"}) {
		t.Errorf("expired deliveries not removed: %q", got)
	}
	if u := s.Used(); u != int64(len(mustRead(t, s.Path(id)))) {
		t.Errorf("Used() = %d after expiry, want the one file's size", u)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestADeliveryRemovedFromTheFolderFreesItsQuota(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gh")
	s := open(t, dir, 700, newClock()) // room for two of these
	body := func(n int) []byte { return []byte(fmt.Sprintf(`{"n":%d,"pad":"%0100d"}`, n, 0)) }
	one, _, err := s.Put(body(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Put(body(2), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Put(body(3), nil); !errors.Is(err, ErrFull) {
		t.Fatalf("a third delivery: %v, want ErrFull", err)
	}
	// the agent handled one and removed it
	if err := os.Remove(s.Path(one)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Put(body(3), nil); err != nil {
		t.Fatalf("after a removal: %v, want it stored", err)
	}
}

// seenIDs is SeenLog, line by line.
func seenIDs(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, SeenLog))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

// TestARemovedDeliveryStillDeduplicatesUntilItsRetentionEnds: fault 4 of
// the attack (issue 17). The agent handled a delivery and removed it; the
// same body replayed (a captured delivery under a fresh delivery id) is a
// repeat, also after a restart, and stores nothing; after the retention it
// is a new delivery.
func TestARemovedDeliveryStillDeduplicatesUntilItsRetentionEnds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gh")
	c := newClock()
	s := open(t, dir, 1<<20, c)
	one, _, _ := s.Put([]byte(`{"n":1}`), nil)
	if err := os.Remove(s.Path(one)); err != nil {
		t.Fatal(err)
	}
	again, dup, err := s.Put([]byte(`{"n":1}`), map[string]string{"X-Github-Delivery": "replayed"})
	if err != nil || !dup || again != one {
		t.Fatalf("the removed body again: %q %v %v; want %q as a repeat", again, dup, err, one)
	}
	if got := files(t, dir); len(got) != 0 {
		t.Errorf("the replay stored %q", got)
	}
	s.Close()
	c.advance(30 * time.Minute)
	s2 := open(t, dir, 1<<20, c)
	if again, dup, err := s2.Put([]byte(`{"n":1}`), nil); err != nil || !dup || again != one {
		t.Fatalf("after a restart: %q %v %v; want %q as a repeat", again, dup, err, one)
	}
	c.advance(31 * time.Minute) // past the retention of 1h
	late, dup, err := s2.Put([]byte(`{"n":1}`), nil)
	if err != nil || dup || late == one {
		t.Fatalf("after the retention: %q %v %v; want a new delivery", late, dup, err)
	}
	if got := files(t, dir); !cmp.Equal(got, []string{late + ".json"}) {
		t.Errorf("folder %q", got)
	}
}

// TestTheSeenLogHoldsTheRetentionOnly: Open rewrites SeenLog with the ids
// within the retention (of files and of removed deliveries alike), so it
// does not grow without end; torn and foreign lines are dropped.
func TestTheSeenLogHoldsTheRetentionOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gh")
	c := newClock()
	s := open(t, dir, 1<<20, c)
	old, _, _ := s.Put([]byte(`{"old":1}`), nil)
	c.advance(40 * time.Minute)
	removed, _, _ := s.Put([]byte(`{"removed":1}`), nil)
	kept, _, _ := s.Put([]byte(`{"kept":1}`), nil)
	os.Remove(s.Path(removed))
	s.Close()
	f, _ := os.OpenFile(filepath.Join(dir, SeenLog), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("not-an-id\n20261201T13") // a foreign line and a torn one
	f.Close()
	c.advance(30 * time.Minute) // old is 70 min old
	open(t, dir, 1<<20, c)
	if got, want := seenIDs(t, dir), []string{removed, kept}; !cmp.Equal(got, want) {
		t.Errorf("%s after Open: %q, want %q (not %s)", SeenLog, got, want, old)
	}
	if fi, err := os.Stat(filepath.Join(dir, SeenLog)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v %v, want mode 0600", SeenLog, fi.Mode(), err)
	}
}

// TestCompactingTheSeenLogWaitsForTheWritesInFlight: the log is rewritten
// once expired ids make up most of it, but not under a write that is about
// to append to it: that id would go to the replaced file, or fail. The
// log's order shows which ran first: a compaction after both writes
// leaves the ids sorted; one under the held write puts the fast id first.
func TestCompactingTheSeenLogWaitsForTheWritesInFlight(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gh")
	c := newClock()
	s := open(t, dir, 64<<20, c)
	for i := range 1100 {
		if _, _, err := s.Put([]byte(fmt.Sprintf(`{"old":%d}`, i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	c.advance(2 * time.Hour) // every id in the log has expired
	held, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool // only the first write waits (sync.Once would hold the second too)
	s.Fault = func(step string) error {
		if step == "dirsynced" && first.CompareAndSwap(false, true) {
			close(held)
			<-release
		}
		return nil
	}
	var slow string
	var slowErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		slow, _, slowErr = s.Put([]byte(`{"slow":1}`), nil)
	}()
	<-held // on disk, its id not yet appended
	fast, _, err := s.Put([]byte(`{"fast":1}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	<-done
	if slowErr != nil {
		t.Fatalf("the write in flight: %v", slowErr)
	}
	if got, want := seenIDs(t, dir), []string{slow, fast}; !cmp.Equal(got, want) {
		t.Errorf("%s holds %d ids (the first: %q), want %q", SeenLog, len(got), got[:min(len(got), 3)], want)
	}
}

func TestABodyAfterItsRetentionIsANewDelivery(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gh")
	c := newClock()
	s := open(t, dir, 1<<20, c)
	first, _, _ := s.Put([]byte(`{"n":1}`), nil)
	c.advance(2 * time.Hour) // past the retention of 1h
	second, dup, err := s.Put([]byte(`{"n":1}`), nil)
	if err != nil || dup || second == first {
		t.Fatalf("after the retention: %q %v %v; want a new delivery", second, dup, err)
	}
	if got := files(t, dir); !cmp.Equal(got, []string{second + ".json"}) {
		t.Errorf("folder %q, want only the new delivery", got)
	}
}

func TestOpenRemovesUnfinishedWritesAndExpiredDeliveriesAndLeavesOtherFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gh")
	c := newClock()
	s := open(t, dir, 1<<20, c)
	old, _, _ := s.Put([]byte(`{"old":true}`), nil)
	c.advance(50 * time.Minute)
	fresh, _, _ := s.Put([]byte(`{"fresh":true}`), nil)
	s.Close()
	for _, n := range []string{".tmp-123", "notes.txt", "x.json"} {
		os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600)
	}
	c.advance(20 * time.Minute) // old is 70 min old, fresh 20
	s2 := open(t, dir, 1<<20, c)
	want := []string{fresh + ".json", "notes.txt", "x.json"}
	if got := files(t, dir); !cmp.Equal(got, want) {
		t.Errorf("after Open: %q, want %q (old %s)", got, want, old)
	}
	if _, dup, _ := s2.Put([]byte(`{"old":true}`), nil); dup {
		t.Error("an expired delivery still deduplicates")
	}
}

func TestAFailedWriteStepStoresNothingAndARetryStores(t *testing.T) {
	for _, step := range []string{"synced", "renamed", "dirsynced", "seen"} {
		t.Run(step, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "gh")
			s := open(t, dir, 1<<20, newClock())
			s.Fault = func(got string) error {
				if got == step {
					return errors.New("injected")
				}
				return nil
			}
			if _, _, err := s.Put([]byte(`{"a":1}`), nil); err == nil {
				t.Fatal("Put succeeded through a failed step")
			}
			if got := files(t, dir); len(got) != 0 {
				t.Fatalf("a failed write left %q", got)
			}
			if s.Used() != 0 {
				t.Errorf("Used() = %d after a failed write", s.Used())
			}
			s.Fault = nil
			id, dup, err := s.Put([]byte(`{"a":1}`), nil)
			if err != nil || dup {
				t.Fatalf("retry: %q %v %v (a failed write must not be remembered)", id, dup, err)
			}
			if got := files(t, dir); !cmp.Equal(got, []string{id + ".json"}) {
				t.Errorf("after the retry: %q", got)
			}
		})
	}
}

func TestConcurrentPutsLoseNoneAndStoreARepeatedBodyOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gh")
	s := open(t, dir, 64<<20, newClock())
	var wg sync.WaitGroup
	ids := make([]string, 150)
	errs := make([]error, 150)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"n":%d}`, i)
			if i >= 100 {
				body = `{"same":true}`
			}
			ids[i], _, errs[i] = s.Put([]byte(body), nil)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	for i := 101; i < 150; i++ {
		if ids[i] != ids[100] {
			t.Fatalf("the same body got ids %s and %s", ids[100], ids[i])
		}
	}
	got := files(t, dir)
	if len(got) != 101 {
		t.Fatalf("%d files, want 101", len(got))
	}
	for _, id := range ids {
		if _, err := os.Stat(s.Path(id)); err != nil {
			t.Errorf("acknowledged %s is not stored: %v", id, err)
		}
	}
}

func BenchmarkPut(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "gh")
	if d := os.Getenv("AGENT_BOX_HOOK_BENCH_DIR"); d != "" {
		dir = filepath.Join(d, fmt.Sprintf("bench-%d", time.Now().UnixNano()))
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	s, err := Open(dir, "gh", 1<<40, time.Hour, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	body := []byte(`{"action":"created","pad":"` + strings.Repeat("x", 4000) + `"}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		body[len(body)-3] = byte('a' + i%26)
		body[len(body)-4] = byte('a' + i/26%26)
		body[len(body)-5] = byte('a' + i/676%26)
		if _, _, err := s.Put(append([]byte(nil), body...), nil); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDirSyncReturnsOnlyAfterAnFsyncThatStartedAfterTheCall(t *testing.T) {
	// The first fsync holds until all 64 callers wait, so the second one
	// starts on behalf of the other 63; it fails, and they must not take
	// that for success: each returns only after an fsync that started
	// after its call succeeded (or with the error of one it ran itself).
	const callers = 64
	var d dirSync
	var mu sync.Mutex
	var clock, syncs int
	var okStarts []int // logical times at which a successful fsync started
	waiting := func() uint64 {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.requested
	}
	fsync := func() error {
		mu.Lock()
		clock++
		start := clock
		syncs++
		n := syncs
		mu.Unlock()
		switch n {
		case 1:
			for waiting() < callers {
				time.Sleep(time.Millisecond)
			}
		case 2:
			return errors.New("injected")
		}
		mu.Lock()
		okStarts = append(okStarts, start)
		mu.Unlock()
		return nil
	}
	var wg sync.WaitGroup
	results := make(chan error, callers)
	failed := make(chan struct{}, callers)
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			clock++
			called := clock
			mu.Unlock()
			if err := d.run(fsync); err != nil {
				failed <- struct{}{}
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range okStarts {
				if s > called {
					return
				}
			}
			results <- fmt.Errorf("a caller at %d returned without an fsync started after it (successful starts %v)", called, okStarts)
		}()
	}
	wg.Wait()
	close(results)
	for err := range results {
		t.Error(err)
	}
	if len(failed) != 1 {
		t.Errorf("%d callers got the failed fsync's error, want exactly the one that ran it", len(failed))
	}
	if syncs > 4 {
		t.Errorf("%d fsyncs for %d concurrent callers: not shared", syncs, callers)
	}
}

func TestADocumentIsAtMostFourThirdsOfItsBodyPlusTheOverhead(t *testing.T) {
	// The worst headers keptHeaders lets through: the most of them, the
	// longest names, the longest values in the bytes JSON escapes most
	// (invalid UTF-8 becomes a 6-byte \ufffd).
	headers := map[string]string{}
	for i := 0; i < MaxKeptHeaders; i++ {
		name := fmt.Sprintf("X-%0*d", MaxHeaderName-2, i)
		headers[name] = strings.Repeat("\xff", MaxHeaderValue)
	}
	for _, n := range []int{0, 1, 2, 3, 1000, 1 << 20} {
		for _, body := range [][]byte{bytes.Repeat([]byte{0}, n), []byte(`"` + strings.Repeat("x", max(n-2, 0)) + `"`)} {
			doc, err := encode(Delivery{ID: strings.Repeat("i", 67), Hook: strings.Repeat("h", 64), Received: time.Now(), SHA256: strings.Repeat("0", 64), Headers: headers}, body)
			if err != nil {
				t.Fatal(err)
			}
			limit := int64(len(body))*4/3 + 4 + MaxDocOverhead
			if int64(len(doc)) > limit {
				t.Errorf("a %d-byte body makes a %d-byte document, over %d", len(body), len(doc), limit)
			}
			if MinQuota(int64(len(body))) < int64(len(doc)) {
				t.Errorf("MinQuota(%d) = %d cannot hold its %d-byte document", len(body), MinQuota(int64(len(body))), len(doc))
			}
		}
	}
}
