package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/paths"
)

// Report is what an agent says when a conversation starts (Claude Code's
// SessionStart hook input; other fields are ignored).
type Report struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Source         string `json:"source"`
}

// ErrNotOurs: the reporter is not the session's own agent, or runs
// outside a supervised session. The hook then changes nothing and exits 0.
var ErrNotOurs = errors.New("not the session's own agent")

// ReadReport reads and validates a report: at most the contract's
// reportMaxBytes of JSON, an id of at most 128 letters, digits, '-', '_'
// or '.', an absolute transcript path of at most 4095 bytes.
func ReadReport(r io.Reader) (Report, error) {
	max := int64(contract.Conversations.ReportMaxBytes)
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return Report{}, err
	}
	if int64(len(data)) > max {
		return Report{}, fmt.Errorf("the report is over %d bytes", max)
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return Report{}, fmt.Errorf("the report is not JSON: %w", err)
	}
	if !ValidID(rep.SessionID) {
		return Report{}, fmt.Errorf("the report's session_id %s is not an id", escape.Quote(rep.SessionID, 64))
	}
	if !filepath.IsAbs(rep.TranscriptPath) || len(rep.TranscriptPath) > 4095 || strings.IndexByte(rep.TranscriptPath, 0) >= 0 {
		return Report{}, fmt.Errorf("the report's transcript_path %s is not an absolute path", escape.Quote(rep.TranscriptPath, 64))
	}
	if len(rep.Source) > 64 {
		rep.Source = rep.Source[:64]
	}
	return rep, nil
}

// ValidID reports whether s may be a conversation id: 1 to 128 letters,
// digits, '-', '_' or '.' (never a quote: an id may be put between quotes
// in SQL, package opencodestate).
func ValidID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Procs reads the process table (/proc in production).
type Procs interface {
	PPid(pid int) (int, error)
	Exe(pid int) (string, error)
}

// CheckReporter decides whether the process self, the hook, speaks for the
// session's agent. agentPid is the pid exec-session had (it execs the
// agent, so it is the pane's process): the agent runs the hook as
// `exec agent-box ...` under /bin/sh -c, so the hook's parent is the
// agent process. It is accepted when that parent is agentPid, or a direct
// child of it running another program (a wrapper script in the pane that
// starts the agent). A `claude` started inside the session (by the agent's
// shell tool or a person) is a deeper descendant, or a child running the
// same program as the pane's process: refused with ErrNotOurs.
func CheckReporter(p Procs, self, agentPid int) error {
	parent, err := p.PPid(self)
	if err != nil {
		return fmt.Errorf("%w: reading the reporter's parent: %v", ErrNotOurs, err)
	}
	if parent == agentPid {
		return nil
	}
	grand, err := p.PPid(parent)
	if err != nil {
		return fmt.Errorf("%w: reading pid %d: %v", ErrNotOurs, parent, err)
	}
	if grand != agentPid {
		return fmt.Errorf("%w: pid %d is neither the pane's process %d nor its child", ErrNotOurs, parent, agentPid)
	}
	a, errA := p.Exe(parent)
	b, errB := p.Exe(agentPid)
	if errA != nil || errB != nil || a == b {
		return fmt.Errorf("%w: pid %d runs the pane's own program: a conversation started inside the session", ErrNotOurs, parent)
	}
	return nil
}

// Reporter is the session whose own agent the process self speaks for
// (the session named in the environment exec-session gave its agent,
// CheckReporter), else ErrNotOurs. Every report of an agent (a
// conversation, an attention state) is taken only from it.
func Reporter(getenv func(string) string, p Procs, self int) (session string, err error) {
	name := getenv(contract.Env.Session.Name)
	pid, perr := strconv.Atoi(getenv(contract.Env.AgentPid.Name))
	if name == "" || perr != nil || pid <= 1 {
		return "", fmt.Errorf("%w: no supervised session (%s and %s unset)", ErrNotOurs, contract.Env.Session.Name, contract.Env.AgentPid.Name)
	}
	if !contract.Names.Session.Match(name) {
		return "", fmt.Errorf("%w: %s is not a session name", ErrNotOurs, escape.Quote(name, 64))
	}
	return name, CheckReporter(p, self, pid)
}

// ProcFS reads /proc.
type ProcFS struct{}

func (ProcFS) PPid(pid int) (int, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// pid (comm) state ppid ...: comm may hold spaces and ')'.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return 0, errors.New("malformed stat")
	}
	return strconv.Atoi(f[1])
}

func (ProcFS) Exe(pid int) (string, error) {
	return os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
}

// Accept takes a report for the session named in the environment (set by
// exec-session for its agent) into the session's record: from the
// session's own agent only (CheckReporter), else ErrNotOurs.
func Accept(ctx context.Context, getenv func(string) string, e paths.Env, p Procs, self int, rep Report, now time.Time) (session string, err error) {
	name, err := Reporter(getenv, p, self)
	if err != nil {
		return name, err
	}
	return name, Update(ctx, e.ConversationsDir(), name, func(r *Record) error {
		if r.ID != rep.SessionID {
			r.Seen = false
		}
		if r.Fresh != nil && r.Fresh.ID == "" && r.ID == "" {
			// the new conversation a spawn started fresh, whose id the
			// agent chose: the note stays while it is the session's
			r.Fresh.ID = rep.SessionID
		}
		r.ID, r.Transcript, r.Source, r.Reported = rep.SessionID, rep.TranscriptPath, rep.Source, now
		return nil
	})
}
