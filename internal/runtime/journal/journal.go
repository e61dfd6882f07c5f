// Package journal is the one shape of the runtime's log lines. Each event
// is one line on the process's stderr (the journal): "PREFIX: MESSAGE".
//
// Invariants:
//   - a message is escaped as a whole (escape.Terminal), so nothing a
//     client or a user wrote (a path, a header, a file's bytes in an
//     error) can start a line of its own, forge a line another reader
//     parses (fail2ban reads the auth service's failed-login line) or act
//     on a terminal that shows the journal;
//   - lines are written whole, one Write each, under a lock: concurrent
//     events never interleave;
//   - Line is the one way to write a line as is, for lines whose every
//     field the caller validated against the contract.
package journal

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"strings"
	"sync"

	"github.com/agent-box/agent-box/internal/runtime/escape"
)

// Logger writes one line per event.
type Logger struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string // "agent-box", "agent-box: web", "agent-box-auth"
}

// New returns a Logger writing to w (nil: nowhere) with prefix before
// each message.
func New(w io.Writer, prefix string) *Logger {
	if w == nil {
		w = io.Discard
	}
	return &Logger{w: w, prefix: prefix}
}

// Printf logs one event.
func (l *Logger) Printf(format string, a ...any) {
	l.write(l.prefix + ": " + escape.Terminal(fmt.Sprintf(format, a...)))
}

// Refuse logs a refused request: its class first ("refused CLASS: …"),
// then what was refused.
func (l *Logger) Refuse(class, format string, a ...any) {
	l.Printf("refused %s: %s", class, fmt.Sprintf(format, a...))
}

// Line writes s as it is, for a line whose fields the caller validated;
// a line break inside it is escaped all the same.
func (l *Logger) Line(s string) {
	s = strings.TrimSuffix(s, "\n")
	if strings.ContainsAny(s, "\r\n") {
		s = escape.Terminal(s)
	}
	l.write(s)
}

// ErrorLog is net/http's ErrorLog: each of its messages one escaped line,
// as "PREFIX: http: MESSAGE".
func (l *Logger) ErrorLog() *log.Logger {
	return log.New(httpWriter{l}, "", 0)
}

type httpWriter struct{ l *Logger }

func (h httpWriter) Write(p []byte) (int, error) {
	h.l.Printf("http: %s", bytes.TrimSuffix(p, []byte("\n")))
	return len(p), nil
}

func (l *Logger) write(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	io.WriteString(l.w, line+"\n")
}
