// Package sessionsrv is the user's tmux server as every part of agent-box
// meets it: how it is started (`agent-box tmux-server`, the ExecStart of
// agent-box-sessions@<user>.service) and how a client reaches it (Open).
//
// Invariants:
//   - the server runs in the sessions unit and nowhere else: Serve replaces
//     itself with `tmux -D` (the unit's main process), and every client
//     command carries -N (package tmux), so no client ever starts a server;
//   - a client drives a server only after Open has checked it: the
//     socket's peer credentials name a process of our uid in the sessions
//     unit (InUnit; the test binary replaces it), and the client then runs
//     that process's own program (/proc/<pid>/exe), never a path a file
//     names, so a tmux upgrade waits until the sessions unit restarts;
//   - the server carries the token Serve wrote (server option
//     @agent-box-token): the supervisor adopts nothing else.
package sessionsrv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/atomicfile"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/peer"
	"github.com/agent-box/agent-box/internal/runtime/tmux"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// ErrForeign means the socket belongs to a tmux server agent-box did not
// start, or one running outside the sessions unit (the CLI exits 9).
var ErrForeign = errors.New("a tmux server not started by agent-box's sessions unit is running on the socket")

// ErrNoServer means no server listens on the socket: the sessions unit is
// stopped or (re)starting.
var ErrNoServer = errors.New("no tmux server is running")

// TokenOption is the server option that carries the token.
const TokenOption = "@agent-box-token"

// InUnit is the unit check of the server's process for user: the sessions
// unit of the system manager. The test binary, which runs no units,
// replaces it.
var InUnit = func(user string) func(pid int) error {
	return peer.InUnit(contract.For(contract.Units.Sessions, user))
}

// Unit is the sessions unit of the user running this process (for
// messages); "" if the user is unknown.
func Unit() string {
	name, err := userName()
	if err != nil {
		return contract.For(contract.Units.Sessions, "<user>")
	}
	return contract.For(contract.Units.Sessions, name)
}

func userName() (string, error) {
	u, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

// Server is a checked server: the client to drive it and its pid.
type Server struct {
	*tmux.Server
	PID int
}

// Open checks the server on e's socket (uid, unit) and returns a client
// that runs the server's own program with environment env. configured is
// the tmux the host configured: it is used only when the server's program
// cannot be named (its file was removed since the server started).
// ErrNoServer when none listens.
func Open(e paths.Env, configured string, env []string) (*Server, error) {
	c, err := net.DialTimeout("unix", e.TmuxSocket(), time.Second)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w on %s: start %s", ErrNoServer, e.TmuxSocket(), Unit())
		}
		return nil, err
	}
	defer c.Close()
	name, err := userName()
	if err != nil {
		return nil, fmt.Errorf("who am I: %w", err)
	}
	pid, err := peer.Check(c.(*net.UnixConn), os.Getuid(), InUnit(name))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrForeign, e.TmuxSocket(), err)
	}
	exe, err := peer.Exe(pid)
	if err != nil {
		if configured == "" {
			return nil, fmt.Errorf("tmux server pid %d: %w", pid, err)
		}
		exe = configured
	}
	return &Server{Server: &tmux.Server{Bin: exe, Socket: e.TmuxSocket(), Env: env}, PID: pid}, nil
}

// Adopt is Open for the supervisor: the server must also carry the token
// of e's token file.
func Adopt(ctx context.Context, e paths.Env, configured string, env []string) (*Server, error) {
	srv, err := Open(e, configured, env)
	if err != nil {
		return nil, err
	}
	tok, _ := userfile.Read(e.TokenFile(), 256) // a FIFO or huge file here is no token
	got, err := srv.ServerOption(ctx, TokenOption)
	if err != nil && !srv.Alive() {
		return nil, fmt.Errorf("%w on %s (it exited while being checked)", ErrNoServer, e.TmuxSocket())
	}
	if err != nil || len(tok) == 0 || got != strings.TrimSpace(string(tok)) {
		return nil, fmt.Errorf("%w: %s: its token is not the one in %s", ErrForeign, e.TmuxSocket(), e.TokenFile())
	}
	return srv, nil
}

// Conf is the generated tmux configuration: the server carries the token
// and keeps dead panes (so their exit status can be read and the pane
// respawned in place). -D already turns exit-empty off. The mouse is
// tmux's: a browser terminal's wheel scrolls the pane's history (copy
// mode) instead of sending arrow keys to the agent, unless the agent
// asked for the mouse; a selection made there is copied to the terminal's
// clipboard (OSC 52, set-clipboard's default "external"), which the
// workspace page hands to the browser's; Shift selects in the browser.
func Conf(token string) string {
	return fmt.Sprintf(`# Generated by agent-box tmux-server at every start; do not edit.
set-option -s exit-empty off
set-option -s %s %s
set-option -g mouse on
set-window-option -g remain-on-exit on
`, TokenOption, token)
}

// Prepare writes a new token and the configuration into e's runtime
// directory (0700, the sessions unit's RuntimeDirectory) and removes a
// stale socket, and returns the argv that runs the server in the
// foreground.
func Prepare(e paths.Env, tmuxBin string) ([]string, error) {
	if err := os.MkdirAll(e.RuntimeDir, 0o700); err != nil {
		return nil, err
	}
	// systemd creates RuntimeDirectory= 0755 unless told otherwise; the
	// sockets in it must be the user's alone.
	if err := os.Chmod(e.RuntimeDir, 0o700); err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("unix", e.TmuxSocket(), time.Second)
	if err == nil {
		c.Close()
		return nil, fmt.Errorf("a tmux server already listens on %s", e.TmuxSocket())
	}
	if err := os.Remove(e.TmuxSocket()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing stale socket: %w", err)
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	tok := hex.EncodeToString(b)
	if err := atomicfile.WriteFile(e.TokenFile(), []byte(tok+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(e.TmuxConf(), []byte(Conf(tok)), 0o600); err != nil {
		return nil, err
	}
	return []string{tmuxBin, "-D", "-S", e.TmuxSocket(), "-f", e.TmuxConf()}, nil
}

// Serve prepares and then replaces this process with the tmux server
// (execve: the unit's main process is tmux itself, so systemd sees its
// exit and the socket's peer is the server).
func Serve(ctx context.Context, e paths.Env, tmuxBin string, environ []string) error {
	if err := tmux.CheckVersion(ctx, tmuxBin); err != nil {
		return err
	}
	argv, err := Prepare(e, tmuxBin)
	if err != nil {
		return err
	}
	return fmt.Errorf("exec %s: %w", tmuxBin, syscall.Exec(tmuxBin, argv, environ))
}
