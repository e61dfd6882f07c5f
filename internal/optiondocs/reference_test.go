// Package optiondocs keeps the option reference, docs/options.md, equal to
// the module's option declarations.
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
	"github.com/agent-box/agent-box/internal/regen"
)

var update = flag.Bool("update", false, "rewrite the option reference, docs/options.md")

// reference is the option reference's file, generated whole.
const reference = "docs/options.md"

// head opens the reference.
const head = `<!-- Generated from modules/src/options.nix by ` + "`go test ./internal/optiondocs -update`" + `. DO NOT EDIT. -->
# Options

Every option of ` + "`services.agent-box`" + `, from its declaration in ` + "`modules/src/options.nix`" + `
(what the generated module holds). How they fit together: ` + "`docs/using.md`" + `.

`

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
		fmt.Fprintf(&b, "## `%s`\n\n%s\n\n", e.Loc, e.Description)
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

// TestTheOptionReferenceIsTheDeclarations checks that docs/options.md is
// generated from the option declarations embedded in the generated module
// (modules/src/options.nix, through the offline evaluation's optionDocs).
func TestTheOptionReferenceIsTheDeclarations(t *testing.T) {
	entries := declared(t)
	if len(entries) < 20 {
		t.Fatalf("only %d options documented", len(entries))
	}
	want := head + strings.TrimRight(optionReference(entries), "\n") + "\n"
	regen.Check(t, module.Root(), reference, []byte(want), *update, "go test ./internal/optiondocs -update")
}
