package escape

import "testing"

func TestStringEscapesWhatATerminalActsOnAndKeepsText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain name_1", "plain name_1"},
		{"/home/alice/src", "/home/alice/src"},
		{"ünïcødé ☃ 日本", "ünïcødé ☃ 日本"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"a\nb\rc\td", `a\nb\rc\td`},
		{"bell\x07 del\x7f nul\x00", `bell\x07 del\x7f nul\x00`},
		{"c1 \u009b2J", `c1 \u009b2J`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"rtl \u202eevil", `rtl \u202eevil`},
		{`back\slash`, `back\\slash`},
		{"", ""},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestBytesCutsLongInputAndSaysHowLong(t *testing.T) {
	if got, want := Bytes([]byte("restart-all"), 64), "restart-all"; got != want {
		t.Errorf("short: %q, want %q", got, want)
	}
	long := make([]byte, 4096)
	for i := range long {
		long[i] = 0x1b
	}
	got := Bytes(long, 4)
	if want := `\x1b\x1b\x1b\x1b... (4096 bytes)`; got != want {
		t.Errorf("long: %q, want %q", got, want)
	}
}

func TestTerminalEscapesControlsButKeepsBackslashes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`session "a\x1b" exists`, `session "a\x1b" exists`},
		{"raw \x1b[2J here", `raw \x1b[2J here`},
		{"bad \xff", `bad \xff`},
		{`C:\path`, `C:\path`},
		{"ünï ☃", "ünï ☃"},
	} {
		if got := Terminal(tc.in); got != tc.want {
			t.Errorf("Terminal(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
