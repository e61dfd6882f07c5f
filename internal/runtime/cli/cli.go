// Package cli is the agent-box command line: argument parsing, dispatch to
// the runtime packages, and the mapping of errors to exit codes. Every
// failure prints exactly one line "agent-box: ..." on stderr (plus an
// optional "hint:" line); stdout carries only requested output.
package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/actions"
	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/agentsetup"
	"github.com/agent-box/agent-box/internal/runtime/appctl"
	"github.com/agent-box/agent-box/internal/runtime/approval"
	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/badconfig"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/control"
	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/agent-box/agent-box/internal/runtime/envfile"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/journal"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/seal"
	"github.com/agent-box/agent-box/internal/runtime/sessionsrv"
	"github.com/agent-box/agent-box/internal/runtime/sessionstate"
	"github.com/agent-box/agent-box/internal/runtime/spawn"
	"github.com/agent-box/agent-box/internal/runtime/state"
	"github.com/agent-box/agent-box/internal/runtime/supervisor"
	"github.com/agent-box/agent-box/internal/runtime/tmux"
)

// Exit codes (the contract; docs/runtime-contract.md, "Exit codes").
var (
	exitOK            = contract.ExitCodes.OK.Code
	exitFailure       = contract.ExitCodes.Failure.Code
	exitUsage         = contract.ExitCodes.Usage.Code
	exitUnknown       = contract.ExitCodes.Unknown.Code
	exitDuplicate     = contract.ExitCodes.Duplicate.Code
	exitInvalidName   = contract.ExitCodes.InvalidName.Code
	exitUnknownAgent  = contract.ExitCodes.UnknownAgent.Code
	exitCorrupt       = contract.ExitCodes.Corrupt.Code
	exitNotRunning    = contract.ExitCodes.NotRunning.Code
	exitForeignServer = contract.ExitCodes.ForeignServer.Code
	exitTmuxVersion   = contract.ExitCodes.TmuxVersion.Code
	exitForeignHome   = contract.ExitCodes.ForeignHome.Code
	exitConfig        = contract.ExitCodes.Config.Code
)

// Usage is agent-box help's table of commands, the one owner of the CLI's
// synopsis (docs/runtime-contract.md renders it: internal/doclists).
func Usage() string { return usageText }

// helpText is the usage and, from the contract, the exit codes.
var helpText = usageText + "session names: " + contract.Names.Session.Pattern + ";  env keys: [A-Za-z_][A-Za-z0-9_]*\n\nexit codes:\n" + exitCodesText()

const usageText = `usage: agent-box COMMAND [ARGS]

commands:
  session ls [--json]                          list sessions
  session add NAME... [--agent A] [--cwd D] [--prompt TEXT | --prompt-file FILE|-] [-- ARGS...]
                                               add sessions (started by the supervisor), all or
                                               none; the prompt reaches each agent's first
                                               conversation
  session add --file FILE|-                    add the sessions FILE lists, in the seed's format
                                               ({"sessions": [{"name", "agent", "args", "cwd",
                                               "prompt"}]}), all or none
  session rm NAME                              remove a session (its name is tombstoned)
  session stop NAME | start NAME               park / unpark a session
  session restart [--fresh] NAME | --all       restart through the supervisor
                                               (--fresh: a new conversation, not the last one)
  session attach [--sealed] [NAME]             attach this terminal to the session
                                               (--sealed: the tmux client can start no program)
  env ls                                       list the keys of ~/.config/agent-box/env
  env set KEY                                  set KEY to the value read from stdin
  env rm KEY                                   remove KEY
                                               ('session env ...' is a deprecated alias)
  disk                                         your disk use and quota on each filesystem it binds
  disk set USER SIZE | disk clear USER         set or take away USER's quota (as root: its unit's ExecStart and ExecStop)
  web hash-password                            read a password from stdin, print its hash
  web revoke LOGIN                             end every web session of LOGIN (as root)
  web serve                                    the web daemon (its unit's ExecStart)
  auth serve                                   the auth service (its unit's ExecStart)
  notify serve                                 the notify service (its unit's ExecStart)
  supervise                                    run the supervisor (its unit's ExecStart)
  tmux-server                                  become the user's tmux server (the sessions unit's ExecStart)
  app ls                                       your apps: state, since when, what the launcher says
  app status NAME                              one app's state
  app start NAME | stop NAME | restart NAME    start, stop or restart your app (polkit allows exactly these)
  app logs [-n N] NAME                         the app's last N lines (50) from your journal
  app-run --dir DIR [--wait-for FILE] -- PROGRAM [ARG...]
                                               run an app: wait for its program, keep it running (its unit's ExecStart)
  exec-session NAME                            run a session's agent (tmux runs this)
  agent-hook SETUP session-start               take the agent's report that a conversation started (its managed hook or plugin)
  agent-hook SETUP event EVENT                 take the agent's report of EVENT: an attention state (its managed hook or plugin)
  version                                      print the version
  help                                         print this help

`

// exitCodesText lists every exit code of the contract, one per line.
func exitCodesText() string {
	var b strings.Builder
	v := reflect.ValueOf(*contract.ExitCodes)
	for i := range v.NumField() {
		e := v.Field(i).Interface().(contract.ExitCode)
		fmt.Fprintf(&b, "  %2d %s\n", e.Code, e.Short)
	}
	return b.String()
}

// deprecatedSessionEnv is printed on stderr before `session env ...` runs
// as `env ...`.
const deprecatedSessionEnv = "agent-box: note: 'session env' is deprecated; use 'agent-box env ...'"

// Program is one run of agent-box: its version and standard streams. The
// environment is the process's own (os.Getenv, os.Environ).
type Program struct {
	Version string
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// Main runs one command and returns its exit code.
func (p *Program) Main(ctx context.Context, args []string) int {
	err := p.run(ctx, args)
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	fmt.Fprintf(p.Stderr, "agent-box: %s\n", escape.Terminal(err.Error()))
	var h interface{ Hint() string }
	switch {
	case errors.As(err, &h) && h.Hint() != "":
		fmt.Fprintf(p.Stderr, "hint: %s\n", escape.Terminal(h.Hint()))
	case code == exitUsage:
		fmt.Fprintln(p.Stderr, "hint: run 'agent-box help'")
	}
	return code
}

func exitCode(err error) int {
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	switch actions.KindOf(err) {
	case actions.Input:
		return exitUsage
	case actions.Unknown:
		return exitUnknown
	case actions.Duplicate:
		return exitDuplicate
	case actions.InvalidName:
		return exitInvalidName
	case actions.UnknownAgent:
		return exitUnknownAgent
	case actions.Corrupt:
		return exitCorrupt
	case actions.NotRunning:
		return exitNotRunning
	}
	// What only the CLI's own commands (supervise, attach, serve) meet.
	switch {
	case errors.Is(err, sessionsrv.ErrForeign):
		return exitForeignServer
	case errors.Is(err, tmux.ErrUnusable):
		return exitTmuxVersion
	case errors.Is(err, paths.ErrForeignHome):
		return exitForeignHome
	case badconfig.Is(err):
		return exitConfig
	case errors.Is(err, appctl.ErrName):
		return exitInvalidName
	case errors.Is(err, appctl.ErrUnknown):
		return exitUnknown
	}
	return exitFailure
}

func (p *Program) run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("missing command")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "help", "-h", "--help":
		fmt.Fprint(p.Stdout, helpText)
		return nil
	case "version", "--version":
		fmt.Fprintf(p.Stdout, "agent-box %s\n", p.Version)
		return nil
	case "session":
		if len(rest) == 0 {
			return usagef("session: missing subcommand")
		}
		if rest[0] == "env" {
			fmt.Fprintln(p.Stderr, deprecatedSessionEnv)
			return p.env(ctx, rest[1:])
		}
		return p.session(ctx, rest[0], rest[1:])
	case "env":
		return p.env(ctx, rest)
	case "auth":
		return p.auth(ctx, rest)
	case "web":
		return p.web(ctx, rest)
	case "notify":
		if len(rest) != 1 || rest[0] != "serve" {
			return usagef("usage: notify serve")
		}
		return p.notifyServe(ctx)
	case "supervise":
		if len(rest) != 0 {
			return usagef("supervise takes no arguments")
		}
		return p.supervise(ctx)
	case "app":
		return p.app(ctx, rest)
	case "disk":
		return p.disk(rest)
	case "app-run":
		return p.appRun(ctx, rest)
	case "tmux-server":
		if len(rest) != 0 {
			return usagef("tmux-server takes no arguments")
		}
		return p.tmuxServer(ctx)
	case "exec-session":
		if len(rest) != 1 {
			return usagef("usage: exec-session NAME")
		}
		return p.execSession(rest[0])
	case "agent-hook":
		switch {
		case len(rest) == 2 && slices.Contains(contract.Conversations.Setups, rest[0]) && rest[1] == "session-start":
			p.agentHook()
		case len(rest) == 3 && slices.Contains(attention.HookSetups(), rest[0]) && rest[1] == "event":
			p.agentEvent(rest[0], rest[2])
		default:
			return usagef("usage: agent-hook %s session-start\n       agent-hook %s event EVENT",
				strings.Join(contract.Conversations.Setups, "|"), strings.Join(attention.HookSetups(), "|"))
		}
		return nil
	}
	return usagef("unknown command %q", cmd)
}

// envCfg is the environment every command that touches the user's files
// works in: HOME must belong to the user running, and what the environment
// leaves unset comes from the module's root-owned login file.
func (p *Program) envCfg() (paths.Env, error) {
	e, err := paths.FromEnv(os.Getenv)
	if err != nil {
		return e, err
	}
	if err := e.CheckOwnHome(); err != nil {
		return e, err
	}
	return e.WithLogin()
}

func (p *Program) session(ctx context.Context, sub string, args []string) error {
	e, err := p.envCfg()
	if err != nil {
		return err
	}
	one := func() (string, error) {
		if len(args) != 1 {
			return "", usagef("usage: session %s NAME", sub)
		}
		return args[0], registry.CheckName(args[0])
	}
	switch sub {
	case "ls":
		asJSON := false
		for _, a := range args {
			if a != "--json" {
				return usagef("usage: session ls [--json]")
			}
			asJSON = true
		}
		return p.ls(ctx, e, asJSON)
	case "add":
		return p.add(ctx, e, args)
	case "rm":
		name, err := one()
		if err != nil {
			return err
		}
		if err := actions.Remove(ctx, e, name); err != nil {
			return err
		}
		p.noteIfNotRunning(e)
		return nil
	case "stop", "start":
		name, err := one()
		if err != nil {
			return err
		}
		if err := actions.SetStopped(ctx, e, name, sub == "stop"); err != nil {
			return err
		}
		p.noteIfNotRunning(e)
		return nil
	case "restart":
		if len(args) == 2 && args[0] == "--fresh" && !strings.HasPrefix(args[1], "-") {
			return actions.RestartFresh(ctx, e, args[1])
		}
		if len(args) != 1 || strings.HasPrefix(args[0], "-") && args[0] != "--all" {
			return usagef("usage: session restart [--fresh] NAME | session restart --all")
		}
		name := args[0]
		if name == "--all" {
			name = ""
		}
		return actions.Restart(e, name)
	case "attach":
		sealed := len(args) > 0 && args[0] == "--sealed"
		if sealed {
			args = args[1:]
		}
		if len(args) > 1 || len(args) == 1 && strings.HasPrefix(args[0], "-") {
			return usagef("usage: session attach [--sealed] [NAME]")
		}
		return p.attach(ctx, e, args, sealed)
	}
	return usagef("unknown session subcommand %q", sub)
}

func (p *Program) noteIfNotRunning(e paths.Env) {
	if _, err := state.Read(e.StateFile()); errors.Is(err, state.ErrNotRunning) {
		fmt.Fprintln(p.Stderr, "agent-box: note: supervisor not running; the change applies when it starts")
	}
}

// addUsage is the synopsis of session add.
const addUsage = "usage: session add NAME... [--agent A] [--cwd D] [--prompt TEXT | --prompt-file FILE|-] [-- ARGS...] | session add --file FILE|-"

// add adds one session or several in one registry write, all or none:
// NAME... share the options; --file reads sessions in the seed file's
// format (registry.ParseSeed).
func (p *Program) add(ctx context.Context, e paths.Env, args []string) error {
	var names []string
	var agent, cwd, prompt, promptFile, file string
	var extra []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			extra = append([]string{}, args[i+1:]...)
			i = len(args)
		case a == "--agent" || a == "--cwd" || a == "--prompt" || a == "--prompt-file" || a == "--file":
			if i+1 >= len(args) {
				return usagef("%s needs a value", a)
			}
			switch a {
			case "--agent":
				agent = args[i+1]
			case "--cwd":
				cwd = args[i+1]
			case "--prompt":
				prompt = args[i+1]
			case "--file":
				file = args[i+1]
			default:
				promptFile = args[i+1]
			}
			i++
		case strings.HasPrefix(a, "--agent="):
			agent = strings.TrimPrefix(a, "--agent=")
		case strings.HasPrefix(a, "--cwd="):
			cwd = strings.TrimPrefix(a, "--cwd=")
		case strings.HasPrefix(a, "--prompt="):
			prompt = strings.TrimPrefix(a, "--prompt=")
		case strings.HasPrefix(a, "--prompt-file="):
			promptFile = strings.TrimPrefix(a, "--prompt-file=")
		case strings.HasPrefix(a, "--file="):
			file = strings.TrimPrefix(a, "--file=")
		case strings.HasPrefix(a, "-"):
			return usagef("session add: unknown flag %q", a)
		default:
			names = append(names, a)
		}
	}
	if file != "" {
		if len(names) > 0 || agent != "" || cwd != "" || prompt != "" || promptFile != "" || extra != nil {
			return usagef("session add: --file takes the sessions and their settings from the file alone\n%s", addUsage)
		}
		return p.addFile(ctx, e, file)
	}
	if len(names) == 0 || slices.Contains(names, "") {
		return usagef("%s", addUsage)
	}
	if promptFile != "" {
		if prompt != "" {
			return usagef("session add: --prompt and --prompt-file exclude each other")
		}
		var err error
		if prompt, err = p.readPrompt(promptFile); err != nil {
			return err
		}
	}
	specs := make([]actions.Spec, len(names))
	for i, name := range names {
		if err := registry.CheckName(name); err != nil {
			return err
		}
		specs[i] = actions.Spec{Name: name, Agent: agent, Cwd: cwd, Args: extra, Prompt: prompt}
	}
	return p.addAll(ctx, e, specs)
}

// addFile adds the sessions of file ("-": stdin) in the seed's format.
func (p *Program) addFile(ctx context.Context, e paths.Env, file string) error {
	r := p.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return usagef("--file: %v", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(registry.MaxSeedSize)+1))
	if err != nil {
		return usagef("--file: %v", err)
	}
	if len(data) > registry.MaxSeedSize {
		return usagef("--file: over %d bytes", registry.MaxSeedSize)
	}
	seed, err := registry.ParseSeed(data)
	if err != nil {
		return usagef("--file %s: %v", escape.Quote(file, 200), err)
	}
	specs := make([]actions.Spec, len(seed.Sessions))
	for i, s := range seed.Sessions {
		specs[i] = actions.Spec{Name: s.Name, Agent: s.Agent, Cwd: s.Cwd, Args: s.Args, Prompt: s.Prompt}
	}
	return p.addAll(ctx, e, specs)
}

func (p *Program) addAll(ctx context.Context, e paths.Env, specs []actions.Spec) error {
	table, def, err := actions.Agents(e)
	if err != nil {
		return err
	}
	if err := actions.AddAll(ctx, e, table, def, specs); err != nil {
		return err
	}
	p.noteIfNotRunning(e)
	return nil
}

// agentHook takes an agent's report that a conversation started (the
// SessionStart hook input of Claude Code and of Codex, the same fields,
// measured with 2.1.328 and 0.171.0; OpenCode's managed plugin writes them
// too) for the session the environment
// names. It never fails the agent: it prints nothing on stdout (Claude
// adds a SessionStart hook's output to the conversation), exits 0, and
// outside a supervised session (no AGENT_BOX_SESSION) does nothing at
// once. A refused or failed report is logged to the journal.
func (p *Program) agentHook() {
	if os.Getenv(contract.Env.Session.Name) == "" {
		return
	}
	log := journal.New(journal.Native{Identifier: "agent-box", Fallback: p.Stderr}, "agent-box")
	e, err := p.envCfg()
	if err != nil {
		log.Printf("agent-hook: %v", err)
		return
	}
	rep, err := conversation.ReadReport(p.Stdin)
	if err != nil {
		log.Printf("agent-hook: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	name, err := conversation.Accept(ctx, os.Getenv, e, conversation.ProcFS{}, os.Getpid(), rep, time.Now().UTC())
	switch {
	case errors.Is(err, conversation.ErrNotOurs):
		// a conversation started inside the session: not the session's
		log.Printf("session %s: ignored the report of conversation %s: %v", escape.Quote(name, 64), rep.SessionID, err)
	case err != nil:
		log.Printf("agent-hook: session %s: %v", escape.Quote(name, 64), err)
	default:
		log.Printf("session %s: the agent reports conversation %s (%s)", escape.Quote(name, 64), rep.SessionID, escape.Quote(rep.Source, 64))
	}
}

// SpawnProgram, when set, is the program the supervisor has tmux run in
// every pane (as SpawnProgram exec-session NAME) instead of
// agent-box-exec. A variable for tests only: the tests run the test
// binary there, the benchmarks the shipped, static build of agent-box.
var SpawnProgram string

// spawnProgram is what tmux runs in each pane: agent-box-exec beside the
// supervisor's own executable self (the same build: the module installs
// both, the VM tier too). Without it the supervisor cannot start agents.
func spawnProgram(self string) (string, error) {
	if SpawnProgram != "" {
		return SpawnProgram, nil
	}
	p := filepath.Join(filepath.Dir(self), contract.Programs.Spawn.Name)
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s: the program tmux runs in each pane is missing beside %s (%v): agent-box is not installed whole", contract.Programs.Spawn.Name, escape.String(self), err)
	}
	return p, nil
}

// AuthStatus is where the supervisor reports attention states: the auth
// service's status socket. A variable for tests only.
var AuthStatus = contract.Sockets.AuthStatus.Path

// agentEvent takes an agent's report that its session's attention state
// changed: the hook (or plugin) installed for event, with the agent's
// input for it on stdin (read up to the contract's eventMaxBytes, the rest
// drained). From the session's own agent only, the state it means
// (attention.FromHook: only the contract's names) goes to the supervisor
// as one datagram. Like agentHook it never fails the agent: nothing on
// stdout, exit 0, refusals and errors in the journal.
func (p *Program) agentEvent(setup, event string) {
	max := int64(contract.Attention.EventMaxBytes)
	input, err := io.ReadAll(io.LimitReader(p.Stdin, max+1))
	io.Copy(io.Discard, io.LimitReader(p.Stdin, 1<<30))
	if os.Getenv(contract.Env.Session.Name) == "" {
		return
	}
	log := journal.New(journal.Native{Identifier: "agent-box", Fallback: p.Stderr}, "agent-box")
	if err == nil && int64(len(input)) > max {
		input = nil // only an event with details reads it: an error there
	}
	ev, err := attention.FromHook(setup, event, input)
	if errors.Is(err, attention.ErrUnmapped) {
		return
	}
	if err != nil {
		log.Printf("agent-hook: %v", err)
		return
	}
	name, err := conversation.Reporter(os.Getenv, conversation.ProcFS{}, os.Getpid())
	if err != nil {
		log.Printf("session %s: ignored the %s event %s: %v", escape.Quote(name, 64), setup, escape.Quote(event, 64), err)
		return
	}
	e, err := p.envCfg()
	if err != nil {
		log.Printf("agent-hook: %v", err)
		return
	}
	req := control.Attend(name, ev.State, ev.Reason)
	if ev.State == attention.Limited {
		var reset time.Time
		if r, ok := agentsetup.For(setup).(agentsetup.LimitReporter); ok {
			reset, err = r.LimitReset(input, time.Now())
			switch {
			case errors.Is(err, agentsetup.ErrNotALimit):
				return
			case err != nil:
				log.Printf("session %s: the usage limit's reset is unknown: %v", escape.Quote(name, 64), err)
			}
		}
		req = control.AttendLimit(name, ev.Reason, reset)
	}
	if err := control.Send(e.SupervisorSocket(), req.Format()); err != nil {
		log.Printf("agent-hook: session %s: telling the supervisor: %v", escape.Quote(name, 64), err)
	}
	if approval.Asks(setup, event) {
		p.askApproval(log, e, setup, name, input)
	}
}

// askApproval is the hook of an event that waits for a person's decision
// (the contract's approvals.agentEvents: Claude's and Codex's permission
// hooks): the
// request goes to the auth service through the supervisor (which has the
// status socket's group; the session's unit has not), and the decision, when one comes
// before the service's deadline, is printed for the agent. No decision,
// no web surface or any failure prints nothing: the agent's own prompt
// stays, as without agent-box.
func (p *Program) askApproval(log *journal.Logger, e paths.Env, setup, name string, input []byte) {
	id := make([]byte, 16)
	rand.Read(id)
	req, err := approval.FromHook(setup, hex.EncodeToString(id), name, input)
	if err != nil {
		log.Printf("session %s: no permission request to ask: %v", escape.Quote(name, 64), err)
		return
	}
	lim := contract.Approvals
	ctx, cancel := context.WithTimeout(context.Background(), contract.Duration(lim.Wait.Max)+time.Minute)
	defer cancel()
	a, err := approval.Wait(ctx, e.ApprovalSocket(), req, contract.Duration(lim.RetryEvery))
	switch {
	case errors.Is(err, approval.ErrNoService):
		return
	case err != nil:
		log.Printf("session %s: permission request %s: %v", escape.Quote(name, 64), req.ID, err)
		return
	}
	log.Printf("session %s: permission request %s (%s): %s%s", escape.Quote(name, 64), req.ID, escape.Quote(req.Tool, 64), a.Decision, byWhom(a.By))
	p.Stdout.Write(approval.Output(setup, a, input))
}

func byWhom(by string) string {
	if by == "" {
		return ""
	}
	return " by " + by
}

// readPrompt reads a kickoff prompt from file ("-": stdin), at most the
// contract's limit.
func (p *Program) readPrompt(file string) (string, error) {
	r := p.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return "", usagef("--prompt-file: %v", err)
		}
		defer f.Close()
		r = f
	}
	max := int64(contract.Conversations.PromptMaxBytes)
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return "", usagef("--prompt-file: %v", err)
	}
	if int64(len(data)) > max {
		return "", usagef("--prompt-file: the prompt is over %d bytes", max)
	}
	return string(data), nil
}

func (p *Program) ls(ctx context.Context, e paths.Env, asJSON bool) error {
	out, err := sessionstate.List(ctx, e, p.tmuxBin(e), os.Environ())
	if err != nil {
		return err
	}
	if asJSON {
		data, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.Stdout, "%s\n", data)
		return err
	}
	tw := tabwriter.NewWriter(p.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tAGENT\tSTATE\tRESTARTS\tATTENTION\tCWD")
	apply := 0
	var notes []string
	for _, le := range out {
		st := le.State
		if le.RestartToApply {
			st += " (restart to apply)"
			apply++
		}
		att := "-"
		if a := le.Attention; a != nil {
			att = a.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", escape.String(le.Name), escape.String(le.Agent), st, le.Restarts, escape.String(att), escape.String(le.Cwd))
		if le.Note != "" {
			notes = append(notes, fmt.Sprintf("agent-box: session %s: %s", escape.String(le.Name), escape.String(le.Note)))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// notices go to stderr: stdout stays the table
	for _, n := range notes {
		fmt.Fprintln(p.Stderr, n)
	}
	if apply > 0 {
		fmt.Fprintf(p.Stderr, "agent-box: %d session(s) run an older configuration: 'agent-box session restart NAME' applies the current one\n", apply)
	}
	if running, installed, ok := sessionstate.TmuxWaiting(e); ok {
		fmt.Fprintf(p.Stderr, "agent-box: the tmux server runs %s; %s is installed and takes over when %s restarts (that ends every session)\n",
			escape.String(running), escape.String(installed), sessionsrv.Unit())
	}
	return nil
}

// tmuxBin is $AGENT_BOX_TMUX (the unit's, else the login file's), else
// tmux from PATH; never what state.json names, which its owner can write.
func (p *Program) tmuxBin(e paths.Env) string {
	if e.Tmux != "" {
		return e.Tmux
	}
	b, _ := exec.LookPath("tmux")
	if b != "" {
		b, _ = filepath.Abs(b)
	}
	return b
}

// attach replaces this process with `tmux -N -S SOCKET attach-session`,
// the server's own program, after sessionsrv.Open's checks. It never
// starts a server (-N). Sealed (the web terminal's attach, in
// agent-box-term@U), the tmux client can start no program (package seal):
// whatever the server asks of it, it runs nothing.
func (p *Program) attach(ctx context.Context, e paths.Env, args []string, sealed bool) error {
	srv, err := sessionsrv.Open(e, p.tmuxBin(e), os.Environ())
	if errors.Is(err, sessionsrv.ErrNoServer) {
		return fmt.Errorf("%w (%v)", state.ErrNotRunning, err)
	}
	if err != nil {
		return err
	}
	argv := []string{srv.Bin, "-N", "-S", srv.Socket, "attach-session"}
	if len(args) == 1 {
		name := args[0]
		if err := registry.CheckName(name); err != nil {
			return err
		}
		if !srv.HasSession(ctx, name) {
			reg, err := registry.Load(e.Registry())
			if err == nil {
				if _, ok := reg.Find(name); !ok {
					return fmt.Errorf("%w: %q", registry.ErrUnknown, name)
				}
			}
			return fmt.Errorf("session %q is not running", name)
		}
		argv = append(argv, "-t", "="+name)
	} else {
		name, err := srv.LastUsedSession(ctx)
		if err != nil {
			return err
		}
		if name == "" {
			return errors.New("no session is running")
		}
		argv = append(argv, "-t", "="+name)
	}
	if sealed {
		return seal.Exec(srv.Bin, argv, os.Environ())
	}
	return syscall.Exec(srv.Bin, argv, os.Environ())
}

func (p *Program) env(ctx context.Context, args []string) error {
	e, err := p.envCfg()
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return usagef("env: missing subcommand (ls, set KEY, rm KEY)")
	}
	switch {
	case args[0] == "ls" && len(args) == 1:
		keys, err := envfile.Keys(e.EnvFile())
		if err != nil {
			return err
		}
		for _, k := range keys {
			fmt.Fprintln(p.Stdout, k)
		}
		return nil
	case args[0] == "set" && len(args) == 2:
		if err := envfile.CheckKey(args[1]); err != nil {
			return err
		}
		data, err := io.ReadAll(p.Stdin)
		if err != nil {
			return err
		}
		val := strings.TrimSuffix(string(data), "\n")
		return envfile.Set(ctx, e.EnvFile(), args[1], val)
	case args[0] == "rm" && len(args) == 2:
		return envfile.Remove(ctx, e.EnvFile(), args[1])
	}
	return usagef("usage: env ls | env set KEY | env rm KEY")
}

func (p *Program) supervise(ctx context.Context) error {
	e, err := p.envCfg()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return err
	}
	spawnProg, err := spawnProgram(self)
	if err != nil {
		return err
	}
	bin := e.Tmux
	if bin == "" {
		if bin, err = exec.LookPath("tmux"); err != nil {
			return fmt.Errorf("%w: tmux not found in PATH and %s unset", tmux.ErrUnusable, paths.EnvTmux)
		}
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	// the version is checked once, by supervisor.Run once it holds the lock
	table := agents.Table{}
	if e.AgentsFile != "" {
		if table, err = agents.Load(e.AgentsFile); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(p.Stderr, "agent-box: warning: %s unset: no agents, no session will start\n", paths.EnvAgents)
	}
	silence, err := attention.SilenceAfter(os.Getenv(contract.Env.SilenceAfter.Name))
	if err != nil {
		return badconfig.Wrap("supervise", err)
	}
	limits, err := supervisor.LimitsFromEnv(os.Getenv)
	if err != nil {
		return badconfig.Wrap("supervise", err)
	}
	return supervisor.Run(ctx, supervisor.Config{
		Env: e, Spawn: spawnProg, TmuxBin: bin, ProcEnv: os.Environ(), SpawnEnv: spawn.ForSessions(os.Environ()), Agents: table,
		DefaultAgent: e.DefaultAgent, Version: p.Version, Log: p.Stderr, SilenceAfter: silence, AuthStatus: AuthStatus,
		Limits: limits,
	})
}

// tmuxServer is the sessions unit's ExecStart: it becomes the user's tmux
// server in the foreground (package sessionsrv).
func (p *Program) tmuxServer(ctx context.Context) error {
	e, err := p.envCfg()
	if err != nil {
		return err
	}
	bin := p.tmuxBin(e)
	if bin == "" {
		return fmt.Errorf("%w: tmux not found in PATH and %s unset", tmux.ErrUnusable, paths.EnvTmux)
	}
	return sessionsrv.Serve(ctx, e, bin, os.Environ())
}

// execSession is agent-box-exec's one command, kept in agent-box too
// (package spawn, Session).
func (p *Program) execSession(name string) error {
	return spawn.Session(name, p.Stderr)
}
