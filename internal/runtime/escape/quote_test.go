package escape

import (
	"strings"
	"testing"
)

func TestQuoteEscapesQuotesAndCutsAtMax(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"main", 64, `"main"`},
		{`a"b`, 64, `"a\"b"`},
		{"\x1b[2J", 64, `"\x1b[2J"`},
		{strings.Repeat("x", 100), 4, `"xxxx"... (100 bytes)`},
	} {
		if got := Quote(tc.in, tc.max); got != tc.want {
			t.Errorf("Quote(%q, %d) = %s, want %s", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestShellArgQuotesOnlyWhatAShellWouldInterpret(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/home/alice/.config/agent-box/sessions.json", "/home/alice/.config/agent-box/sessions.json"},
		{"/home/a b/x", `'/home/a b/x'`},
		{"/h/it's", `'/h/it'"'"'s'`},
		{"/h/$(id)", `'/h/$(id)'`},
		{"/h/\x1b[2J", `'/h/\x1b[2J'`},
		{"", "''"},
	} {
		if got := ShellArg(tc.in); got != tc.want {
			t.Errorf("ShellArg(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
