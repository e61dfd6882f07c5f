package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValidNameAcceptsOnlyTheContractAlphabet(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true}, {"A-b_9", true}, {strings.Repeat("x", 64), true},
		{"", false}, {strings.Repeat("x", 65), false}, {"a b", false}, {"a/b", false},
		{"..", false}, {"a.b", false}, {"ü", false}, {"a;b", false}, {"$x", false}, {"a\n", false},
	} {
		if got := ValidName(tc.name); got != tc.ok {
			t.Errorf("ValidName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

func TestParseRejectsCorruptDocuments(t *testing.T) {
	for _, tc := range []struct{ name, doc string }{
		{"garbage", "not json"},
		{"empty", ""},
		{"truncated", `{"version": 1, "sessions": [`},
		{"no version", `{"sessions": []}`},
		{"future version", `{"version": 2, "sessions": []}`},
		{"unknown field", `{"version": 1, "sessions": [], "extra": 1}`},
		{"trailing data", `{"version": 1} {}`},
		{"duplicate", `{"version": 1, "sessions": [{"name": "a", "agent": "x", "cwd": "/"}, {"name": "a", "agent": "x", "cwd": "/"}]}`},
		{"invalid name", `{"version": 1, "sessions": [{"name": "a b", "agent": "x", "cwd": "/"}]}`},
		{"relative cwd", `{"version": 1, "sessions": [{"name": "a", "agent": "x", "cwd": "rel"}]}`},
		{"no agent", `{"version": 1, "sessions": [{"name": "a", "cwd": "/"}]}`},
		{"bad tombstone", `{"version": 1, "tombstones": ["../x"]}`},
	} {
		if _, err := parse([]byte(tc.doc)); err == nil {
			t.Errorf("%s: parse(%q) succeeded", tc.name, tc.doc)
		}
	}
}

func TestUpdateReportsCorruptRegistryAndLeavesItByteIdentical(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sessions.json")
	corrupt := []byte("{\"version\": 1,\n  oops")
	if err := os.WriteFile(p, corrupt, 0o600); err != nil {
		t.Fatal(err)
	}
	called := false
	err := Update(context.Background(), p, func(r *Registry) error { called = true; return nil })
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("Update error = %v, want *CorruptError", err)
	}
	if called {
		t.Errorf("Update called fn on a corrupt registry")
	}
	if _, err := Load(p); !errors.As(err, &ce) {
		t.Errorf("Load error = %v, want *CorruptError", err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != string(corrupt) {
		t.Errorf("corrupt registry rewritten: %q", got)
	}
}

func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cfg", "sessions.json")
	const n = 100
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			err := Update(context.Background(), p, func(r *Registry) error {
				return r.Add(Session{Name: fmt.Sprintf("s%03d", i), Agent: "x", Cwd: "/"})
			})
			if err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	r, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Sessions) != n {
		t.Errorf("%d sessions after %d concurrent adds", len(r.Sessions), n)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v %v, want 0600", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Dir(p)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("config dir mode %v %v, want 0700", fi.Mode(), err)
	}
}

func TestRemoveTombstonesAndAddClearsTheTombstone(t *testing.T) {
	r := &Registry{Version: formatVersion}
	if err := r.Add(Session{Name: "a", Agent: "x", Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(Session{Name: "a", Agent: "x", Cwd: "/"}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("second Add = %v, want ErrDuplicate", err)
	}
	if err := r.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove("a"); !errors.Is(err, ErrUnknown) {
		t.Errorf("second Remove = %v, want ErrUnknown", err)
	}
	if diff := cmp.Diff([]string{"a"}, r.Tombstones); diff != "" {
		t.Errorf("tombstones (-want +got):\n%s", diff)
	}
	if err := r.Add(Session{Name: "a", Agent: "x", Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	if len(r.Tombstones) != 0 {
		t.Errorf("re-adding a kept its tombstone: %v", r.Tombstones)
	}
	if err := r.Add(Session{Name: "bad name", Agent: "x", Cwd: "/"}); !errors.Is(err, ErrInvalidName) {
		t.Errorf("Add(bad name) = %v, want ErrInvalidName", err)
	}
}

func TestApplySeedAddsMissingUntombstonedSessionsAndNeverModifies(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &Registry{Version: formatVersion, Tombstones: []string{"gone"}}
	r.Add(Session{Name: "kept", Agent: "old", Args: []string{"x"}, Cwd: "/old", Stopped: true})
	seed := &Seed{Sessions: []SeedSession{
		{Name: "kept", Agent: "new", Args: []string{"y"}, Cwd: "/new"},
		{Name: "gone", Agent: "a"},
		{Name: "fresh", Agent: "a", Args: []string{"--flag"}},
	}}
	added := ApplySeed(r, seed, "/home/u", now)
	if diff := cmp.Diff([]string{"fresh"}, added); diff != "" {
		t.Errorf("added (-want +got):\n%s", diff)
	}
	want := []Session{
		{Name: "kept", Agent: "old", Args: []string{"x"}, Cwd: "/old", Stopped: true},
		{Name: "fresh", Agent: "a", Args: []string{"--flag"}, Cwd: "/home/u", Created: now, Updated: now},
	}
	if diff := cmp.Diff(want, r.Sessions); diff != "" {
		t.Errorf("sessions (-want +got):\n%s", diff)
	}
}

func TestMarshalIsSortedAndParsesBack(t *testing.T) {
	r := &Registry{Version: formatVersion, Tombstones: []string{"z", "b"}}
	r.Add(Session{Name: "m", Agent: "x", Cwd: "/"})
	r.Add(Session{Name: "c", Agent: "x", Cwd: "/", Args: []string{"a b", "$(x)"}})
	data := marshal(r)
	back, err := parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Sessions[0].Name != "c" || back.Tombstones[0] != "b" {
		t.Errorf("not sorted:\n%s", data)
	}
	if string(marshal(back)) != string(data) {
		t.Errorf("marshal(parse(marshal(r))) differs")
	}
	if !strings.Contains(string(data), `"version": 1`) {
		t.Errorf("no version field:\n%s", data)
	}
}

func TestLoadSeedRejectsInvalidEntries(t *testing.T) {
	dir := t.TempDir()
	for _, doc := range []string{
		`{"sessions": [{"name": "a b", "agent": "x"}]}`,
		`{"sessions": [{"name": "a"}]}`,
		`{"sessions": [{"name": "a", "agent": "x", "cwd": "rel"}]}`,
		`{"sessions": [{"name": "a", "agent": "x", "stopped": true}]}`,
	} {
		p := filepath.Join(dir, "seed.json")
		os.WriteFile(p, []byte(doc), 0o644)
		if _, err := LoadSeed(p); err == nil {
			t.Errorf("LoadSeed(%s) succeeded", doc)
		}
	}
}

func TestLoadGivesEachCallerItsOwnCopyAndSeesEveryChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.json")
	add := func(name string) {
		t.Helper()
		err := Update(context.Background(), path, func(r *Registry) error {
			return r.Add(Session{Name: name, Agent: "shell", Args: []string{"a"}, Cwd: "/tmp"})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	add("one")
	first, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	first.Sessions[0].Name = "changed"
	first.Sessions[0].Args[0] = "changed"
	second, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if s := second.Sessions[0]; s.Name != "one" || s.Args[0] != "a" {
		t.Fatalf("a caller's change reached the next Load: %+v", s)
	}
	second.Sessions[0].Args[0] = "changed again" // a copy from the cache, this time
	if again, err := Load(path); err != nil || again.Sessions[0].Args[0] != "a" {
		t.Fatalf("a caller's change reached the cache: %+v, %v", again, err)
	}
	add("two")
	third, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(third.Sessions) != 2 {
		t.Fatalf("Load after a change: %d sessions, want 2", len(third.Sessions))
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil {
		t.Fatal("a corrupt file loaded (from the cache?)")
	}
}

func TestPruneTombstonesDropsOnlyWhatKeepRefuses(t *testing.T) {
	r := &Registry{Version: formatVersion, Tombstones: []string{"seeded", "gone", "live", "gone2"}}
	keep := map[string]bool{"seeded": true, "live": true}
	if n := r.PruneTombstones(func(n string) bool { return keep[n] }); n != 2 {
		t.Errorf("dropped %d, want 2", n)
	}
	if diff := cmp.Diff([]string{"seeded", "live"}, r.Tombstones); diff != "" {
		t.Errorf("tombstones (-want +got):\n%s", diff)
	}
	if n := r.PruneTombstones(func(n string) bool { return keep[n] }); n != 0 {
		t.Errorf("a second prune dropped %d, want 0", n)
	}
}

func TestRemoveBeyondMaxTombstonesIsRefusedSayingWhy(t *testing.T) {
	r := &Registry{Version: formatVersion}
	for i := range MaxTombstones {
		r.Tombstones = append(r.Tombstones, fmt.Sprintf("t%d", i))
	}
	if err := r.Add(Session{Name: "x", Agent: "a", Args: []string{}, Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	err := r.Remove("x")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "removed names (tombstones)") || !strings.Contains(err.Error(), "supervisor prunes") {
		t.Fatalf("Remove = %v, want ErrTooLarge naming the tombstones and the supervisor's pruning", err)
	}
	if _, ok := r.Find("x"); !ok || len(r.Tombstones) != MaxTombstones {
		t.Errorf("a refused remove changed the registry")
	}
	// a name already tombstoned costs nothing: its removal still works
	r.Tombstones[0] = "x"
	if err := r.Remove("x"); err != nil {
		t.Errorf("Remove of a tombstoned name = %v", err)
	}
}
