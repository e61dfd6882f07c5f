package escape

import (
	"fmt"
	"strings"
)

// Quote returns s in double quotes, escaped like String (and '"' as \"),
// cut after max bytes; a cut string is followed by its full length. It is
// how an error quotes a name, a key or a line a user wrote.
func Quote(s string, max int) string {
	n := len(s)
	if n > max {
		s = s[:max]
	}
	q := `"` + strings.ReplaceAll(String(s), `"`, `\"`) + `"`
	if n > max {
		q += fmt.Sprintf("... (%d bytes)", n)
	}
	return q
}

// ShellArg returns s as one word for a POSIX shell command in a hint: as is
// when it holds only characters no shell treats specially, else in single
// quotes. Control bytes are then escaped like String, so the hint is safe to
// print (and exact to copy for any path without them).
func ShellArg(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./@%+=:,") == "" {
		return s
	}
	return String("'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'")
}
