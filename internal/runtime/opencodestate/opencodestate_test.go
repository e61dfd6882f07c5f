package opencodestate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sqlite3 is the real program (scripts/deps installs it): the lookup is
// only as good as the SQL it runs.
func sqlite3(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Fatalf("sqlite3 is needed (scripts/deps installs Debian's sqlite3): %v", err)
	}
	return bin
}

// makeDB makes a database shaped like OpenCode 1.18.33's (its session
// table, write-ahead log on) holding the given session ids.
func makeDB(t *testing.T, path string, ids ...string) {
	t.Helper()
	sql := "PRAGMA journal_mode=WAL; CREATE TABLE session (id text PRIMARY KEY, parent_id text, directory text NOT NULL);"
	for _, id := range ids {
		sql += "INSERT INTO session VALUES ('" + id + "', NULL, '/home/ada');"
	}
	if out, err := exec.Command(sqlite3(t), path, sql).CombinedOutput(); err != nil {
		t.Fatalf("making %s: %v: %s", path, err, out)
	}
}

func TestHasFindsOnlyTheSessionsTheDatabaseHolds(t *testing.T) {
	bin := sqlite3(t)
	db := filepath.Join(t.TempDir(), "opencode.db")
	makeDB(t, db, "ses_dc54c1ef2ffeNeYz0FoA1pax2E", "ses_other")
	for id, want := range map[string]bool{
		"ses_dc54c1ef2ffeNeYz0FoA1pax2E": true,
		"ses_other":                      true,
		"ses_deleted":                    false,
		"ses_dc54c1ef2ffeNeYz0FoA1pax2":  false,
	} {
		got, err := Has(context.Background(), bin, db, id)
		if err != nil || got != want {
			t.Errorf("Has(%s) = %v, %v; want %v, nil", id, got, err, want)
		}
	}
}

func TestHasWritesNothing(t *testing.T) {
	bin := sqlite3(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "opencode.db")
	makeDB(t, db, "ses_a")
	before, _ := os.Stat(db)
	if err := os.Chmod(db, 0o444); err != nil {
		t.Fatal(err)
	}
	if got, err := Has(context.Background(), bin, db, "ses_a"); err != nil || !got {
		t.Fatalf("Has on a read-only database = %v, %v; want true, nil", got, err)
	}
	after, _ := os.Stat(db)
	if !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
		t.Errorf("the database changed: %v %d -> %v %d", before.ModTime(), before.Size(), after.ModTime(), after.Size())
	}
}

func TestHasFindsNothingWithoutARegularDatabase(t *testing.T) {
	bin := sqlite3(t)
	dir := t.TempDir()
	real := filepath.Join(dir, "real.db")
	makeDB(t, real, "ses_a")
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o644)
	link := filepath.Join(dir, "link.db")
	os.Symlink(real, link)
	for _, db := range []string{filepath.Join(dir, "missing.db"), empty, link, dir} {
		if got, err := Has(context.Background(), bin, db, "ses_a"); err != nil || got {
			t.Errorf("Has(%s) = %v, %v; want false, nil", db, got, err)
		}
	}
}

func TestHasSaysWhenItCannotTell(t *testing.T) {
	bin := sqlite3(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "opencode.db")
	makeDB(t, db, "ses_a")
	other := filepath.Join(dir, "other.db")
	if out, err := exec.Command(bin, other, "CREATE TABLE notes (id text);").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	notDB := filepath.Join(dir, "text.db")
	os.WriteFile(notDB, []byte(strings.Repeat("not a database\n", 100)), 0o644)
	for _, tc := range []struct{ name, bin, db, id, want string }{
		{"no sqlite3 program", filepath.Join(dir, "no-sqlite3"), db, "ses_a", "no-sqlite3"},
		{"no session table", bin, other, "ses_a", "no such table"},
		{"not a database", bin, notDB, "ses_a", "not a database"},
		{"an id that is not one", bin, db, "ses_a' OR 1=1 --", "not an OpenCode session id"},
		{"an empty id", bin, db, "", "not an OpenCode session id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Has(context.Background(), tc.bin, tc.db, tc.id)
			if err == nil || got || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Has = %v, %v; want false and an error holding %q", got, err, tc.want)
			}
		})
	}
}
