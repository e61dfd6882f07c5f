// Package envfile reads and changes the per-user secrets file
// ~/.config/agent-box/env: one KEY=VALUE per line, keys
// [A-Za-z_][A-Za-z0-9_]*, values literal (never evaluated: no quotes, no
// escapes, no expansion), empty lines and lines starting with '#' ignored.
// The file is written with mode 0600 through atomicfile.Update.
package envfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agent-box/agent-box/internal/runtime/atomicfile"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// MaxFileSize is the largest env file agent-box reads.
const MaxFileSize = 256 << 10

// Errors for invalid input; test with errors.Is.
var (
	ErrInvalidKey   = errors.New("invalid key")
	ErrInvalidValue = errors.New("invalid value")
	ErrUnknownKey   = errors.New("unknown key")
)

// SyntaxError reports an unparseable line of the env file.
type SyntaxError struct {
	Path string
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg) }

// validKey reports whether key matches [A-Za-z_][A-Za-z0-9_]*.
func validKey(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// CheckKey returns an error wrapping ErrInvalidKey for an invalid key.
func CheckKey(key string) error {
	if !validKey(key) {
		return fmt.Errorf("%w %q (want [A-Za-z_][A-Za-z0-9_]*)", ErrInvalidKey, key)
	}
	return nil
}

// checkValue rejects values the file cannot hold literally.
func checkValue(v string) error {
	if strings.ContainsAny(v, "\n\x00") {
		return fmt.Errorf("%w: values cannot contain a newline or NUL byte", ErrInvalidValue)
	}
	return nil
}

// Var is one KEY=VALUE pair.
type Var struct{ Key, Value string }

type line struct {
	raw string // comment or empty line, kept verbatim
	v   *Var
}

type file struct{ lines []line }

func parse(path string, data []byte) (*file, error) {
	f := &file{}
	text := string(data)
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return f, nil
	}
	for i, l := range strings.Split(text, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			f.lines = append(f.lines, line{raw: l})
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, &SyntaxError{path, i + 1, "want KEY=VALUE"}
		}
		if !validKey(k) {
			return nil, &SyntaxError{path, i + 1, fmt.Sprintf("invalid key %q", k)}
		}
		if strings.ContainsRune(v, 0) {
			return nil, &SyntaxError{path, i + 1, "NUL byte in value"}
		}
		f.lines = append(f.lines, line{v: &Var{k, v}})
	}
	return f, nil
}

func (f *file) bytes() []byte {
	var b strings.Builder
	for _, l := range f.lines {
		if l.v != nil {
			b.WriteString(l.v.Key + "=" + l.v.Value)
		} else {
			b.WriteString(l.raw)
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// Load returns the variables of the file at path in file order; a later
// duplicate key wins. A missing file has no variables.
func Load(path string) ([]Var, error) {
	data, err := userfile.Read(path, MaxFileSize)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := parse(path, data)
	if err != nil {
		return nil, err
	}
	var vars []Var
	for _, l := range f.lines {
		if l.v != nil {
			vars = append(vars, *l.v)
		}
	}
	return vars, nil
}

// Set sets key to value, replacing an existing line or appending one.
func Set(ctx context.Context, path, key, value string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := checkValue(value); err != nil {
		return err
	}
	return atomicfile.Update(ctx, path, 0o600, MaxFileSize, func(old []byte, _ bool) ([]byte, error) {
		f, err := parse(path, old)
		if err != nil {
			return nil, err
		}
		done := false
		var keep []line
		for _, l := range f.lines {
			if l.v != nil && l.v.Key == key {
				if done {
					continue // drop duplicates of the key
				}
				l = line{v: &Var{key, value}}
				done = true
			}
			keep = append(keep, l)
		}
		if !done {
			keep = append(keep, line{v: &Var{key, value}})
		}
		f.lines = keep
		return f.bytes(), nil
	})
}

// Remove deletes every line setting key; ErrUnknownKey if there is none.
func Remove(ctx context.Context, path, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	return atomicfile.Update(ctx, path, 0o600, MaxFileSize, func(old []byte, _ bool) ([]byte, error) {
		f, err := parse(path, old)
		if err != nil {
			return nil, err
		}
		var keep []line
		for _, l := range f.lines {
			if l.v == nil || l.v.Key != key {
				keep = append(keep, l)
			}
		}
		if len(keep) == len(f.lines) {
			return nil, fmt.Errorf("%w %q", ErrUnknownKey, key)
		}
		f.lines = keep
		return f.bytes(), nil
	})
}

// Merge returns base (KEY=VALUE strings, e.g. os.Environ()) with vars
// applied on top: vars win, order of base kept, new keys appended.
func Merge(base []string, vars []Var) []string {
	over := map[string]string{}
	var order []string
	for _, v := range vars {
		if _, ok := over[v.Key]; !ok {
			order = append(order, v.Key)
		}
		over[v.Key] = v.Value
	}
	out := make([]string, 0, len(base)+len(order))
	seen := map[string]bool{}
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if val, ok := over[k]; ok {
			if !seen[k] {
				out = append(out, k+"="+val)
				seen[k] = true
			}
			continue
		}
		out = append(out, kv)
	}
	for _, k := range order {
		if !seen[k] {
			out = append(out, k+"="+over[k])
		}
	}
	return out
}
