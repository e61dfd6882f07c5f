package moduletest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ReadGolden reads tests/golden/<cfg>/files/** and the links manifest.
func ReadGolden(t testing.TB, cfg string) (files, links map[string]string) {
	t.Helper()
	base := filepath.Join(Root(), "tests", "golden", cfg)
	files = map[string]string{}
	err := filepath.WalkDir(filepath.Join(base, "files"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(base, "files"), p)
		files[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	links = map[string]string{}
	data, err := os.ReadFile(filepath.Join(base, "links"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, target, ok := strings.Cut(line, " -> ")
		if !ok {
			t.Fatalf("%s/links: bad line %q (want 'name -> target')", cfg, line)
		}
		links[name] = target
	}
	return files, links
}
