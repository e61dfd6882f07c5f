package auth

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"sync"

	"github.com/agent-box/agent-box/internal/runtime/clientaddr"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
)

// clientHeader is the header Caddy sets from {remote_host}.
var clientHeader = clientaddr.Header

// logName is <L> of the failed-login line: the login if it matches
// the contract's login pattern, else "-".
func logName(login string) string {
	if loginName.Match(login) {
		return login
	}
	return "-"
}

// failedLoginLine is the one line a failed or refused login attempt
// writes (fail2ban's jail reads it). addr is clientaddr's Log form: an
// IPv4 address, an IPv6 /64, a loopback address or "-". Both fields are
// validated, so nothing else a client sends reaches it.
func failedLoginLine(login, addr string) string {
	return fmt.Sprintf("%s login=%s addr=%s\n", contract.Logs.FailedLogin, logName(login), addr)
}

// logger writes whole lines to the service's stderr (the journal).
type logger struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *logger) printf(format string, a ...any) {
	l.line(fmt.Sprintf("agent-box-auth: "+format, a...))
}

func (l *logger) line(s string) {
	if len(s) == 0 || s[len(s)-1] != '\n' {
		s += "\n"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	io.WriteString(l.w, s)
}

// httpLog is net/http's ErrorLog: each message escaped onto one line, so
// that no text from a client can forge a failed-login line.
func (l *logger) httpLog() *log.Logger {
	return log.New(escapingWriter{l}, "", 0)
}

type escapingWriter struct{ l *logger }

func (e escapingWriter) Write(p []byte) (int, error) {
	e.l.line("agent-box-auth: http: " + escape.String(string(bytes.TrimSuffix(p, []byte("\n")))))
	return len(p), nil
}
