package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// ControlSocket is the control listener's path (agent-box-auth-control.socket).
// A variable for tests only.
var ControlSocket = contract.Sockets.AuthControl.Path

// UnreachableError: nothing answers on the control socket.
type UnreachableError struct {
	Socket string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("the auth service is unreachable on %s: %v", e.Socket, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Hint is printed on its own line by the CLI.
func (e *UnreachableError) Hint() string {
	if errors.Is(e.Err, syscall.EACCES) {
		return "the control socket is root's: run 'agent-box web revoke' as root"
	}
	return "the auth service may not run: see 'systemctl status " + contract.Sockets.AuthControl.Unit + " " + contract.Units.Auth + "'"
}

// Revoke asks the auth service on socket to end every session of login
// and returns how many ended.
func Revoke(ctx context.Context, socket, login string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", socket)
	}}
	defer tr.CloseIdleConnections()
	body := url.Values{"login": {login}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://control/revoke", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return 0, &UnreachableError{Socket: socket, Err: op.Err}
		}
		return 0, &UnreachableError{Socket: socket, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return 0, fmt.Errorf("revoke %q: reading the answer: %w", login, err)
	}
	text := strings.TrimSpace(string(data))
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("revoke %q: the auth service answered %s: %s", login, resp.Status, text)
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, fmt.Errorf("revoke %q: the auth service answered %q, not a count", login, text)
	}
	return n, nil
}

// CheckLogin refuses what cannot be a login name.
func CheckLogin(login string) error {
	if !contract.Names.Login.Match(login) {
		return fmt.Errorf("%q is not a login name (%s)", login, contract.Names.Login.Pattern)
	}
	return nil
}
