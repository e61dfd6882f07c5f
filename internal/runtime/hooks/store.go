package hooks

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// ErrFull is a delivery that does not fit the hook's quota even after the
// deliveries older than its retention are removed. Nothing is stored.
var ErrFull = errors.New("the hook's storage is full")

// idTime is the time part of a delivery id: UTC, fixed width, so ids sort
// in the order deliveries arrived.
const idTime = "20060102T150405.000000000Z"

// hashLen is how many hex digits of the body's sha256 an id carries; two
// bodies with the same digits are the same delivery (128 bits).
const hashLen = 32

// Suffix is the file name suffix of a stored delivery: <id>.json.
const Suffix = ".json"

// SeenLog is the hidden file in a hook's folder that lists, one id a
// line, every delivery stored within the retention, whether or not its
// file is still there: deduplication outlives a delivery the agent
// removed (a captured delivery replayed later is still a repeat).
const SeenLog = ".seen"

// Delivery is the JSON document stored for each delivery. Body is the raw
// body, byte for byte, when it is JSON (and valid UTF-8); otherwise
// BodyBase64 holds it. So a document is at most 4/3 of its body plus the
// headers (at most MaxDocOverhead in all).
type Delivery struct {
	ID         string            `json:"id"`
	Hook       string            `json:"hook"`
	Received   time.Time         `json:"received"`
	SHA256     string            `json:"sha256"`
	Headers    map[string]string `json:"headers"`
	Body       json.RawMessage   `json:"body,omitempty"`
	BodyBase64 *string           `json:"bodyBase64,omitempty"`
}

type entry struct {
	id   string
	size int64
	at   time.Time
}

// Store is one hook's folder of deliveries. Put is safe for concurrent use.
type Store struct {
	dir       string
	hook      string
	quota     int64
	retention time.Duration
	now       func() time.Time

	// Fault, when set, is called after each step of a write ("synced":
	// the temporary file is on disk; "renamed"; "dirsynced": the name is
	// on disk) and makes the write fail with what it returns. Tests only.
	Fault func(step string) error

	dirf     *os.File
	sync     dirSync
	seenf    *os.File // SeenLog, appended to
	seenSync dirSync  // its fsyncs
	mu       sync.Mutex
	used     int64                    // bytes of the indexed deliveries
	reserved int64                    // bytes of the writes in flight
	entries  []entry                  // the files, by id, oldest first
	seen     []entry                  // every delivery within the retention, by id (size unused)
	byHash   map[string]string        // hash part -> id, of seen
	lines    int                      // lines in SeenLog
	pending  map[string]chan struct{} // hash part -> closed when its write ends
}

// Open opens (creating it 0700 if needed) the folder dir of hook and reads
// what it holds: temporary files of writes that never finished are
// removed, deliveries older than retention are removed, the rest and the
// ids of SeenLog within the retention are indexed by their body's hash,
// so deduplication survives restarts and removals; SeenLog is rewritten
// with only those ids.
func Open(dir, hook string, quota int64, retention time.Duration, now func() time.Time) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("webhook %s: %w", hook, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("webhook %s: %w", hook, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("webhook %s: %s is not a directory", hook, dir)
	}
	s := &Store{dir: dir, hook: hook, quota: quota, retention: retention, now: now,
		byHash: map[string]string{}, pending: map[string]chan struct{}{}}
	if s.dirf, err = os.Open(dir); err != nil {
		return nil, fmt.Errorf("webhook %s: %w", hook, err)
	}
	s.mu.Lock()
	err = s.scanLocked(true)
	if err == nil {
		err = s.loadSeenLocked()
	}
	if err == nil {
		s.pruneLocked()
		err = s.compactLocked()
	}
	s.mu.Unlock()
	if err != nil {
		s.dirf.Close()
		if s.seenf != nil {
			s.seenf.Close()
		}
		return nil, fmt.Errorf("webhook %s: %w", hook, err)
	}
	return s, nil
}

// loadSeenLocked indexes the ids of SeenLog and of the files found.
func (s *Store) loadSeenLocked() error {
	data, err := os.ReadFile(filepath.Join(s.dir, SeenLog))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// one entry per body hash: its newest id
	s.byHash = map[string]string{}
	ids := strings.Split(string(data), "\n")
	for _, e := range s.entries {
		ids = append(ids, e.id)
	}
	for _, id := range ids {
		_, hash, ok := parseID(id) // !ok: a torn or foreign line
		if ok && id > s.byHash[hash] {
			s.byHash[hash] = id
		}
	}
	s.seen = nil
	for _, id := range s.byHash {
		at, _, _ := parseID(id)
		s.seen = append(s.seen, entry{id: id, at: at})
	}
	sort.Slice(s.seen, func(i, j int) bool { return s.seen[i].id < s.seen[j].id })
	return nil
}

// compactLocked rewrites SeenLog with the ids of seen (temporary file,
// fsync, rename, folder fsync) and opens it for appending.
func (s *Store) compactLocked() error {
	var b strings.Builder
	for _, e := range s.seen {
		b.WriteString(e.id + "\n")
	}
	f, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.WriteString(b.String())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(s.dir, SeenLog))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := s.dirf.Sync(); err != nil {
		return err
	}
	nf, err := os.OpenFile(filepath.Join(s.dir, SeenLog), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if s.seenf != nil {
		s.seenf.Close()
	}
	s.seenf, s.lines = nf, len(s.seen)
	return nil
}

// scanLocked (re)builds the index from the folder: every <id>.json file,
// by its name. At Open (removeTemps) the temporary files of writes that
// never finished are removed; later they may be writes in flight.
func (s *Store) scanLocked(removeTemps bool) error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	s.entries, s.used = nil, 0
	for _, de := range ents {
		name := de.Name()
		if strings.HasPrefix(name, ".tmp-") {
			if removeTemps {
				os.Remove(filepath.Join(s.dir, name))
			}
			continue
		}
		id, ok := strings.CutSuffix(name, Suffix)
		at, _, okID := parseID(id)
		if !ok || !okID || !de.Type().IsRegular() {
			continue // not ours: left alone, not counted
		}
		info, err := de.Info()
		if err != nil {
			continue
		}
		s.entries = append(s.entries, entry{id: id, size: info.Size(), at: at})
		s.used += info.Size()
	}
	sort.Slice(s.entries, func(i, j int) bool { return s.entries[i].id < s.entries[j].id })
	return nil
}

// Close releases the folder and SeenLog.
func (s *Store) Close() error {
	s.seenf.Close()
	return s.dirf.Close()
}

// Path is where delivery id is stored.
func (s *Store) Path(id string) string { return filepath.Join(s.dir, id+Suffix) }

// Used is the bytes the stored deliveries take.
func (s *Store) Used() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

func parseID(id string) (time.Time, string, bool) {
	ts, hash, ok := strings.Cut(id, "-")
	if !ok || len(hash) != hashLen || strings.Trim(hash, "0123456789abcdef") != "" {
		return time.Time{}, "", false
	}
	at, err := time.Parse(idTime, ts)
	if err != nil {
		return time.Time{}, "", false
	}
	return at, hash, true
}

// Put stores body durably and returns its id: the temporary file is
// written and fsynced, renamed to <id>.json, the folder fsynced, and the
// id appended to SeenLog and fsynced before Put returns nil. A body
// stored before within the retention, even if its file was removed since,
// is not stored again: Put returns that delivery's id and dup. headers
// are the request's headers worth keeping. On any error nothing is stored.
func (s *Store) Put(body []byte, headers map[string]string) (id string, dup bool, err error) {
	sum := sha256.Sum256(body)
	full := hex.EncodeToString(sum[:])
	key := full[:hashLen]
	at := s.now().UTC()
	id = at.Format(idTime) + "-" + key
	doc, err := encode(Delivery{ID: id, Hook: s.hook, Received: at, SHA256: full, Headers: headers}, body)
	if err != nil {
		return "", false, fmt.Errorf("webhook %s: %w", s.hook, err)
	}

	s.mu.Lock()
	s.pruneLocked() // an expired delivery deduplicates nothing
	for {
		if old, ok := s.byHash[key]; ok {
			s.mu.Unlock()
			return old, true, nil
		}
		ch, ok := s.pending[key]
		if !ok {
			break
		}
		// The same body is being written: its outcome decides.
		s.mu.Unlock()
		<-ch
		s.mu.Lock()
	}
	size := int64(len(doc))
	if s.used+s.reserved+size > s.quota {
		// Deliveries may have been removed from the folder: count again.
		if s.scanLocked(false) == nil {
			s.pruneLocked()
		}
		if s.used+s.reserved+size > s.quota {
			s.mu.Unlock()
			return "", false, ErrFull
		}
	}
	s.reserved += size
	ch := make(chan struct{})
	s.pending[key] = ch
	s.mu.Unlock()

	werr := s.write(id, doc)

	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, key)
	close(ch)
	s.reserved -= size
	if werr != nil {
		return "", false, fmt.Errorf("webhook %s: %w", s.hook, werr)
	}
	if !s.hasFileLocked(id) { // a rescan during the write may have found it
		s.entries = insert(s.entries, entry{id: id, size: size, at: at})
		s.used += size
	}
	s.byHash[key] = id
	s.seen = insert(s.seen, entry{id: id, at: at})
	s.lines++
	if s.lines > 2*len(s.seen)+1024 && len(s.pending) == 0 {
		// Expired ids make up most of the log: rewrite it, but only when
		// no write is in flight (each appends to the open log). A
		// failure leaves the appended log, which still holds every id
		// (only longer), and is tried again at a later delivery.
		s.compactLocked()
	}
	return id, false, nil
}

// insert puts e into es, which is sorted by id.
func insert(es []entry, e entry) []entry {
	i := sort.Search(len(es), func(i int) bool { return es[i].id >= e.id })
	es = append(es, entry{})
	copy(es[i+1:], es[i:])
	es[i] = e
	return es
}

func (s *Store) hasFileLocked(id string) bool {
	i := sort.Search(len(s.entries), func(i int) bool { return s.entries[i].id >= id })
	return i < len(s.entries) && s.entries[i].id == id
}

// write puts doc at <id>.json: temporary file, fsync, rename, folder fsync.
func (s *Store) write(id string, doc []byte) (err error) {
	f, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	final := s.Path(id)
	renamed := false
	defer func() {
		if err != nil {
			if renamed {
				// not known to be on disk: the sender is told to retry,
				// and the retry must not be answered from this file
				os.Remove(final)
			} else {
				os.Remove(tmp)
			}
		}
	}()
	if _, err = f.Write(doc); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.fault("synced")
	}
	if err != nil {
		return err
	}
	if err = os.Rename(tmp, final); err != nil {
		return err
	}
	renamed = true
	if err = s.fault("renamed"); err != nil {
		return err
	}
	if err = s.sync.do(s.dirf); err != nil {
		return fmt.Errorf("fsync %s: %w", s.dir, err)
	}
	if err = s.fault("dirsynced"); err != nil {
		return err
	}
	// The id joins SeenLog only once the delivery is on disk: a record
	// of a delivery that was not stored would turn its retry away.
	if _, err = s.seenf.Write([]byte(id + "\n")); err != nil {
		return fmt.Errorf("append to %s: %w", SeenLog, err)
	}
	if err = s.seenSync.do(s.seenf); err != nil {
		return fmt.Errorf("fsync %s: %w", SeenLog, err)
	}
	return s.fault("seen")
}

// dirSync is a group commit of the folder's fsync: a caller returns nil
// only after an fsync that started after its call succeeded, and one
// fsync serves every caller that was waiting when it started.
type dirSync struct {
	mu        sync.Mutex
	cond      *sync.Cond
	requested uint64 // tickets handed out
	done      uint64 // every ticket up to here is covered by a successful fsync
	running   bool
}

func (d *dirSync) do(f *os.File) error { return d.run(f.Sync) }

func (d *dirSync) run(fsync func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cond == nil {
		d.cond = sync.NewCond(&d.mu)
	}
	d.requested++
	ticket := d.requested
	for d.done < ticket {
		if d.running {
			d.cond.Wait()
			continue
		}
		d.running = true
		covers := d.requested // every caller so far renamed before this fsync starts
		d.mu.Unlock()
		err := fsync()
		d.mu.Lock()
		d.running = false
		d.cond.Broadcast()
		if err != nil {
			return err // the waiters try again themselves
		}
		d.done = max(d.done, covers)
	}
	return nil
}

func (s *Store) fault(step string) error {
	if s.Fault == nil {
		return nil
	}
	return s.Fault(step)
}

// pruneLocked removes the deliveries older than the retention, and
// forgets them (they deduplicate nothing any more).
func (s *Store) pruneLocked() {
	cut := s.now().Add(-s.retention)
	n := 0
	for n < len(s.entries) && s.entries[n].at.Before(cut) {
		e := s.entries[n]
		if err := os.Remove(s.Path(e.id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			break // kept, and still counted
		}
		s.used -= e.size
		n++
	}
	s.entries = s.entries[n:]
	n = 0
	for n < len(s.seen) && s.seen[n].at.Before(cut) {
		if _, hash, _ := parseID(s.seen[n].id); s.byHash[hash] == s.seen[n].id {
			delete(s.byHash, hash)
		}
		n++
	}
	s.seen = s.seen[n:]
}

// encode renders the stored document. A JSON body goes in byte for byte
// (its sha256 is the stored one), after the other fields.
func encode(d Delivery, body []byte) ([]byte, error) {
	switch {
	case utf8.Valid(body) && json.Valid(body):
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(d); err != nil {
			return nil, err
		}
		head := bytes.TrimSuffix(bytes.TrimSpace(buf.Bytes()), []byte("}"))
		doc := make([]byte, 0, len(head)+len(body)+10)
		doc = append(append(append(doc, head...), `,"body":`...), body...)
		return append(doc, "}\n"...), nil
	default:
		b := base64.StdEncoding.EncodeToString(body)
		d.BodyBase64 = &b
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
