package contractscan

import (
	"go/scanner"
	"go/token"
	"strings"
)

// StripComments blanks the comments of a Go or Nix source, keeping every
// newline (so line numbers stay) and everything else, strings included:
// what a program or a rendered file holds is scanned, what explains it is
// not. It blanks the assembler's include markers of a Nix source too: a
// marker names a file of the tree (cmd/agent-box-exec/), which the
// assembler replaces. Other files are returned as they are.
func StripComments(file string, src []byte) []byte {
	switch {
	case strings.HasSuffix(file, ".go"):
		return stripGo(src)
	case strings.HasSuffix(file, ".nix"):
		return stripMarkers(stripNix(src))
	}
	return src
}

// stripMarkers blanks the lines whose trimmed text is an include marker
// (@@include:PATH@@, see internal/assemble).
func stripMarkers(src []byte) []byte {
	lines := strings.SplitAfter(string(src), "\n")
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "@@include:") && strings.HasSuffix(t, "@@") {
			lines[i] = strings.Repeat(" ", len(strings.TrimSuffix(l, "\n"))) + l[len(strings.TrimSuffix(l, "\n")):]
		}
	}
	return []byte(strings.Join(lines, ""))
}

// blank replaces b[i:j] with spaces, newlines kept.
func blank(b []byte, i, j int) {
	for k := i; k < j && k < len(b); k++ {
		if b[k] != '\n' {
			b[k] = ' '
		}
	}
}

func stripGo(src []byte) []byte {
	out := append([]byte(nil), src...)
	fset := token.NewFileSet()
	f := fset.AddFile("x.go", -1, len(src))
	var s scanner.Scanner
	s.Init(f, src, nil, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.COMMENT {
			i := f.Offset(pos)
			blank(out, i, i+len(lit))
		}
	}
}

// stripNix blanks # and /* */ comments outside strings ("..." with its
// escapes, ”...” with its ”' ”$ ”\ escapes).
func stripNix(src []byte) []byte {
	out := append([]byte(nil), src...)
	n := len(src)
	for i := 0; i < n; {
		switch {
		case src[i] == '#':
			j := i
			for j < n && src[j] != '\n' {
				j++
			}
			blank(out, i, j)
			i = j
		case src[i] == '/' && i+1 < n && src[i+1] == '*':
			j := i + 2
			for j+1 < n && !(src[j] == '*' && src[j+1] == '/') {
				j++
			}
			blank(out, i, j+2)
			i = j + 2
		case src[i] == '"':
			i++
			for i < n && src[i] != '"' {
				if src[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case src[i] == '\'' && i+1 < n && src[i+1] == '\'':
			i += 2
			for i < n {
				if src[i] == '\'' && i+1 < n && src[i+1] == '\'' {
					if i+2 < n && (src[i+2] == '\'' || src[i+2] == '$' || src[i+2] == '\\') {
						i += 3
						continue
					}
					i += 2
					break
				}
				i++
			}
		default:
			i++
		}
	}
	return out
}
