package assemble

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/nixtest"
	"github.com/agent-box/agent-box/internal/textdiff"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the want and stderr sections of testdata/*.txtar")

// TestAssembleFixtures runs every testdata/*.txtar case.
//
// A case is a txtar archive. Its comment holds directives, one per line:
//
//	entry: PATH            the entry file, relative to src/ (default main.nix)
//	symlink: NAME -> TARGET  create symlink src/NAME pointing at TARGET
//
// Files named src/... form the source root; other files (outside.txt, ...)
// sit beside it, outside the root. Expectations: "want" is the complete
// output (banner included, regeneration command "TEST"); "stderr" is the
// complete error text, paths shown relative to the case directory. A case
// has exactly one of them. Run with -update to rewrite them; read the diff.
//
// Every successful case is also checked independently: the output parses
// with nix-instantiate, every text and directory include evaluates in real
// Nix to exactly the included bytes, every spliced .nix file appears
// verbatim, and assembling again gives identical bytes.
func TestAssembleFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			entry, wantName := "main.nix", ""
			var symlinks [][2]string
			sc := bufio.NewScanner(bytes.NewReader(ar.Comment))
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				switch {
				case strings.HasPrefix(line, "entry: "):
					entry = strings.TrimPrefix(line, "entry: ")
				case strings.HasPrefix(line, "symlink: "):
					name, target, ok := strings.Cut(strings.TrimPrefix(line, "symlink: "), " -> ")
					if !ok {
						t.Fatalf("bad directive %q", line)
					}
					symlinks = append(symlinks, [2]string{name, target})
				}
			}
			for _, f := range ar.Files {
				switch f.Name {
				case "want", "stderr":
					if wantName != "" {
						t.Fatalf("case has both want and stderr")
					}
					wantName = f.Name
					continue
				}
				p := filepath.Join(dir, filepath.FromSlash(f.Name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			root := filepath.Join(dir, "src")
			for _, s := range symlinks {
				p := filepath.Join(root, filepath.FromSlash(s[0]))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(s[1], p); err != nil {
					t.Fatal(err)
				}
			}
			opts := Options{Root: root, Entry: filepath.Join(root, entry), Command: "TEST"}
			res, err := Assemble(opts)
			var gotName string
			var got []byte
			if err != nil {
				gotName = "stderr"
				got = []byte(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "") + "\n")
			} else {
				gotName = "want"
				// The banner says where the sources are; make it stable.
				got = bytes.Replace(res.Output, []byte(filepath.ToSlash(root)), []byte("src"), 1)
			}
			if *update {
				writeExpectation(t, file, ar, gotName, got)
				return
			}
			if gotName != wantName {
				t.Fatalf("assembly produced %s, the case expects %s:\n%s", gotName, wantName, got)
			}
			want := section(ar, wantName)
			if d := textdiff.Explain(wantName, "got", want, got); d != "" {
				t.Errorf("%s differs (-want +got):\n%s\nhint: go test ./internal/assemble -run TestAssembleFixtures -update, then review the diff", wantName, d)
			}
			if res != nil {
				checkIndependently(t, opts, res)
			}
		})
	}
}

func section(ar *txtar.Archive, name string) []byte {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

// writeExpectation replaces the want/stderr section of the archive.
func writeExpectation(t *testing.T, file string, ar *txtar.Archive, name string, data []byte) {
	t.Helper()
	var files []txtar.File
	for _, f := range ar.Files {
		if f.Name != "want" && f.Name != "stderr" {
			files = append(files, f)
		}
	}
	ar.Files = append(files, txtar.File{Name: name, Data: data})
	if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("updated %s (%s)", file, name)
}

// checkIndependently verifies a successful assembly without trusting the
// assembler's own idea of the expected output.
func checkIndependently(t *testing.T, opts Options, res *Result) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.nix")
	if err := os.WriteFile(out, res.Output, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := nixtest.Parse(t, out); err != nil {
		t.Errorf("output does not parse: %v", err)
	}
	again, err := Assemble(opts)
	if err != nil || !bytes.Equal(again.Output, res.Output) {
		t.Errorf("assembling twice differs (err %v)", err)
	}
	var exprs []string
	var wants [][]byte
	var names []string
	for _, s := range res.Spans {
		src := filepath.Join(opts.Root, filepath.FromSlash(s.Path))
		expansion := res.Output[s.Start:s.End]
		switch s.Kind {
		case Splice:
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			checkVerbatim(t, s.Path, data, expansion)
		case Text:
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			exprs = append(exprs, string(expansion))
			wants = append(wants, data)
			names = append(names, s.Path)
		case Dir:
			set := string(expansion)
			files := dirFiles(t, src)
			for _, rel := range files {
				data, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(rel)))
				if err != nil {
					t.Fatal(err)
				}
				exprs = append(exprs, fmt.Sprintf("(%s).%s", set, Quoted([]byte(rel))))
				wants = append(wants, data)
				names = append(names, s.Path+rel)
			}
			// The set holds exactly those names.
			exprs = append(exprs, fmt.Sprintf("builtins.concatStringsSep \"\\n\" (builtins.attrNames (%s))", set))
			wants = append(wants, []byte(strings.Join(files, "\n")))
			names = append(names, s.Path+" (names)")
		}
	}
	if len(exprs) == 0 {
		return
	}
	got, err := nixtest.EvalStrings(t, exprs)
	if err != nil {
		t.Fatalf("evaluating embedded literals: %v", err)
	}
	for i := range got {
		if !bytes.Equal(got[i], wants[i]) {
			t.Errorf("%s: embedded literal evaluates to %q, want %q", names[i], got[i], wants[i])
		}
	}
}

// checkVerbatim proves a spliced file appears byte for byte: the expansion
// holds every non-marker line of the file in order, and a file without
// markers is the expansion exactly.
func checkVerbatim(t *testing.T, name string, src, expansion []byte) {
	t.Helper()
	lines := bytes.SplitAfter(src, []byte("\n"))
	hasMarker := false
	rest := expansion
	for _, l := range lines {
		if bytes.HasPrefix(bytes.TrimLeft(l, " \t"), []byte("@@")) {
			hasMarker = true
			continue
		}
		i := bytes.Index(rest, l)
		if i < 0 {
			t.Errorf("%s: line %q is not in the output verbatim (in order)", name, l)
			return
		}
		rest = rest[i+len(l):]
	}
	if !hasMarker && !bytes.Equal(src, expansion) {
		t.Errorf("%s: spliced bytes differ from the file:\n%s", name, textdiff.Explain("file", "output", src, expansion))
	}
}

// dirFiles lists what a directory include must hold, computed here
// independently of the assembler: regular files, not hidden, not ignored by
// the case's simple ignore patterns (exact base names or "*suffix" globs and
// "dir/" names, which is all the fixtures use).
func dirFiles(t *testing.T, dir string) []string {
	t.Helper()
	var pats []string
	if data, err := os.ReadFile(filepath.Join(dir, IgnoreFile)); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				pats = append(pats, l)
			}
		}
	}
	ignored := func(rel string, isDir bool) bool {
		base := filepath.Base(rel)
		for _, p := range pats {
			d, isDirPat := strings.CutSuffix(p, "/")
			switch {
			case isDirPat && isDir && (d == base || d == rel):
				return true
			case isDirPat:
			case strings.HasPrefix(p, "*") && strings.HasSuffix(base, p[1:]):
				return true
			case p == base || p == rel:
				return true
			}
		}
		return false
	}
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(fi.Name(), ".") || ignored(rel, fi.IsDir()) {
			if fi.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if fi.Mode().IsRegular() {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out) // builtins.attrNames order: by bytes of the full path
	return out
}
