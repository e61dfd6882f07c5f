// Package tmux is a thin wrapper over the tmux command line. Every command
// names the server's socket explicitly (-S) and runs with an explicit
// environment, so neither TMUX_TMPDIR, -L defaults nor the caller's
// environment decide which server is used; and every command carries -N,
// so no client ever starts a server (only the sessions unit does, package
// sessionsrv).
package tmux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// minMajor and minMinor are the oldest tmux version agent-box supports:
// 3.2 brought -D (the server in the foreground, the sessions unit's main
// process) and -N (a client that never starts a server).
const minMajor, minMinor = 3, 2

// commandTimeout bounds every tmux command.
const commandTimeout = 10 * time.Second

// Server is one tmux server addressed by its socket.
type Server struct {
	Bin    string   // absolute path of tmux
	Socket string   // -S path
	Env    []string // environment for every tmux client (and so the server it starts)
}

// cmdError is a failed tmux command with its stderr.
type cmdError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *cmdError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("tmux %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *cmdError) Unwrap() error { return e.Err }

// command returns the exec.Cmd for tmux -S socket args... (not started).
func (s *Server) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.Bin, append([]string{"-N", "-S", s.Socket}, args...)...)
	cmd.Env = s.Env
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// Run runs one tmux command line and returns its stdout.
func (s *Server) Run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := s.command(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), &cmdError{Args: args, Stderr: errb.String(), Err: err}
	}
	return out.String(), nil
}

// Alive reports whether a server accepts connections on the socket.
func (s *Server) Alive() bool {
	c, err := net.DialTimeout("unix", s.Socket, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// ServerOption returns the value of a server option ("" with an error if unset).
func (s *Server) ServerOption(ctx context.Context, name string) (string, error) {
	out, err := s.Run(ctx, "show-options", "-sv", name)
	return strings.TrimSuffix(out, "\n"), err
}

// Pane is one line of list-panes -a.
type Pane struct {
	Session string
	ID      string // %N
	Dead    bool
	Status  string // exit status of a dead pane, "" if killed by a signal
	Signal  string // signal number of a dead pane (tmux >= 3.3), else ""
	PID     int
}

// paneFormat separates fields with '|' (tmux replaces tabs and other
// control characters in output for clients without a UTF-8 locale); the
// session name comes last so a name containing '|' still parses.
const paneFormat = "#{pane_id}|#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}|#{pane_pid}|#{session_name}"

// ListPanes lists every pane of every session but WatchSession.
func (s *Server) ListPanes(ctx context.Context) ([]Pane, error) {
	out, err := s.Run(ctx, "list-panes", "-a", "-F", paneFormat)
	if err != nil {
		// With no session at all, list-panes -a fails ("no current
		// target"); list-sessions succeeds with empty output.
		if ls, err2 := s.Run(ctx, "list-sessions", "-F", "#{session_name}"); err2 == nil && strings.TrimSpace(ls) == "" {
			return nil, nil
		}
		return nil, err
	}
	return parsePanes(out)
}

func parsePanes(out string) ([]Pane, error) {
	var panes []Pane
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		f := strings.SplitN(l, "|", 6)
		if len(f) != 6 {
			return nil, fmt.Errorf("tmux list-panes: unexpected line %q", l)
		}
		if f[5] == WatchSession {
			continue
		}
		pid, _ := strconv.Atoi(f[4])
		panes = append(panes, Pane{ID: f[0], Dead: f[1] == "1", Status: f[2], Signal: f[3], PID: pid, Session: f[5]})
	}
	return panes, nil
}

// NewSession creates a detached session running argv directly (tmux execs
// argv without a shell when given more than one argument) and returns the
// pid of its pane's process. argv must not contain an argument ending in
// ';' (tmux's command separator); the caller's argv is fixed and safe.
func (s *Server) NewSession(ctx context.Context, name string, argv []string) (int, error) {
	if len(argv) < 2 {
		return 0, errors.New("tmux: argv needs at least two elements to bypass the shell")
	}
	args := append([]string{"new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", name, "--"}, argv...)
	out, err := s.Run(ctx, args...)
	if err != nil {
		return 0, err
	}
	return parsePID(out)
}

// NewSpec is one session for NewSessions.
type NewSpec struct {
	Name string
	Argv []string // as for NewSession
}

// NewSessions creates the sessions in order with one tmux command list
// (one client process instead of one each) and returns the pids of those
// created. tmux stops at the first command that fails: then the pids are
// those of the sessions before it, and the error is that command's.
func (s *Server) NewSessions(ctx context.Context, specs []NewSpec) ([]int, error) {
	var args []string
	for i, sp := range specs {
		if len(sp.Argv) < 2 {
			return nil, errors.New("tmux: argv needs at least two elements to bypass the shell")
		}
		if i > 0 {
			args = append(args, ";")
		}
		args = append(args, "new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", sp.Name, "--")
		args = append(args, sp.Argv...)
	}
	if len(args) == 0 {
		return nil, nil
	}
	out, err := s.Run(ctx, args...)
	var pids []int
	for _, l := range strings.Fields(out) {
		pid, perr := parsePID(l)
		if perr != nil {
			return pids, perr
		}
		pids = append(pids, pid)
	}
	if err == nil && len(pids) != len(specs) {
		err = fmt.Errorf("tmux: %d pane pids for %d new sessions", len(pids), len(specs))
	}
	return pids, err
}

// RespawnPane kills pane's process if alive, starts argv in it and returns
// the new process's pid.
func (s *Server) RespawnPane(ctx context.Context, pane string, argv []string) (int, error) {
	if len(argv) < 2 {
		return 0, errors.New("tmux: argv needs at least two elements to bypass the shell")
	}
	args := append([]string{"respawn-pane", "-k", "-t", pane, "--"}, argv...)
	args = append(args, ";", "display-message", "-p", "-t", pane, "#{pane_pid}")
	out, err := s.Run(ctx, args...)
	if err != nil {
		return 0, err
	}
	return parsePID(out)
}

// Exit is what RespawnFailed saw of a pane and did.
type Exit struct {
	Dead      bool   // the pane's process had exited
	Status    string // its exit status ("" if killed by a signal)
	Signal    string // the signal that killed it, else ""
	Respawned bool   // argv runs in the pane now
	NewPID    int    // its pid, when Respawned
}

// ErrUnquotable means an argument cannot be quoted for a tmux command
// string (it holds a single quote or a newline): use RespawnPane.
var ErrUnquotable = errors.New("tmux: argument cannot be quoted in a command string")

// RespawnFailed reads, in one tmux client, the exit of the process pid in
// session name's pane and, if that process exited with a status other
// than 0 or was killed by a signal, respawns argv in the pane (`if-shell
// -F`: no shell). When the pane is not dead yet, has no status yet (tmux
// has not reaped the process) or runs another process, it changes nothing
// and Exit says so.
func (s *Server) RespawnFailed(ctx context.Context, name string, pid int, argv []string) (Exit, error) {
	if len(argv) < 2 {
		return Exit{}, errors.New("tmux: argv needs at least two elements to bypass the shell")
	}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		if strings.ContainsAny(a, "'\n") {
			return Exit{}, ErrUnquotable
		}
		quoted[i] = "'" + a + "'"
	}
	target := "=" + name + ":"
	p := strconv.Itoa(pid)
	// Dead is not enough: tmux may see the pane's end of file before it
	// has reaped the process, and then there is no status yet. A status is
	// true in a format unless empty or 0; a signal (tmux >= 3.3) unless
	// empty.
	failed := "#{&&:#{pane_dead},#{&&:#{==:#{pane_pid}," + p + "},#{||:#{pane_dead_signal},#{pane_dead_status}}}}"
	out, err := s.Run(ctx,
		"display-message", "-p", "-t", target, "#{pane_dead}|#{pane_pid}|#{pane_dead_status}|#{pane_dead_signal}", ";",
		"if-shell", "-F", "-t", target, failed, "respawn-pane -k -t '"+target+"' -- "+strings.Join(quoted, " "), ";",
		"display-message", "-p", "-t", target, "#{pane_dead}|#{pane_pid}")
	if err != nil {
		return Exit{}, err
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		return Exit{}, fmt.Errorf("tmux: unexpected answer %q", out)
	}
	before := strings.SplitN(lines[0], "|", 4)
	after := strings.SplitN(lines[1], "|", 2)
	if len(before) != 4 || len(after) != 2 || before[1] != p {
		return Exit{}, nil // another process (or an odd answer): nothing was done
	}
	x := Exit{Dead: before[0] == "1", Status: before[2], Signal: before[3]}
	failedExit := x.Signal != "" || x.Status != "" && x.Status != "0"
	if x.Dead && failedExit && after[0] == "0" && after[1] != p {
		x.Respawned = true
		if x.NewPID, err = parsePID(after[1]); err != nil {
			return x, err
		}
	}
	return x, nil
}

func parsePID(out string) (int, error) {
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("tmux: unexpected pane pid %q", out)
	}
	return pid, nil
}

// KillSession kills the session named exactly name.
func (s *Server) KillSession(ctx context.Context, name string) error {
	_, err := s.Run(ctx, "kill-session", "-t", "="+name)
	return err
}

// LastUsedSession is the session a person used last (the latest
// session_activity: an attach or a key), WatchSession left out; "" when
// there is none. `attach-session` without -t would pick it the same way,
// but could pick WatchSession, which the watcher's attach makes recent.
func (s *Server) LastUsedSession(ctx context.Context) (string, error) {
	out, err := s.Run(ctx, "list-sessions", "-F", "#{session_activity} #{session_name}")
	if err != nil {
		return "", err
	}
	best, bestAt := "", int64(-1)
	for _, l := range strings.Split(out, "\n") {
		at, name, ok := strings.Cut(l, " ")
		n, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil || name == WatchSession {
			continue
		}
		if n > bestAt {
			best, bestAt = name, n
		}
	}
	return best, nil
}

// HasSession reports whether the session named exactly name exists.
func (s *Server) HasSession(ctx context.Context, name string) bool {
	_, err := s.Run(ctx, "has-session", "-t", "="+name)
	return err == nil
}

// SendText types text literally into the active pane of the session named
// exactly name, then presses Enter. tmux reads an argument ending in ';'
// as a command separator, so a final ';' is sent escaped.
func (s *Server) SendText(ctx context.Context, name, text string) error {
	if err := s.TypeText(ctx, name, text); err != nil {
		return err
	}
	_, err := s.Run(ctx, "send-keys", "-t", "="+name+":", "Enter")
	return err
}

// TypeText types text literally into session name's pane, without Enter:
// what a person then completes and sends.
func (s *Server) TypeText(ctx context.Context, name, text string) error {
	_, err := s.Run(ctx, "send-keys", "-t", "="+name+":", "-l", "--", literalArg(text))
	return err
}

// literalArg is s as one tmux argument that is never a separator.
func literalArg(s string) string {
	if strings.HasSuffix(s, ";") {
		return s[:len(s)-1] + `\;`
	}
	return s
}

// KillServer kills the server and every session.
func (s *Server) KillServer(ctx context.Context) error {
	_, err := s.Run(ctx, "kill-server")
	return err
}

var versionRE = regexp.MustCompile(`(\d+)\.(\d+)`)

// parseVersion parses the output of tmux -V ("tmux 3.3a", "tmux next-3.4").
// "tmux master" is reported as 999.0.
func parseVersion(out string) (major, minor int, err error) {
	out = strings.TrimSpace(out)
	if strings.HasSuffix(out, "master") {
		return 999, 0, nil
	}
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		return 0, 0, fmt.Errorf("cannot parse tmux version %q", out)
	}
	major, _ = strconv.Atoi(m[1])
	minor, _ = strconv.Atoi(m[2])
	return major, minor, nil
}

// ErrUnusable means tmux is missing, cannot be run, or is older than 3.2.
var ErrUnusable = errors.New("unusable tmux")

// CheckVersion runs bin -V and requires at least minMajor.minMinor. Every
// error it returns wraps ErrUnusable.
func CheckVersion(ctx context.Context, bin string) error {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-V").Output()
	if err != nil {
		return fmt.Errorf("%w: %s -V: %w", ErrUnusable, bin, err)
	}
	v := strings.TrimSpace(string(out))
	major, minor, err := parseVersion(v)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnusable, err)
	}
	if major < minMajor || major == minMajor && minor < minMinor {
		return fmt.Errorf("%w: %s is %q; agent-box needs tmux >= %d.%d", ErrUnusable, bin, v, minMajor, minMinor)
	}
	return nil
}
