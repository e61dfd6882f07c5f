package repocheck

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/assemble"
	"github.com/agent-box/agent-box/internal/nixtest"
)

const root = "../.."

// walk returns repository files (relative to root) that keep returns true
// for, skipping .git.
func walk(t *testing.T, keep func(rel string, data []byte) bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "vendor" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if keep(filepath.ToSlash(rel), data) {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The go line stays 1.25: nixpkgs builds with its own Go and
// GOTOOLCHAIN=local. Dependencies are test-only tools; a new one needs a
// reason in its commit and here.
func TestGoModPinsGo125AndOnlyTheAgreedDependencies(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var goLine, toolchain string
	var got []string
	inRequire := false
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case inRequire && fields[0] == ")":
			inRequire = false
		case inRequire:
			got = append(got, fields[0])
		case fields[0] == "go" && len(fields) == 2:
			goLine = fields[1]
		case fields[0] == "toolchain":
			toolchain = line
		case fields[0] == "require" && len(fields) > 1 && fields[1] == "(":
			inRequire = true
		case fields[0] == "require" && len(fields) > 1:
			got = append(got, fields[1])
		}
	}
	if goLine != "1.25" {
		t.Errorf("go.mod go line = %q, want exactly 1.25 (go mod edit -go=1.25)", goLine)
	}
	if toolchain != "" {
		t.Errorf("go.mod has %q; buildGoModule uses GOTOOLCHAIN=local", toolchain)
	}
	want := []string{"github.com/google/go-cmp", "github.com/pkg/diff", "golang.org/x/tools"}
	if !slices.Equal(got, want) {
		t.Errorf("go.mod requires %v, want %v", got, want)
	}
}

// Every .nix file parses. A source with include markers is not Nix until
// assembled, so its assembled form (root: the repository) is parsed instead.
func TestEveryNixFileParses(t *testing.T) {
	var withMarkers []string
	files := walk(t, func(rel string, data []byte) bool {
		if !strings.HasSuffix(rel, ".nix") {
			return false
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimLeft(line, " \t"), "@@") {
				withMarkers = append(withMarkers, rel)
				break
			}
		}
		return true
	})
	if len(files) == 0 || len(withMarkers) == 0 {
		t.Fatalf("found %d .nix files, %d with markers", len(files), len(withMarkers))
	}
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(root, f)
		if slices.Contains(withMarkers, f) {
			res, err := assemble.Assemble(assemble.Options{Root: root, Entry: p, Command: "test"})
			if err != nil {
				t.Errorf("%s does not assemble: %v", f, err)
				continue
			}
			p = filepath.Join(dir, strings.ReplaceAll(f, "/", "_"))
			if err := os.WriteFile(p, res.Output, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := nixtest.Parse(t, p); err != nil {
			t.Errorf("%s does not parse: %v", f, err)
		}
	}
}

func TestEveryShellScriptIsShellcheckClean(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Fatalf("shellcheck is required: %v\nhint: run 'make deps'", err)
	}
	files := walk(t, func(rel string, data []byte) bool {
		if strings.Contains(rel, "/testdata/") {
			return false
		}
		first, _, _ := bytes.Cut(data, []byte("\n"))
		return strings.HasSuffix(rel, ".sh") || bytes.HasPrefix(first, []byte("#!")) && bytes.Contains(first, []byte("sh"))
	})
	if len(files) == 0 {
		t.Fatal("found no shell scripts")
	}
	for _, f := range files {
		cmd := exec.Command(sc, "--external-sources", "--source-path=SCRIPTDIR", f)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("shellcheck %s: %v\n%s", f, err, out)
		}
	}
}

// TestLibFilesHaveOneJobEach: no file of the module's pure lib grows past
// 200 lines (a lib file that does is doing more than one job: split it as
// render/*.nix and checks/*.nix are split).
func TestLibFilesHaveOneJobEach(t *testing.T) {
	const max = 200
	files := walk(t, func(rel string, _ []byte) bool {
		return strings.HasPrefix(rel, "modules/src/lib/") && strings.HasSuffix(rel, ".nix")
	})
	if len(files) < 20 {
		t.Fatalf("only %d lib files found", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(data, []byte("\n")); n > max {
			t.Errorf("%s has %d lines; split it (at most %d)", f, n, max)
		}
	}
}
