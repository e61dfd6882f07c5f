package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// usageParents maps each function of this package that dispatches on a
// word of the command line to the command its words follow ("" for the
// top level).
var usageParents = map[string]string{
	"run":     "",
	"session": "session",
	"add":     "session add",
	"app":     "app",
	"web":     "web",
	"env":     "env",
	"disk":    "disk",
}

// usageExempt are the words the dispatch takes that are spellings of
// another (help and version) rather than commands of their own.
var usageExempt = map[string]bool{"-h": true, "--help": true, "--version": true}

// dispatched returns, per parent command, every word a switch of that
// function compares with (case "x": and case args[0] == "x" && ...).
func dispatched(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			parent, ok := usageParents[fn.Name.Name]
			if !ok {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sw, ok := n.(*ast.SwitchStmt)
				if !ok {
					return true
				}
				for _, st := range sw.Body.List {
					for _, e := range st.(*ast.CaseClause).List {
						ast.Inspect(e, func(n ast.Node) bool {
							if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
								if w, err := strconv.Unquote(lit.Value); err == nil && regexp.MustCompile(`^-{0,2}[a-z][a-z-]*$`).MatchString(w) {
									out[parent] = append(out[parent], w)
								}
							}
							return true
						})
					}
				}
				return false
			})
		}
	}
	return out
}

// TestEveryWordTheCLITakesHasAUsageLine: each command, subcommand and
// option the dispatch accepts appears in agent-box help's table, on a line
// of its parent command, so the synopsis (rendered from that table) cannot
// miss one.
func TestEveryWordTheCLITakesHasAUsageLine(t *testing.T) {
	got := dispatched(t)
	for _, parent := range usageParents {
		if len(got[parent]) == 0 {
			t.Errorf("found no dispatch in the function for %q: the test reads the wrong function", parent)
		}
	}
	lines := strings.Split(usageText, "\n")
	for parent, words := range got {
		for _, w := range words {
			if usageExempt[w] {
				continue
			}
			if !usageHas(lines, parent, w) {
				t.Errorf("the CLI takes %q after %q but agent-box help has no line for it (usageText in cli.go)", w, "agent-box "+parent)
			}
		}
	}
}

// usageHas reports whether a command line of the usage (two spaces, then
// the command) starts with parent and holds w as a word after it.
func usageHas(lines []string, parent, w string) bool {
	word := regexp.MustCompile(`(^|[\s|\[])` + regexp.QuoteMeta(w) + `($|[\s|\]])`)
	for _, l := range lines {
		cmd, ok := strings.CutPrefix(l, "  ")
		if !ok || strings.HasPrefix(cmd, " ") {
			continue
		}
		rest, ok := strings.CutPrefix(cmd, parent)
		if parent != "" && !ok {
			continue
		}
		if parent == "" {
			rest = cmd
			if first, _, _ := strings.Cut(rest, " "); first == w {
				return true
			}
			continue
		}
		if word.MatchString(rest) {
			return true
		}
	}
	return false
}

// TestAWordMissingFromTheUsageIsFound: usageHas is not satisfied by a word
// of another command's line.
func TestAWordMissingFromTheUsageIsFound(t *testing.T) {
	lines := strings.Split("commands:\n  session ls [--json]   list\n  app logs [-n N] NAME  the logs\n", "\n")
	for _, c := range []struct {
		parent, w string
		want      bool
	}{
		{"", "session", true},
		{"", "app", true},
		{"", "ls", false},
		{"session", "ls", true},
		{"session", "--json", true},
		{"session", "logs", false},
		{"app", "logs", true},
		{"app", "rm", false},
	} {
		if got := usageHas(lines, c.parent, c.w); got != c.want {
			t.Errorf("usageHas(%q, %q) = %v, want %v", c.parent, c.w, got, c.want)
		}
	}
}
