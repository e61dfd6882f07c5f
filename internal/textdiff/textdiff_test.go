package textdiff

import (
	"strings"
	"testing"
)

func TestExplain(t *testing.T) {
	long := strings.Repeat("x", 70*1024)
	tests := []struct {
		name      string
		want, got string
		contains  []string // "" result when empty
	}{
		{name: "equal texts give nothing", want: "a\n", got: "a\n"},
		{name: "changed line gives a unified hunk", want: "a\nb\nc\n", got: "a\nB\nc\n",
			contains: []string{"--- want", "+++ got", "@@ -1,3 +1,3 @@", "-b", "+B"}},
		{name: "missing final newline is said in words", want: "a\nb\n", got: "a\nb",
			contains: []string{"got lacks a final newline", "first difference at byte 3"}},
		{name: "CR only is said in words", want: "a\nb\n", got: "a\r\nb\r\n",
			contains: []string{"only one of them contains CR bytes (want: 0, got: 2)"}},
		{name: "line over 64 KiB is said in words", want: long + "a\n", got: long + "b\n",
			contains: []string{"first difference at byte 71680 (line 1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Explain("want", "got", []byte(tt.want), []byte(tt.got))
			if len(tt.contains) == 0 {
				if got != "" {
					t.Fatalf("Explain = %q, want empty", got)
				}
				return
			}
			for _, c := range tt.contains {
				if !strings.Contains(got, c) {
					t.Errorf("Explain output lacks %q:\n%s", c, got)
				}
			}
		})
	}
}
