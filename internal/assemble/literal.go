package assemble

// Literal renders content as a Nix string literal that evaluates to exactly
// content. indent is the column (in spaces) at which the literal starts; the
// lines of an indented string are placed two spaces deeper.
//
// An indented string (delimited by two single quotes) is used whenever it
// can carry the bytes exactly (see appendIndented); otherwise an escaped "..."
// string. Content must not contain NUL (Nix strings cannot hold it); the
// caller reports that.
func Literal(content []byte, indent int) string {
	return string(AppendLiteral(nil, content, indent))
}

// AppendLiteral appends Literal(content, indent) to dst.
func AppendLiteral(dst, content []byte, indent int) []byte {
	if out, ok := appendIndented(dst, content, indent); ok {
		return out
	}
	return appendQuoted(dst, content)
}

// Byte classes for the indented-string renderer.
const (
	plain   = iota
	special // newline, single quote, dollar
	bad     // a control byte an indented string should not carry
)

var class = func() (t [256]uint8) {
	for c := 0; c < 0x20; c++ {
		t[c] = bad
	}
	t[0x7f] = bad
	t['\t'] = plain
	t['\n'], t['\''], t['$'] = special, special, special
	return t
}()

// appendIndented appends content as an indented string and reports whether
// that string evaluates to exactly content; if not, dst is returned
// unchanged and the caller uses a quoted string.
//
// Nix strips from every line the smallest number of leading SPACES found on
// a line that holds anything but spaces (tabs count as content), drops the
// first line when it is only the opening quotes, and drops a final line made
// of spaces only. The renderer puts indent+2 spaces before every non-empty
// line, so the bytes survive exactly when:
//   - there are no control bytes but tab and newline (CR would be kept raw
//     and is unreadable; other control bytes likewise);
//   - some line with content starts at column 0 (otherwise Nix strips the
//     content's own indentation too);
//   - if no line has content, no line holds spaces (they would be stripped);
//   - a last line without a final newline is not made of spaces only.
//
// Escapes: a pair of single quotes is written as three single quotes; "${"
// gets two single quotes in front; a lone single quote that would merge
// with a following escape or with the closing quotes is written as two
// single quotes, a backslash and a single quote.
func appendIndented(dst, content []byte, indent int) ([]byte, bool) {
	n := len(content)
	if n == 0 {
		return dst, false // "" is the clearer spelling
	}
	at := func(k int) byte {
		if k < n {
			return content[k]
		}
		return 0
	}
	start := len(dst)
	dst = append(dst, "''\n"...)
	sawContent, sawZero, sawSpaces := false, false, false
	lineStart := true
	for i := 0; i < n; {
		if lineStart {
			j := i
			for j < n && content[j] == ' ' {
				j++
			}
			if j == n || content[j] == '\n' { // empty or spaces only
				if j > i {
					if j == n {
						return dst[:start], false
					}
					sawSpaces = true
					dst = appendSpaces(dst, indent+2)
					dst = append(dst, content[i:j]...)
				}
				if j < n {
					dst = append(dst, '\n')
					j++
				}
				i = j
				continue
			}
			sawContent = true
			sawZero = sawZero || j == i
			dst = appendSpaces(dst, indent+2)
			dst = append(dst, content[i:j]...)
			i, lineStart = j, false
		}
		j := i
		for j < n && class[content[j]] == plain {
			j++
		}
		dst = append(dst, content[i:j]...)
		if i = j; i == n {
			break
		}
		c := content[i]
		i++
		switch {
		case class[c] == bad:
			return dst[:start], false
		case c == '\n':
			dst = append(dst, '\n')
			lineStart = true
		case c == '\'' && at(i) == '\'':
			dst = append(dst, "'''"...)
			i++
		case c == '\'' && (i == n || (at(i) == '$' && at(i+1) == '{')):
			dst = append(dst, `''\'`...)
		case c == '$' && at(i) == '{':
			dst = append(dst, "''$"...)
		default:
			dst = append(dst, c)
		}
	}
	if (sawContent && !sawZero) || (!sawContent && sawSpaces) {
		return dst[:start], false
	}
	if lineStart {
		// Content ends with a newline: the closing quotes go on a line of
		// their own, made of spaces only, which Nix drops.
		dst = appendSpaces(dst, indent)
	}
	return append(dst, "''"...), true
}

func appendSpaces(dst []byte, n int) []byte {
	for ; n > 0; n-- {
		dst = append(dst, ' ')
	}
	return dst
}

// Quoted renders content as a double-quoted Nix string. Newlines stay raw
// (readable), CR and tab are escaped (Nix turns a raw CR into LF), and "$"
// before "{" or at the end is escaped. Other bytes are written raw: Nix has
// no escape for them.
func Quoted(content []byte) string {
	return string(appendQuoted(nil, content))
}

func appendQuoted(dst, content []byte) []byte {
	dst = append(dst, '"')
	for i, c := range content {
		switch {
		case c == '\\':
			dst = append(dst, `\\`...)
		case c == '"':
			dst = append(dst, `\"`...)
		case c == '\r':
			dst = append(dst, `\r`...)
		case c == '\t':
			dst = append(dst, `\t`...)
		case c == '$' && (i+1 == len(content) || content[i+1] == '{'):
			dst = append(dst, `\$`...)
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
