package moduletest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/nixtest"
	"github.com/agent-box/agent-box/internal/textdiff"
)

const (
	refBegin = "<!-- BEGIN option reference: generated from modules/src/lib/options.nix by `go test ./internal/moduletest -run TestReadmeOptionReference -update` -->"
	refEnd   = "<!-- END option reference -->"
)

type spec struct {
	Type        string          `json:"type"`
	Default     json.RawMessage `json:"default"`
	DefaultText *string         `json:"defaultText"`
	Description string          `json:"description"`
	Example     *string         `json:"example"`
	Options     map[string]spec `json:"options"`
}

var typeNames = map[string]string{
	"bool":              "boolean",
	"str":               "string",
	"int":               "signed integer",
	"nullOr str":        "null or string",
	"nullOr int":        "null or signed integer",
	"listOf str":        "list of string",
	"attrsOf str":       "attribute set of string",
	"package":           "package",
	"listOf package":    "list of package",
	"submodule":         "submodule",
	"attrsOf submodule": "attribute set of (submodule)",
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

// optionReference renders the option specs as Markdown.
func optionReference(specs map[string]spec) string {
	var b strings.Builder
	var walk func(prefix string, specs map[string]spec)
	walk = func(prefix string, specs map[string]spec) {
		names := make([]string, 0, len(specs))
		for n := range specs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			s := specs[n]
			path := prefix + "." + n
			fmt.Fprintf(&b, "### `%s`\n\n%s\n\n", path, s.Description)
			fmt.Fprintf(&b, "- Type: %s\n", typeNames[s.Type])
			switch {
			case s.DefaultText != nil:
				fmt.Fprintf(&b, "- Default: %s\n", *s.DefaultText)
			case s.Default != nil:
				fmt.Fprintf(&b, "- Default: `%s`\n", nixValue(s.Default))
			default:
				b.WriteString("- Required\n")
			}
			if s.Example != nil {
				fmt.Fprintf(&b, "- Example: `%s`\n", *s.Example)
			}
			b.WriteString("\n")
			switch s.Type {
			case "submodule":
				walk(path, s.Options)
			case "attrsOf submodule":
				walk(path+".<name>", s.Options)
			}
		}
	}
	walk("services.agent-box", specs)
	return b.String()
}

// TestReadmeOptionReference checks that the README's option reference is
// generated from the single source of the options (the specs embedded in
// the generated module).
func TestReadmeOptionReference(t *testing.T) {
	m := Load(t)
	dir := t.TempDir()
	m.WriteInclude(t, "modules/src/lib/default.nix", dir, "lib.nix")
	file := filepath.Join(dir, "options.nix")
	if err := os.WriteFile(file, []byte("(import ./lib.nix).options\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var specs map[string]spec
	if err := nixtest.EvalJSON(t, file, &specs); err != nil {
		t.Fatal(err)
	}
	want := refBegin + "\n\n" + optionReference(specs) + refEnd
	readme := filepath.Join(Root(), "README.md")
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
	t.Errorf("README option reference is out of date (-readme +generated):\n%s\nhint: go test ./internal/moduletest -run TestReadmeOptionReference -update",
		textdiff.Explain("README.md", "generated", []byte(got), []byte(want)))
}
