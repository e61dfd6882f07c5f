package contractdocs

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/regen"
)

var update = flag.Bool("update", false, "rewrite the contract's tables in the docs")

// splice replaces the text between block b's markers in doc; ok is false
// when the markers are not there exactly once, in order.
func splice(doc string, b Block) (string, bool) {
	begin, end := Begin(b.Name)+"\n", End(b.Name)+"\n"
	i := strings.Index(doc, begin)
	if i < 0 || strings.Count(doc, begin) != 1 || strings.Count(doc, end) != 1 {
		return doc, false
	}
	j := strings.Index(doc, end)
	if j < i {
		return doc, false
	}
	return doc[:i+len(begin)] + b.Text + doc[j:], true
}

// TestTheDocsTablesAreTheContract: every table of Blocks is in its doc,
// between its markers, exactly as the contract renders it; no doc holds
// a block that Blocks does not render.
func TestTheDocsTablesAreTheContract(t *testing.T) {
	docs := map[string]string{}
	known := map[string]map[string]bool{}
	for _, b := range Blocks() {
		if _, ok := docs[b.File]; !ok {
			data, err := os.ReadFile(filepath.Join(module.Root(), b.File))
			if err != nil {
				t.Fatal(err)
			}
			docs[b.File] = string(data)
			known[b.File] = map[string]bool{}
		}
		known[b.File][b.Name] = true
		got, ok := splice(docs[b.File], b)
		if !ok {
			t.Errorf("%s: want the markers of %q once each:\n%s\n%s", b.File, b.Name, Begin(b.Name), End(b.Name))
			continue
		}
		docs[b.File] = got
	}
	stray := regexp.MustCompile(`<!-- BEGIN contract ([^:]+):`)
	for file, text := range docs {
		for _, m := range stray.FindAllStringSubmatch(text, -1) {
			if !known[file][m[1]] {
				t.Errorf("%s: a block %q that the contract does not render", file, m[1])
			}
		}
		regen.Check(t, module.Root(), file, []byte(text), *update, "go test ./internal/contractdocs -update")
	}
}

// TestBlocksAreTablesWithTheirRows: each block is a Markdown table whose
// rows have as many cells as its header (a "|" in a value is escaped).
func TestBlocksAreTablesWithTheirRows(t *testing.T) {
	for _, b := range Blocks() {
		lines := strings.Split(strings.TrimSuffix(b.Text, "\n"), "\n")
		if len(lines) < 3 {
			t.Errorf("%s: %d lines", b.Name, len(lines))
			continue
		}
		cells := func(l string) int { return len(regexp.MustCompile(`(^|[^\\])\|`).FindAllString(l, -1)) }
		for _, l := range lines[1:] {
			if cells(l) != cells(lines[0]) {
				t.Errorf("%s: %q has %d cells; the header %d", b.Name, l, cells(l)-1, cells(lines[0])-1)
			}
		}
	}
}
