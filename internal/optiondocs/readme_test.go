// Package optiondocs keeps the README's option reference equal to the
// module's option declarations.
package optiondocs

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/nixtest"
	"github.com/agent-box/agent-box/internal/textdiff"
)

var update = flag.Bool("update", false, "rewrite the option reference in README.md")

const (
	refBegin = "<!-- BEGIN option reference: generated from modules/src/options.nix by `go test ./internal/optiondocs -update` -->"
	refEnd   = "<!-- END option reference -->"
)

// literal is a literalExpression or literalMD of a declaration.
type literal struct {
	Type string `json:"_type"`
	Text string `json:"text"`
}

// entry is one option of the offline evaluation's optionDocs.
type entry struct {
	Loc         string          `json:"loc"`
	Type        string          `json:"type"`
	Description string          `json:"description"`
	Default     json.RawMessage `json:"default"`
	DefaultText *literal        `json:"defaultText"`
	Example     json.RawMessage `json:"example"`
}

// show renders a declared value or literal as Markdown: a literalMD as its
// text, a literalExpression as code, any other value as the Nix expression
// of that value, in code.
func show(raw json.RawMessage) string {
	var l literal
	if json.Unmarshal(raw, &l) == nil && l.Type != "" {
		if l.Type == "literalMD" {
			return l.Text
		}
		return "`" + l.Text + "`"
	}
	return "`" + nixValue(raw) + "`"
}

// nixValue prints a JSON value as the Nix expression of the same value.
func nixValue(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	var show func(any) string
	show = func(v any) string {
		switch x := v.(type) {
		case nil:
			return "null"
		case bool:
			return strconv.FormatBool(x)
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64)
		case string:
			r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "${", `\${`, "\n", `\n`)
			return `"` + r.Replace(x) + `"`
		case []any:
			if len(x) == 0 {
				return "[ ]"
			}
			parts := make([]string, len(x))
			for i, e := range x {
				parts[i] = show(e)
			}
			return "[ " + strings.Join(parts, " ") + " ]"
		case map[string]any:
			if len(x) == 0 {
				return "{ }"
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var b strings.Builder
			b.WriteString("{ ")
			for _, k := range keys {
				fmt.Fprintf(&b, "%s = %s; ", k, show(x[k]))
			}
			b.WriteString("}")
			return b.String()
		}
		return fmt.Sprint(v)
	}
	return show(v)
}

// optionReference renders the documentation entries as Markdown, in the
// order given (sorted by path).
func optionReference(entries []entry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "### `%s`\n\n%s\n\n", e.Loc, e.Description)
		fmt.Fprintf(&b, "- Type: %s\n", e.Type)
		switch {
		case e.DefaultText != nil:
			raw, _ := json.Marshal(e.DefaultText)
			fmt.Fprintf(&b, "- Default: %s\n", show(raw))
		case e.Default != nil:
			fmt.Fprintf(&b, "- Default: %s\n", show(e.Default))
		default:
			b.WriteString("- Required\n")
		}
		if e.Example != nil {
			fmt.Fprintf(&b, "- Example: %s\n", show(e.Example))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// declared is the offline evaluation's optionDocs of the generated module.
func declared(t *testing.T) []entry {
	t.Helper()
	offline := module.Assemble(t).Offline(t)
	file := filepath.Join(t.TempDir(), "docs.nix")
	if err := os.WriteFile(file, []byte(fmt.Sprintf("(import %q).docs\n", offline)), 0o644); err != nil {
		t.Fatal(err)
	}
	var entries []entry
	if err := nixtest.EvalJSON(t, file, &entries); err != nil {
		t.Fatal(err)
	}
	return entries
}

// TestReadmeOptionReferenceIsTheDeclarations checks that the README's
// option reference is generated from the option declarations embedded in
// the generated module (modules/src/options.nix, through the offline
// evaluation's optionDocs).
func TestReadmeOptionReferenceIsTheDeclarations(t *testing.T) {
	entries := declared(t)
	if len(entries) < 20 {
		t.Fatalf("only %d options documented", len(entries))
	}
	want := refBegin + "\n\n" + optionReference(entries) + refEnd
	readme := filepath.Join(module.Root(), "README.md")
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i, j := strings.Index(text, refBegin), strings.Index(text, refEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the markers %q ... %q", refBegin, refEnd)
	}
	got := text[i : j+len(refEnd)]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(readme, []byte(text[:i]+want+text[j+len(refEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("updated the option reference in README.md: review the diff")
		return
	}
	t.Errorf("README option reference is out of date (-readme +generated):\n%s\nhint: go test ./internal/optiondocs -update",
		textdiff.Explain("README.md", "generated", []byte(got), []byte(want)))
}
