package assemble

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/nixtest"
)

// hardContents are the inputs an embedded literal must carry byte for byte.
var hardContents = []struct {
	name     string
	content  string
	indented bool // whether the readable indented form is expected
}{
	{"empty", "", false},
	{"only newlines", "\n\n\n", true},
	{"one newline", "\n", true},
	{"plain unit", "[Unit]\nDescription=x\n", true},
	{"two single quotes", "a''b\n", true},
	{"three single quotes", "a'''b\n", true},
	{"four single quotes", "''''\n", true},
	{"quote dollar brace", "a'${b}\n", true},
	{"two quotes dollar brace", "a''${b}\n", true},
	{"dollar brace", "echo ${HOME}\n", true},
	{"dollar dollar brace", "make $${x}\n", true},
	{"three dollars brace", "$$${x}\n", true},
	{"lone dollar at end", "cost: 5$", true},
	{"lone quote at end", "it's'", true},
	{"quote at end of line", "it'\nx\n", true},
	{"backslashes", "a\\b\\\\c\\n\\${x}\n", true},
	{"tab-led lines", "\tfunc() {\n\t\treturn\n}\n", true},
	{"only tab-led lines", "\ta\n\tb\n", true},
	{"every line indented", "  a\n    b\n", false},
	{"some lines indented", "a\n  b\n    c\n", true},
	{"crlf", "a\r\nb\r\n", false},
	{"lone cr", "a\rb\n", false},
	{"no final newline", "a\nb", true},
	{"trailing spaces", "a  \nb \n", true},
	{"spaces-only line", "a\n   \nb\n", true},
	{"spaces-only last line without newline", "a\n   ", false},
	{"only spaces", "   ", false},
	{"spaces then newline", "  \n", false},
	{"non-ASCII", "héllo ☃ 日本\n", true},
	{"invalid UTF-8", "a\xff\xfe\xc3(\n", true},
	{"control byte", "a\x01b\x1b[0m\n", false},
	{"DEL byte", "a\x7fb\n", false},
	{"quote dollar no brace", "'$x' '$'\n", true},
	{"double quotes", "say \"hi\" \"${x}\"\n", true},
	{"antiquote-looking escape", "''\\n ''\\t\n", true},
	{"dollar quote quote", "$''\n", true},
	{"trailing dollar before newline", "a$\n", true},
	{"marker-looking line", "@@include:x@@\n", true},
	{"blank first line", "\nx\n", true},
	{"tab then spaces", "\t  x\n  y\n", true},
}

func TestLiteralChoosesReadableFormWhereItRoundTrips(t *testing.T) {
	for _, tc := range hardContents {
		lit := Literal([]byte(tc.content), 4)
		got := strings.HasPrefix(lit, "''")
		if got != tc.indented {
			t.Errorf("%s: indented form = %v, want %v; literal:\n%s", tc.name, got, tc.indented, lit)
		}
	}
}

// TestLiteralEvaluatesToExactBytesInRealNix is the exactness proof: every
// hard content, rendered at several indentations and in both forms, is
// evaluated by the real Nix evaluator and compared byte for byte.
func TestLiteralEvaluatesToExactBytesInRealNix(t *testing.T) {
	type evalCase struct {
		name    string
		content string
		expr    string
	}
	var cases []evalCase
	for _, tc := range hardContents {
		for _, indent := range []int{0, 2, 7} {
			cases = append(cases, evalCase{fmt.Sprintf("%s/indent=%d", tc.name, indent), tc.content, Literal([]byte(tc.content), indent)})
		}
		cases = append(cases, evalCase{tc.name + "/quoted", tc.content, Quoted([]byte(tc.content))})
		if lit, ok := appendIndented(nil, []byte(tc.content), 3); ok {
			cases = append(cases, evalCase{tc.name + "/indented", tc.content, string(lit)})
		}
	}
	exprs := make([]string, len(cases))
	for i, c := range cases {
		exprs[i] = c.expr
	}
	got, err := nixtest.EvalStrings(t, exprs)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if !bytes.Equal(got[i], []byte(c.content)) {
			t.Errorf("%s: Nix evaluates the literal to %q, want %q; literal:\n%s", c.name, got[i], c.content, c.expr)
		}
	}
}

// FuzzLiteral checks, with real Nix, that any NUL-free content round-trips
// through Literal. `go test` runs the seed corpus; `go test -fuzz
// FuzzLiteral ./internal/assemble` explores further.
func FuzzLiteral(f *testing.F) {
	for _, tc := range hardContents {
		f.Add([]byte(tc.content), uint8(2))
	}
	f.Fuzz(func(t *testing.T, content []byte, indent uint8) {
		if bytes.IndexByte(content, 0) >= 0 {
			t.Skip("NUL cannot be embedded; Assemble rejects it")
		}
		exprs := []string{Literal(content, int(indent%16)), Quoted(content)}
		got, err := nixtest.EvalStrings(t, exprs)
		if err != nil {
			t.Fatalf("literal does not evaluate: %v\n%s", err, exprs[0])
		}
		for i, g := range got {
			if !bytes.Equal(g, content) {
				t.Fatalf("literal %d evaluates to %q, want %q:\n%s", i, g, content, exprs[i])
			}
		}
	})
}
