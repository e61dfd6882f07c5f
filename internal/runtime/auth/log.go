package auth

import (
	"fmt"

	"github.com/agent-box/agent-box/internal/runtime/clientaddr"
	"github.com/agent-box/agent-box/internal/runtime/contract"
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
