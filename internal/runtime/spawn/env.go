package spawn

import (
	"github.com/agent-box/agent-box/internal/runtime/contract"

	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/atomicfile"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// The spawn environment is how a configuration reaches FUTURE spawns
// without restarting the tmux server (and so every agent): the supervisor,
// restarted by every switch that changes it, writes its own environment
// (the host's PATH, AGENT_BOX_* paths, `environment`, `environmentFiles`)
// to the runtime directory; exec-session lays it over the environment it
// inherited from the server, which is the sessions unit's and was set when
// the server started. Running agents keep what they were started with.

// MaxEnvFileSize bounds the spawn environment file (Linux allows at most
// a few MiB of arguments and environment per execve anyway).
const MaxEnvFileSize = 4 << 20

// perInvocation are variables systemd sets for one invocation of a unit:
// the supervisor's are not the agents' (the server's, from the sessions
// unit, stay).
var perInvocation = map[string]bool{
	"INVOCATION_ID": true, "JOURNAL_STREAM": true, "SYSTEMD_EXEC_PID": true,
	"MANAGERPID": true, "MAINPID": true, "NOTIFY_SOCKET": true,
	"WATCHDOG_PID": true, "WATCHDOG_USEC": true, "LISTEN_PID": true,
	"LISTEN_FDS": true, "LISTEN_FDNAMES": true, "RUNTIME_DIRECTORY": true,
	"STATE_DIRECTORY": true, "CREDENTIALS_DIRECTORY": true, "MONITOR_SERVICE_RESULT": true,
}

// supervisorOnly are the supervisor's own settings: not the agents', and
// a change of them is no reason to restart a session.
var supervisorOnly = map[string]bool{contract.Env.SilenceAfter.Name: true}

// ForSessions is the part of the supervisor's environment environ that
// new sessions get, sorted: all but systemd's per-invocation variables,
// the supervisor's own settings and malformed entries.
func ForSessions(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || perInvocation[k] || supervisorOnly[k] {
			continue
		}
		out = append(out, kv)
	}
	sort.Strings(out)
	return out
}

type envFile struct {
	Env []string `json:"env"`
}

// WriteEnv writes the spawn environment env to path (0600, atomically).
func WriteEnv(path string, env []string) error {
	data, err := json.Marshal(envFile{Env: env})
	if err != nil {
		return err
	}
	if len(data) > MaxEnvFileSize {
		return fmt.Errorf("spawn environment %q would hold %d bytes, more than %d", path, len(data), MaxEnvFileSize)
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o600)
}

// Overlay returns inherited with the spawn environment of path laid over
// it (its variables replace inherited ones of the same name). A missing
// file changes nothing (agent-box run without a supervisor); any other
// problem is an error, so a session never starts with half a
// configuration.
func Overlay(inherited []string, path string) ([]string, error) {
	data, err := userfile.Read(path, MaxEnvFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return inherited, nil
	}
	if err != nil {
		return nil, fmt.Errorf("spawn environment: %w", err)
	}
	var f envFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("spawn environment %q: %w", path, err)
	}
	over := map[string]bool{}
	for _, kv := range f.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("spawn environment %q: entry %q is not KEY=VALUE", path, kv)
		}
		over[k] = true
	}
	var out []string
	for _, kv := range inherited {
		k, _, _ := strings.Cut(kv, "=")
		if !over[k] {
			out = append(out, kv)
		}
	}
	return append(out, f.Env...), nil
}

// Fingerprint names what a session of agent a is started with: the spawn
// environment, the program that execs it (self) and a's table entry. A
// session whose recorded fingerprint differs from the current one runs an
// older configuration: a restart of the session applies the new one.
func Fingerprint(env []string, self string, a agents.Agent) string {
	h := sha256.New()
	entry, _ := json.Marshal(a)
	for _, part := range append([]string{self, string(entry)}, env...) {
		fmt.Fprintf(h, "%d:%s\n", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Fingerprints is Fingerprint for every agent of table.
func Fingerprints(env []string, self string, table agents.Table) map[string]string {
	out := make(map[string]string, len(table))
	for name, a := range table {
		out[name] = Fingerprint(env, self, a)
	}
	return out
}
