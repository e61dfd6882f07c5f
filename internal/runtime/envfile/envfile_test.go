package envfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKeysAreShellIdentifiersOnly(t *testing.T) {
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{"A", true}, {"_", true}, {"a_B9", true}, {"ANTHROPIC_API_KEY", true},
		{"", false}, {"9A", false}, {"A-B", false}, {"A B", false}, {"A=B", false}, {"Ä", false}, {"A\n", false},
	} {
		if got := validKey(tc.key); got != tc.ok {
			t.Errorf("validKey(%q) = %v, want %v", tc.key, got, tc.ok)
		}
	}
}

func TestSetAndLoadRoundTripValuesByteExact(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cfg", "env")
	vars := []Var{
		{"SPACES", "  a  b  "}, {"QUOTES", `'x' "y"`}, {"SUBST", "$(id) ${HOME} `id`"},
		{"EQ", "a=b="}, {"PCT", "100%"}, {"UNI", "日本語 ✓"}, {"EMPTY", ""}, {"HASH", "#x"}, {"CR", "a\rb"},
	}
	for _, v := range vars {
		if err := Set(context.Background(), p, v.Key, v.Value); err != nil {
			t.Fatal(err)
		}
	}
	if err := Set(context.Background(), p, "SPACES", "replaced"); err != nil {
		t.Fatal(err)
	}
	vars[0].Value = "replaced"
	got, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(vars, got); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v %v, want 0600", fi.Mode(), err)
	}
}

func TestSetRejectsInvalidKeysAndValues(t *testing.T) {
	p := filepath.Join(t.TempDir(), "env")
	if err := Set(context.Background(), p, "1X", "v"); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("Set(1X) = %v, want ErrInvalidKey", err)
	}
	for _, v := range []string{"a\nb", "a\n", "nul\x00"} {
		if err := Set(context.Background(), p, "K", v); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("Set(K, %q) = %v, want ErrInvalidValue", v, err)
		}
	}
	if _, err := os.Stat(p); err == nil {
		t.Errorf("rejected Set created the file")
	}
}

func TestRemoveDeletesKeyKeepsCommentsAndReportsUnknown(t *testing.T) {
	p := filepath.Join(t.TempDir(), "env")
	os.WriteFile(p, []byte("# secrets\nA=1\n\nB=2\nA=3\n"), 0o600)
	if err := Remove(context.Background(), p, "A"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != "# secrets\n\nB=2\n" {
		t.Errorf("after Remove: %q", got)
	}
	if err := Remove(context.Background(), p, "A"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("Remove of a missing key = %v, want ErrUnknownKey", err)
	}
}

func TestLoadReportsSyntaxErrorsWithLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "env")
	os.WriteFile(p, []byte("A=1\nexport B=2\n"), 0o600)
	_, err := Load(p)
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 2 {
		t.Fatalf("Load = %v, want a SyntaxError on line 2", err)
	}
	if err := Set(context.Background(), p, "C", "3"); !errors.As(err, &se) {
		t.Errorf("Set on a broken file = %v, want SyntaxError", err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != "A=1\nexport B=2\n" {
		t.Errorf("broken file rewritten: %q", got)
	}
}

func TestMergeLetsEnvFileWinOverInheritedEnvironment(t *testing.T) {
	base := []string{"PATH=/bin", "TOKEN=unit", "HOME=/h"}
	got := Merge(base, []Var{{"TOKEN", "file"}, {"NEW", "n"}, {"TOKEN", "file2"}})
	want := []string{"PATH=/bin", "TOKEN=file2", "HOME=/h", "NEW=n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Merge (-want +got):\n%s", diff)
	}
}

func TestKeysListsEachKeyOnceInFileOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(path, []byte("# c\nB=1\nA=2\nB=3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := Keys(path)
	if err != nil || !cmp.Equal(keys, []string{"B", "A"}) {
		t.Errorf("Keys = %q, %v; want B,A", keys, err)
	}
	if keys, err := Keys(filepath.Join(t.TempDir(), "none")); err != nil || keys != nil {
		t.Errorf("a missing file: %q, %v", keys, err)
	}
}
