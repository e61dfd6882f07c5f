package assemble

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Byte-exact cases that txtar cannot hold: CR, missing final newlines,
// trailing spaces, NUL, special files.
func TestAssembleBytes(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string // output after the banner
		err   string // substring of the error, when one is expected
	}{
		{
			name:  "CRLF marker line keeps its line ending after a text literal",
			files: map[string]string{"main.nix": "{\r\n  a =\r\n    @@include:x.txt@@\r\n  ;\r\n}\r\n", "x.txt": "x\n"},
			want:  "{\r\n  a =\r\n    ''\n      x\n    ''\r\n  ;\r\n}\r\n",
		},
		{
			name:  "spliced file without final newline gets the marker line's ending",
			files: map[string]string{"main.nix": "[\n  @@include:x.nix@@\n]\n", "x.nix": "1"},
			want:  "[\n  1\n]\n",
		},
		{
			name:  "spliced file with final newline replaces the marker line exactly",
			files: map[string]string{"main.nix": "[\n  @@include:x.nix@@\n]\n", "x.nix": "1\n  2\n"},
			want:  "[\n  1\n  2\n]\n",
		},
		{
			name:  "marker on the last line without a newline",
			files: map[string]string{"main.nix": "[\n@@include:x.txt@@", "x.txt": "a"},
			want:  "[\n''\n  a''",
		},
		{
			name:  "trailing blanks after a marker are trimmed",
			files: map[string]string{"main.nix": "[\n  @@include:x.txt@@ \t\n]\n", "x.txt": "a  \n"},
			want:  "[\n  ''\n    a  \n  ''\n]\n",
		},
		{
			name:  "text with CR becomes a quoted string",
			files: map[string]string{"main.nix": "[\n  @@include:x.txt@@\n]\n", "x.txt": "a\r\nb"},
			want:  "[\n  \"a\\r\nb\"\n]\n",
		},
		{
			name:  "empty text file",
			files: map[string]string{"main.nix": "[\n  @@include:x.txt@@\n]\n", "x.txt": ""},
			want:  "[\n  \"\"\n]\n",
		},
		{
			name:  "NUL in an included file is an error at its position",
			files: map[string]string{"main.nix": "[\n  @@include:x.bin@@\n]\n", "x.bin": "ab\ncd\x00"},
			err:   "x.bin:2:3: NUL byte\nhint: included from ",
		},
		{
			name:  "NUL in a directory include",
			files: map[string]string{"main.nix": "[\n  @@include:d/@@\n]\n", "d/x.bin": "\x00"},
			err:   "d/x.bin:1:1: NUL byte",
		},
		{
			name:  "NUL in the entry",
			files: map[string]string{"main.nix": "[ \x00 ]"},
			err:   "main.nix:1:3: NUL byte",
		},
		{
			name:  "bad ignore pattern",
			files: map[string]string{"main.nix": "[\n  @@include:d/@@\n]\n", "d/.assemble-ignore": "[\n", "d/x": "x"},
			err:   `d/.assemble-ignore:1:1: line 1: bad pattern "["`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for name, data := range tt.files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res, err := Assemble(Options{Root: root, Entry: filepath.Join(root, "main.nix"), Command: "TEST"})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, body, _ := strings.Cut(string(res.Output), "\n\n")
			if body != tt.want {
				t.Errorf("output after banner:\n got %q\nwant %q", body, tt.want)
			}
		})
	}
}

func TestAssembleRejectsSpecialFiles(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "main.nix"), []byte("[\n  @@include:fifo@@\n]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Assemble(Options{Root: root, Entry: filepath.Join(root, "main.nix")})
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 1 || !strings.Contains(list[0].Msg, "not a regular file") {
		t.Fatalf("err = %v, want one 'not a regular file' error", err)
	}
}

func TestAssembleRejectsEntryOutsideRootOrNotNix(t *testing.T) {
	root := t.TempDir()
	other := t.TempDir()
	for _, tc := range []struct{ entry, want string }{
		{filepath.Join(other, "x.nix"), "not inside the source root"},
		{filepath.Join(root, "x.txt"), "not a .nix file"},
	} {
		if _, err := Assemble(Options{Root: root, Entry: tc.entry}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Assemble(entry %s) = %v, want error containing %q", tc.entry, err, tc.want)
		}
	}
}
