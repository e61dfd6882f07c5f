// Package badconfig is the one error of a configuration a program refuses
// to start with: the auth service's file and credentials, the web
// daemon's environment, the webhooks' file and secrets. The CLI maps it to
// the contract's exit code "config" (12), which the units' restart
// policies read as "do not retry until someone fixes it".
package badconfig

import (
	"errors"
	"fmt"
)

// Error is a configuration refused: What names the configuration ("auth
// configuration", "web serve", "webhooks"), Path the file at fault, if
// any.
type Error struct {
	What string
	Path string
	Err  error
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.What + ": " + e.Err.Error()
	}
	return fmt.Sprintf("%s %q: %v", e.What, e.Path, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf is an *Error of what (and path, if not "") with a formatted
// message; %w wraps as in fmt.Errorf.
func Errorf(what, path, format string, a ...any) error {
	return &Error{What: what, Path: path, Err: fmt.Errorf(format, a...)}
}

// Wrap is err as an *Error of what, or nil for nil. An err that already
// holds an *Error keeps it: the message gains what in front.
func Wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{What: what, Err: err}
}

// Is reports whether err holds an *Error.
func Is(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
