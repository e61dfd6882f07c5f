// Package escape makes untrusted text safe to print on a terminal or in a log.
//
// It makes untrusted text safe to print on a terminal or in a
// log: every byte a terminal could act on (C0 and C1 controls, DEL, invalid
// UTF-8) and the Unicode bidirectional controls are written as Go-style
// escapes, and so is the backslash, so an escaped string is unambiguous.
// Everything agent-box prints that a user could have written (names, paths,
// arguments, file contents in errors, datagrams) goes through it.
package escape

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// String returns s with control bytes, invalid UTF-8, bidi controls and
// backslashes escaped; printable text (any script) is kept as is.
func String(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f, bidi(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Bytes escapes at most max bytes of data; a longer input is cut there and
// says how long it was.
func Bytes(data []byte, max int) string {
	if len(data) <= max {
		return String(string(data))
	}
	return String(string(data[:max])) + fmt.Sprintf("... (%d bytes)", len(data))
}

func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// bidi reports the Unicode bidirectional formatting characters, which can
// make text display in another order than it is read.
func bidi(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// Terminal escapes what a terminal would act on (control bytes, invalid
// UTF-8, bidi controls) but keeps backslashes: for whole message lines that
// may already hold Go-quoted parts, the last guard before a terminal or log.
func Terminal(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool {
		return r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || bidi(r) || r == utf8.RuneError
	}) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\\' {
			b.WriteByte('\\')
		} else {
			b.WriteString(String(s[i : i+size]))
		}
		i += size
	}
	return b.String()
}
