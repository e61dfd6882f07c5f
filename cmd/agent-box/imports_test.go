package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The module embeds cmd/agent-box and internal/runtime without their tests
// and builds them with a require-free go.mod: every non-test file may import
// the standard library and this module only.
func TestRuntimeSourcesImportOnlyTheStandardLibrary(t *testing.T) {
	const self = "github.com/agent-box/agent-box/"
	n := 0
	for _, root := range []string{".", "../../internal/runtime"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			n++
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(p, self+"internal/runtime/") {
					continue
				}
				if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") {
					t.Errorf("%s imports %q: only the standard library and internal/runtime are allowed", path, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 10 {
		t.Errorf("checked only %d files; did the layout change?", n)
	}
}

// The assembler embeds both directories minus what .assemble-ignore lists.
func TestAssembleIgnoreKeepsTestsOutOfTheModule(t *testing.T) {
	for _, p := range []string{".assemble-ignore", "../../internal/runtime/.assemble-ignore"} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != "*_test.go\ntestdata/\n" {
			t.Errorf("%s = %q, want the two lines *_test.go and testdata/", p, data)
		}
	}
}
