// Package envfile reads and changes the per-user secrets file ~/.config/agent-box/env.
//
// It reads and changes the per-user secrets file
// ~/.config/agent-box/env: one KEY=VALUE per line, keys
// [A-Za-z_][A-Za-z0-9_]*, values literal (never evaluated: no quotes, no
// escapes, no expansion), empty lines and lines starting with '#' ignored.
// The file is written with mode 0600 through atomicfile.Update. Every
// variable reaches the agent's execve, so each KEY=VALUE is at most
// MaxVarLen bytes and the file at most MaxFileSize, checked when a change is
// written and when the file is read. Errors never echo a value: the file
// holds secrets.
package envfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agent-box/agent-box/internal/runtime/atomicfile"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

const (
	// MaxFileSize is the largest env file agent-box reads or writes.
	MaxFileSize = 256 << 10
	// MaxVarLen is the longest KEY=VALUE: one environment string of
	// execve, Linux's MAX_ARG_STRLEN (131072) less its NUL.
	MaxVarLen = 128<<10 - 1
)

// Errors for invalid input; test with errors.Is.
var (
	ErrInvalidKey   = errors.New("invalid key")
	ErrInvalidValue = errors.New("invalid value")
	ErrUnknownKey   = errors.New("unknown key")
)

// CorruptError reports an env file that cannot be used: a line that does
// not parse or is longer than MaxVarLen (Line > 0), or a file that is not a
// regular file or is over MaxFileSize (Line 0; Err is a *userfile.Error,
// whose path is the lock file when that is what is wrong). Its chain never
// holds ErrInvalidKey or ErrInvalidValue: those are errors in the caller's
// input.
type CorruptError struct {
	Path string
	Line int
	Err  error
}

// SyntaxError is the former name of CorruptError.
//
// Deprecated: use CorruptError.
type SyntaxError = CorruptError

func (e *CorruptError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", escape.String(e.Path), e.Line, e.Err)
	}
	return fmt.Sprintf("corrupt env file: %v", e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Hint is one line saying how to recover.
func (e *CorruptError) Hint() string {
	var ue *userfile.Error
	if errors.As(e.Err, &ue) && ue.Path != e.Path {
		return fmt.Sprintf("move the lock file away (mv %s %s); it is recreated at the next change", escape.ShellArg(ue.Path), escape.ShellArg(ue.Path+".bad"))
	}
	again := fmt.Sprintf("move it away (mv %s %s) and set the values again with 'agent-box env set KEY'", escape.ShellArg(e.Path), escape.ShellArg(e.Path+".bad"))
	switch {
	case ue != nil && ue.Err == userfile.ErrTooLarge:
		return fmt.Sprintf("an env file holds at most %d bytes (256 KiB): shorten it by hand, or %s", MaxFileSize, again)
	case ue != nil:
		return again
	}
	return fmt.Sprintf("fix line %d by hand (KEY=VALUE, or # for a comment), or %s", e.Line, again)
}

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
		return fmt.Errorf("%w %s (want [A-Za-z_][A-Za-z0-9_]*)", ErrInvalidKey, escape.Quote(key, 64))
	}
	return nil
}

// checkValue rejects values the file cannot hold literally and entries no
// program can receive. key is valid.
func checkValue(key, v string) error {
	if strings.ContainsAny(v, "\n\x00") {
		return fmt.Errorf("%w: values cannot contain a newline or NUL byte", ErrInvalidValue)
	}
	if n := len(key) + 1 + len(v); n > MaxVarLen {
		return fmt.Errorf("%w: %s=VALUE would be %d bytes, more than %d (the longest environment entry a program can receive: Linux's MAX_ARG_STRLEN less its NUL)", ErrInvalidValue, key, n, MaxVarLen)
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
	bad := func(i int, msg string) error { return &CorruptError{path, i + 1, errors.New(msg)} }
	for i, l := range strings.Split(text, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			f.lines = append(f.lines, line{raw: l})
			continue
		}
		// never quote the line: it may hold a secret
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, bad(i, "want KEY=VALUE")
		}
		if !validKey(k) {
			return nil, bad(i, "invalid key (want [A-Za-z_][A-Za-z0-9_]* before the first =)")
		}
		if strings.ContainsRune(v, 0) {
			return nil, bad(i, "NUL byte in value")
		}
		if len(l) > MaxVarLen {
			return nil, bad(i, fmt.Sprintf("%s=VALUE is %d bytes, more than %d (the longest environment entry a program can receive)", k, len(l), MaxVarLen))
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
	if userfile.Bad(err) {
		return nil, &CorruptError{Path: path, Err: err}
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

// Keys returns the keys of the file at path, each once, in file order
// (never a value).
func Keys(path string) ([]string, error) {
	vars, err := Load(path)
	var keys []string
	seen := map[string]bool{}
	for _, v := range vars {
		if !seen[v.Key] {
			keys, seen[v.Key] = append(keys, v.Key), true
		}
	}
	return keys, err
}

// Set sets key to value, replacing an existing line or appending one. A
// value with a newline or NUL, a KEY=VALUE longer than MaxVarLen, or a
// result over MaxFileSize is refused (ErrInvalidValue, naming the limit)
// and nothing is written.
func Set(ctx context.Context, path, key, value string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := checkValue(key, value); err != nil {
		return err
	}
	return update(ctx, path, func(f *file) error {
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
		return nil
	})
}

// Remove deletes every line setting key; ErrUnknownKey if there is none.
func Remove(ctx context.Context, path, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	return update(ctx, path, func(f *file) error {
		var keep []line
		for _, l := range f.lines {
			if l.v == nil || l.v.Key != key {
				keep = append(keep, l)
			}
		}
		if len(keep) == len(f.lines) {
			return fmt.Errorf("%w %q", ErrUnknownKey, key)
		}
		f.lines = keep
		return nil
	})
}

// update applies fn to the parsed file under the lock and writes the result
// if it is at most MaxFileSize. A corrupt file (or lock file) is reported as
// *CorruptError and left as it is.
func update(ctx context.Context, path string, fn func(f *file) error) error {
	called := false
	err := atomicfile.Update(ctx, path, 0o600, MaxFileSize, func(old []byte, _ bool) ([]byte, error) {
		called = true
		f, err := parse(path, old)
		if err != nil {
			return nil, err
		}
		if err := fn(f); err != nil {
			return nil, err
		}
		data := f.bytes()
		if len(data) > MaxFileSize {
			return nil, fmt.Errorf("%w: the env file would hold %d bytes, more than %d (256 KiB)", ErrInvalidValue, len(data), MaxFileSize)
		}
		return data, nil
	})
	if !called && userfile.Bad(err) {
		return &CorruptError{Path: path, Err: err}
	}
	return err
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
