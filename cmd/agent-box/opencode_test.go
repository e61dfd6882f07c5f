package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/conversation"
	"github.com/agent-box/agent-box/internal/runtime/opencodestate"
	"github.com/agent-box/agent-box/internal/runtime/sessionstate"
	"github.com/agent-box/agent-box/internal/scriptedmodel"
	"github.com/agent-box/agent-box/internal/vmtest"
)

// The claude golden: the module's opencode profile (its agents table) and
// OpenCode's managed files.
const (
	goldenFiles  = "../../tests/golden/claude/files"
	goldenAgents = "nix/store/00000000000000000000000000000000-agent-box-agents-ada.json"
	goldenRT     = "/nix/store/00000000000000000000000000000000-agent-box-runtime/bin/agent-box"
	ocModelAddr  = "127.0.0.1:8099"
)

// TestOpenCodeUnattended runs the real, pinned OpenCode (vmtest.OpenCode:
// the npm registry's package, integrity-checked, cached beside the VM
// images) as a session's agent under the real supervisor, exec-session and
// tmux, with the module's opencode profile and the golden bytes of
// /etc/opencode (in the managed-config directory OpenCode takes from
// OPENCODE_TEST_MANAGED_CONFIG_DIR; the guide's path rewritten to it, the
// plugin's runtime to this test binary). Each spawn runs in a network
// namespace of its own with the scripted model on its loopback and no
// route out, under strace, so every connection OpenCode tries is seen.
// The VM tier does not run OpenCode: one start and turn took 20 CPU
// seconds and 1 GB of memory here, too much for its TCG guests.
func TestOpenCodeUnattended(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: OpenCode runs in a network namespace of its own (unshare -n); CI and `make test` run as root")
	}
	tools := map[string]string{}
	for _, name := range []string{"unshare", "ip", "strace", "bash", "sqlite3"} {
		if tools[name] = lookTool(name); tools[name] == "" {
			t.Fatalf("%s is required on PATH (scripts/deps installs it)", name)
		}
	}
	ctx := context.Background()
	opencode, err := vmtest.OpenCode.Ensure(ctx, io.Discard)
	if err != nil {
		t.Fatalf("the pinned OpenCode: %v", err)
	}
	b := newBox(t, "")
	dir := t.TempDir()
	managed, modelLog, traces := filepath.Join(dir, "etc-opencode"), filepath.Join(dir, "model.jsonl"), filepath.Join(dir, "connect")
	// What the test started and the box no longer owns: the models, and
	// (strace detaches its tracee when it dies) any OpenCode left.
	t.Cleanup(func() {
		exec.Command("pkill", "-9", "-f", "test-agent scripted-model "+ocModelAddr+" "+modelLog).Run()
		exec.Command("pkill", "-9", "-f", "strace -f -qq -e trace=connect -o "+traces).Run()
		killAll(opencode)
	})

	ocManaged(t, managed, b.home)
	guide, _ := os.ReadFile(filepath.Join(managed, "AGENTS.md"))
	guideLine := "Guide marker for the tests: the host's own line."
	if !strings.Contains(string(guide), guideLine) {
		t.Fatalf("the golden guide lacks %q", guideLine)
	}

	// The session's agent: the module's profile, its command a wrapper
	// that makes the namespace, starts the model in it and execs OpenCode
	// under strace (the pane's process stays the wrapper's pid: unshare
	// and bash exec; OpenCode is its child, as a wrapper script's agent).
	provider, _ := json.Marshal(map[string]any{
		"model": "scripted/claude-x",
		"provider": map[string]any{"scripted": map[string]any{
			"npm": "@ai-sdk/anthropic", "name": "Scripted",
			"options": map[string]any{"baseURL": "http://" + ocModelAddr + "/v1", "apiKey": "{env:ANTHROPIC_API_KEY}"},
			"models":  map[string]any{"claude-x": map[string]any{"name": "Claude X"}},
		}},
	})
	wrapper := filepath.Join(dir, "opencode-netns")
	script := fmt.Sprintf(`#!/bin/bash
set -euo pipefail
ip link set lo up
# not a child of the pane's process (strace waits for its children)
(%s test-agent scripted-model %s %s </dev/null >/dev/null 2>&1 &)
for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/8099) 2>/dev/null && break; sleep 0.05; done
export AGENT_BOX_TEST_PROGRAM=1 ANTHROPIC_API_KEY=sk-test
export OPENCODE_TEST_MANAGED_CONFIG_DIR=%s
export OPENCODE_CONFIG_CONTENT=%s
exec %s -f -qq -e trace=connect -o %s.$$ %s "$@"
`, shellQuote(testBinary(t)), ocModelAddr, shellQuote(modelLog), shellQuote(managed), shellQuote(string(provider)), tools["strace"], shellQuote(traces), shellQuote(opencode))
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var golden map[string]agents.Agent
	data, err := os.ReadFile(filepath.Join(goldenFiles, goldenAgents))
	if err == nil {
		err = json.Unmarshal(data, &golden)
	}
	if err != nil {
		t.Fatal(err)
	}
	ag, ok := golden["opencode"]
	if !ok || ag.Setup != "opencode" {
		t.Fatalf("the golden agents table has no opencode profile: %s", data)
	}
	ag.Command, ag.Args = tools["unshare"], []string{"-n", "--", tools["bash"], wrapper}
	b.addAgent("opencode", ag)

	b.startSupervisor()
	kick := filepath.Join(b.home, "kickoff.txt")
	prompt := "run: echo opencode-kickoff > " + kick
	b.ok("session", "add", "oc", "--agent", "opencode", "--prompt", prompt)
	oc := &ocSession{b: b, name: "oc", exe: opencode, log: modelLog}
	convDir := filepath.Join(b.home, ".local/state/agent-box/conversations")
	record := func() conversation.Record {
		r, _ := conversation.Load(convDir, "oc")
		return r
	}
	db := filepath.Join(b.home, ".local/share/opencode/opencode.db")

	b.waitFor(3*time.Minute, "the kickoff prompt's command ran with no keypress", func() bool {
		data, _ := os.ReadFile(kick)
		return string(data) == "opencode-kickoff\n"
	})
	if n := oc.turns(prompt); n != 1 {
		t.Errorf("the kickoff prompt is the newest user message of %d turns, want 1", n)
	}
	b.waitFor(30*time.Second, "the plugin reported the session OpenCode made", func() bool { return record().ID != "" })
	id := record().ID
	if got := record().Transcript; got != db {
		t.Errorf("the reported record is %q, want OpenCode's database %q", got, db)
	}
	if ok, err := opencodestate.Has(ctx, tools["sqlite3"], db, id); !ok {
		t.Errorf("OpenCode's database does not hold the reported session %s (%v)", id, err)
	}
	if !oc.requestHolds(guideLine, "Instructions from: "+managed+"/AGENTS.md") {
		t.Error("the guide did not reach the model as OpenCode's managed instructions")
	}

	// Attention: the plugin reports the end of the turn (session.idle),
	// and a prompt's work (session.status busy) before the next end.
	b.waitAttention("oc", "finished (turn)")
	oc.say(t, "opencode one")
	// OpenCode stores the reply a moment after the request: what a kill -9
	// catches unstored is lost to it (its durability, not agent-box's).
	b.waitFor(30*time.Second, "the reply on screen", func() bool { return oc.screenHas(`reply \d+: opencode one`) })
	// The second turn's end, not the first's state (still shown until the
	// plugin's busy report arrives, which a loaded host delays).
	turnEnds := func() int { return strings.Count(b.supLog.String(), `session "oc": finished (turn)`) }
	b.waitFor(30*time.Second, "the second turn's end in the supervisor's log", func() bool { return turnEnds() >= 2 })
	if n := turnEnds(); n < 2 || !strings.Contains(b.supLog.String(), `session "oc": working`) {
		t.Errorf("the supervisor logged %d turn ends of oc (want 2) and working between them:\n%s", n, b.supLog)
	}
	oc.killAgent(t)
	oc.say(t, "opencode after kill")
	if r := record(); r.Last == nil || !r.Last.Resume || r.ID != id {
		t.Errorf("after kill -9 the spawn did not resume %s: %+v", id, r.Last)
	}
	if !oc.carries("opencode after kill", "opencode one") {
		t.Error("after kill -9 the request does not carry the earlier turn")
	}
	if n := oc.turns(prompt); n != 1 {
		t.Errorf("the kickoff prompt was given %d times, want once", n)
	}

	// The whole box dies and starts again: the session resumes the same
	// conversation.
	b.waitFor(30*time.Second, "the reply on screen", func() bool { return oc.screenHas(`reply \d+: opencode after kill`) })
	// A power cut ends every process at once: SIGKILL for OpenCode (and
	// its strace, which would detach it), then the supervisor and tmux.
	exec.Command("pkill", "-9", "-f", "strace -f -qq -e trace=connect -o "+traces).Run()
	killAll(opencode)
	b.stopSupervisor()
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	b.tm.KillServer(stopCtx)
	cancel()
	b.waitFor(30*time.Second, "the tmux server gone", func() bool {
		select {
		case <-b.srvDone:
			return !b.tm.Alive()
		default:
			return false
		}
	})
	b.startSupervisor()
	oc.say(t, "opencode after restart")
	if r := record(); r.Last == nil || !r.Last.Resume || r.ID != id {
		t.Errorf("after the box restarted the spawn did not resume %s: %+v", id, r.Last)
	}
	if !oc.carries("opencode after restart", "opencode after kill") {
		t.Error("after the box restarted the request does not carry the earlier turns")
	}

	// The session is deleted from OpenCode's database (the database stays).
	if out, err := exec.Command(tools["sqlite3"], db, ".timeout 5000", "DELETE FROM session WHERE id = '"+id+"'").CombinedOutput(); err != nil {
		t.Fatalf("deleting the session: %v: %s", err, out)
	}
	oc.killAgent(t)
	want := "started fresh: OpenCode's database"
	if note := record().FreshNote(); !strings.HasPrefix(note, want) || !strings.Contains(note, id) {
		t.Errorf("session note %q, want one starting %q naming %s", note, want, id)
	}
	oc.say(t, "opencode fresh")
	b.waitFor(30*time.Second, "the new session reported", func() bool { r := record(); return r.ID != "" && r.ID != id })

	// A usage limit: the scripted model refuses a new session's kickoff
	// turn as the API refuses an account at its limit (429 with
	// retry-after an hour). OpenCode waits that hour itself (its retry,
	// measured with 1.18.33); the plugin's report of the retry makes the
	// session limited until OpenCode's own next try (plus the jitter), and
	// the session.idle OpenCode does not send makes nothing finished.
	before := time.Now()
	b.ok("session", "add", "ocl", "--agent", "opencode", "--prompt", "opencode limited\nlimit: 1")
	limited := func() *attention.Status {
		var ls []sessionstate.Entry
		json.Unmarshal([]byte(b.ok("session", "ls", "--json")), &ls)
		for _, e := range ls {
			if e.Name == "ocl" && e.Attention != nil && e.Attention.State == attention.Limited {
				return e.Attention
			}
		}
		return nil
	}
	b.waitFor(3*time.Minute, "session ocl limited", func() bool { return limited() != nil })
	a := limited()
	jitter := contract.Duration(contract.UsageLimits.Jitter)
	if a.Try != 1 || a.Until.Before(before.Add(time.Hour)) || a.Until.After(time.Now().Add(time.Hour+jitter)) {
		t.Errorf("attention %+v, want try 1 an hour from the refusal (OpenCode's retry) plus at most %s", a, jitter)
	}
	if !strings.Contains(b.supLog.String(), `session "ocl": `+a.String()+" (the agent named ") {
		t.Errorf("the supervisor's log does not say the reset OpenCode's retry named:\n%s", b.supLog)
	}
	oclID := ""
	if r, _ := conversation.Load(convDir, "ocl"); r.ID != "" {
		oclID = r.ID
	} else {
		t.Fatal("the limited session reported no conversation")
	}
	// The hour passes while the supervisor is down (its observation file
	// holds the try: moved to now, as the wait would): the next supervisor
	// takes the try up at once, restarts OpenCode (still in its own wait) in
	// its conversation with the resume prompt, and the resumed turn ends.
	b.stopSupervisor()
	obs := filepath.Join(b.home, ".local/state/agent-box/sessions/ocl.json")
	var o map[string]any
	data, err = os.ReadFile(obs)
	if err == nil {
		err = json.Unmarshal(data, &o)
	}
	att, _ := o["attention"].(map[string]any)
	if err != nil || att == nil || att["until"] == nil {
		t.Fatalf("the observation file holds no try: %v %s", err, data)
	}
	att["until"] = time.Now().UTC().Format(time.RFC3339Nano)
	data, _ = json.Marshal(o)
	if err := os.WriteFile(obs, data, 0o600); err != nil {
		t.Fatal(err)
	}
	b.startSupervisor()
	resumed := func() bool {
		for _, r := range oc.records() {
			if r.Tools > 0 && r.Reply != "usage limit" && strings.Contains(r.Last, "continue") && strings.Contains(string(r.Body), "opencode limited") {
				return true
			}
		}
		return false
	}
	for end := time.Now().Add(3 * time.Minute); !resumed() && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
	}
	if !resumed() {
		recs := oc.records()
		for _, r := range recs[max(len(recs)-6, 0):] {
			t.Logf("model: #%d tools %d reply %q last %q", r.N, r.Tools, r.Reply, r.Last)
		}
		pane, _ := (&ocSession{b: b, name: "ocl"}).tmux("capture-pane", "-p", "-t", "=ocl:")
		t.Fatalf("the resume prompt, with the limited turn, did not reach the model in 3 minutes; ocl's pane:\n%s\nsupervisor log:\n%s", pane, b.supLog)
	}
	b.waitAttention("ocl", "finished (turn)")
	if r, _ := conversation.Load(convDir, "ocl"); r.ID != oclID || r.Last == nil || !r.Last.Resume {
		t.Errorf("the try did not resume conversation %s: %+v", oclID, r)
	}
	for _, line := range []string{"(try 1), kept from before the supervisor started", `session "ocl": resuming its conversation after the usage limit (try 1, `} {
		if !strings.Contains(b.supLog.String(), line) {
			t.Errorf("the supervisor's log lacks %q:\n%s", line, b.supLog)
		}
	}

	// Every connection OpenCode tried, in every spawn: the scripted model
	// only (no models list, no update check, no plugin from the registry,
	// not even a name lookup).
	tried := connections(t, traces+".*")
	if len(tried) == 0 {
		t.Fatal("strace recorded no connection at all (not even to the model)")
	}
	for _, c := range tried {
		if c != ocModelAddr {
			t.Errorf("OpenCode tried to connect to %s", c)
		}
	}
}

// addAgent adds an agent to the box's agents table.
// ocManaged writes /etc/opencode as the module renders it into managed
// (the guide's path rewritten to it, the plugin's runtime to this test
// binary), and, in home, what stands in for what OpenCode's first start
// leaves on a host that reaches the npm registry: its plugin SDK recorded
// as installed in ~/.config/opencode. Measured with 1.18.33: until then
// every start installs it again, and with any plugin configured
// (agent-box's is) waits for that before its first prompt, which never
// ends where the registry cannot be reached (over 400 s without a route).
func ocManaged(t *testing.T, managed, home string) {
	t.Helper()
	os.MkdirAll(managed, 0o755)
	for _, name := range []string{"opencode.json", "agent-box.js", "AGENTS.md"} {
		data, err := os.ReadFile(filepath.Join(goldenFiles, "etc/opencode", name))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(strings.ReplaceAll(string(data), "/etc/opencode/", managed+"/"), goldenRT, testBinary(t))
		if err := os.WriteFile(filepath.Join(managed, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(home, ".config/opencode")
	os.MkdirAll(filepath.Join(cfg, "node_modules"), 0o755)
	dep := `{"@opencode-ai/plugin":"` + vmtest.OpenCode.Version + `"}`
	os.WriteFile(filepath.Join(cfg, "package.json"), []byte(`{"dependencies":`+dep+"}\n"), 0o644)
	os.WriteFile(filepath.Join(cfg, "package-lock.json"), []byte(`{"lockfileVersion":3,"requires":true,"packages":{"":{"dependencies":`+dep+"}}}\n"), 0o644)
}

func (b *box) addAgent(name string, ag agents.Agent) {
	b.t.Helper()
	p := filepath.Join(b.dir, "agents.json")
	var table map[string]agents.Agent
	data, err := os.ReadFile(p)
	if err == nil {
		err = json.Unmarshal(data, &table)
	}
	if err != nil {
		b.t.Fatal(err)
	}
	table[name] = ag
	data, _ = json.Marshal(table)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// ocSession drives a session whose agent is OpenCode.
type ocSession struct {
	b         *box
	name, exe string
	log       string // the scripted model's requests
}

func (s *ocSession) records() []scriptedmodel.Record {
	f, err := os.Open(s.log)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []scriptedmodel.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, scriptedmodel.MaxBody+4096)
	for sc.Scan() {
		var r scriptedmodel.Record
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// turns counts the agent's turns (requests that offer tools; its title
// request offers none) whose newest user message is text.
func (s *ocSession) turns(text string) int {
	n := 0
	for _, r := range s.records() {
		if r.Tools > 0 && r.Last == text {
			n++
		}
	}
	return n
}

// requestHolds: some request's body holds every one of texts.
func (s *ocSession) requestHolds(texts ...string) bool {
	for _, r := range s.records() {
		all := true
		for _, t := range texts {
			all = all && strings.Contains(string(r.Body), t)
		}
		if all {
			return true
		}
	}
	return false
}

// carries: the newest turn whose newest message is text carries earlier.
func (s *ocSession) carries(text, earlier string) bool {
	var last *scriptedmodel.Record
	recs := s.records()
	for i := range recs {
		if recs[i].Tools > 0 && recs[i].Last == text {
			last = &recs[i]
		}
	}
	return last != nil && strings.Contains(string(last.Body), earlier)
}

// agentPID is OpenCode's pid: the child of the pane's process running it.
func (s *ocSession) agentPID() int {
	p, ok := s.b.running(s.name)
	if !ok {
		return 0
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(p.PID) {
			if exe, _ := os.Readlink("/proc/" + e.Name() + "/exe"); exe == s.exe {
				return pid
			}
		}
	}
	return 0
}

func (s *ocSession) tmux(args ...string) (string, error) {
	cmd := exec.Command(tmuxBin, append([]string{"-S", filepath.Join(s.b.runtime, "tmux.sock")}, args...)...)
	cmd.Env = s.b.env
	out, err := cmd.Output()
	return string(out), err
}

// screenHas: the pane shows a line matching pattern.
func (s *ocSession) screenHas(pattern string) bool {
	out, _ := s.tmux("capture-pane", "-p", "-t", "="+s.name+":")
	return regexp.MustCompile(pattern).MatchString(out)
}

// ready: OpenCode shows its prompt line (its footer's commands hint).
func (s *ocSession) ready() bool {
	out, _ := s.tmux("capture-pane", "-p", "-t", "="+s.name+":")
	return strings.Contains(out, "ctrl+p commands") && s.agentPID() != 0
}

// say types text and Enter as a person would, once OpenCode is ready, and
// waits until the model got it (typing again if keys were lost while the
// agent set up its terminal).
func (s *ocSession) say(t *testing.T, text string) {
	t.Helper()
	s.b.waitFor(2*time.Minute, "OpenCode ready for input", s.ready)
	for try := 0; try < 3; try++ {
		if out, _ := s.tmux("capture-pane", "-p", "-t", "="+s.name+":"); try == 0 || !strings.Contains(out, text) {
			s.tmux("send-keys", "-t", "="+s.name+":", "-l", text)
			time.Sleep(500 * time.Millisecond)
		}
		s.tmux("send-keys", "-t", "="+s.name+":", "Enter")
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if s.turns(text) > 0 {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	out, _ := s.tmux("capture-pane", "-p", "-t", "="+s.name+":")
	var seen []string
	for _, r := range s.records() {
		seen = append(seen, fmt.Sprintf("%d tools=%d last=%q", r.N, r.Tools, r.Last))
	}
	t.Fatalf("%q never reached the model; the model saw:\n%s\nthe pane:\n%s", text, strings.Join(seen, "\n"), out)
}

// killAgent kills OpenCode with SIGKILL and waits for the next one.
func (s *ocSession) killAgent(t *testing.T) {
	t.Helper()
	old := s.agentPID()
	if old == 0 {
		t.Fatal("no OpenCode runs in the session")
	}
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if p := s.agentPID(); p != 0 && p != old {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	ps, _ := exec.Command("ps", "-eo", "pid,ppid,stat,args", "--forest").Output()
	out, _ := s.tmux("list-panes", "-a", "-F", "#{session_name} #{pane_pid} #{pane_dead} #{pane_dead_status}")
	t.Fatalf("no new OpenCode after kill -9 of %d; panes:\n%s\nprocesses:\n%s\nsupervisor:\n%s", old, out, ps, s.b.supLog)
}

// connections lists the addresses of every AF_INET/AF_INET6 connect() in
// the strace files matching glob ("host:port").
func connections(t *testing.T, glob string) []string {
	files, _ := filepath.Glob(glob)
	re := regexp.MustCompile(`connect\(\d+, \{sa_family=AF_INET6?, sin6?_port=htons\((\d+)\), (?:sin_addr=inet_addr\("([^"]+)"\)|[^}]*inet_pton\(AF_INET6, "([^"]+)")`)
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			out = append(out, m[2]+m[3]+":"+m[1])
		}
	}
	return out
}

// killAll sends SIGKILL to every process running exe and waits (at most
// 10 s) until none is left.
func killAll(exe string) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		left := 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if p, _ := os.Readlink("/proc/" + e.Name() + "/exe"); err == nil && p == exe {
				syscall.Kill(pid, syscall.SIGKILL)
				left++
			}
		}
		if left == 0 {
			return
		}
	}
}

// shellQuote quotes s for bash as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// TestOpenCodeAsksThePersonThroughTheAuthService: the real, pinned
// OpenCode, its bash permission set to "ask", as a session's agent under
// the real supervisor with agent-box's plugin (the golden bytes, as in
// TestOpenCodeUnattended, in a network namespace of its own with the
// scripted model); the real auth service. OpenCode's permission.asked
// reaches the box page through the plugin's hook and the supervisor;
// Allow there makes the plugin reply "once", and the command runs.
func TestOpenCodeAsksThePersonThroughTheAuthService(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: OpenCode runs in a network namespace of its own (unshare -n), and root is the agent user of the auth service; CI and `make test` run as root")
	}
	tools := map[string]string{}
	for _, name := range []string{"unshare", "ip", "bash"} {
		if tools[name] = lookTool(name); tools[name] == "" {
			t.Fatalf("%s is required on PATH (scripts/deps installs it)", name)
		}
	}
	opencode, err := vmtest.OpenCode.Ensure(context.Background(), io.Discard)
	if err != nil {
		t.Fatalf("the pinned OpenCode: %v", err)
	}
	a := newRootAuth(t, "")
	page := a.page

	b := newBox(t, "")
	dir := t.TempDir()
	managed, modelLog := filepath.Join(dir, "etc-opencode"), filepath.Join(dir, "model.jsonl")
	t.Cleanup(func() {
		exec.Command("pkill", "-9", "-f", "test-agent scripted-model "+ocModelAddr+" "+modelLog).Run()
		killAll(opencode)
	})
	ocManaged(t, managed, b.home)
	provider, _ := json.Marshal(map[string]any{
		"model":      "scripted/claude-x",
		"permission": map[string]any{"bash": "ask"},
		"provider": map[string]any{"scripted": map[string]any{
			"npm": "@ai-sdk/anthropic", "name": "Scripted",
			"options": map[string]any{"baseURL": "http://" + ocModelAddr + "/v1", "apiKey": "{env:ANTHROPIC_API_KEY}"},
			"models":  map[string]any{"claude-x": map[string]any{"name": "Claude X"}},
		}},
	})
	wrapper := filepath.Join(dir, "opencode-netns")
	os.WriteFile(wrapper, []byte(fmt.Sprintf(`#!/bin/bash
set -euo pipefail
ip link set lo up
(%s test-agent scripted-model %s %s </dev/null >/dev/null 2>&1 &)
for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/8099) 2>/dev/null && break; sleep 0.05; done
export AGENT_BOX_TEST_PROGRAM=1 ANTHROPIC_API_KEY=sk-test
export OPENCODE_TEST_MANAGED_CONFIG_DIR=%s
export OPENCODE_CONFIG_CONTENT=%s
exec %s "$@"
`, shellQuote(testBinary(t)), ocModelAddr, shellQuote(modelLog), shellQuote(managed), shellQuote(string(provider)), shellQuote(opencode))), 0o755)
	var golden map[string]agents.Agent
	data, _ := os.ReadFile(filepath.Join(goldenFiles, goldenAgents))
	if err := json.Unmarshal(data, &golden); err != nil || golden["opencode"].Setup != "opencode" {
		t.Fatalf("the golden agents table has no opencode profile: %v %s", err, data)
	}
	ag := golden["opencode"]
	ag.Command, ag.Args = tools["unshare"], []string{"-n", "--", tools["bash"], wrapper}
	b.addAgent("opencode", ag)
	b.setEnv("AGENT_BOX_TEST_AUTH_STATUS", a.statusSocket())
	b.startSupervisor()

	allowed := filepath.Join(b.home, "opencode-allowed.txt")
	b.ok("session", "add", "oca", "--agent", "opencode", "--prompt", "run: echo allowed > "+allowed)
	idRe := requestIDRe
	var id string
	b.waitFor(3*time.Minute, "OpenCode's request on the box page", func() bool {
		if m := idRe.FindStringSubmatch(page()); m != nil {
			id = m[1]
		}
		return id != ""
	})
	if p := page(); !strings.Contains(p, "opencode in session <code>oca</code> asks to use <code>bash</code>") || !strings.Contains(p, "<pre>echo allowed &gt; "+allowed) {
		t.Errorf("the page does not show OpenCode's request:\n%s", p)
	}
	if _, err := os.Stat(allowed); err == nil {
		t.Fatal("the command ran before a decision")
	}
	if ans := a.decide(id, "allow"); ans.code != 303 {
		t.Fatalf("allow: %d %s", ans.code, ans.body)
	}
	b.waitFor(time.Minute, "the allowed command's file", func() bool {
		data, _ := os.ReadFile(allowed)
		return string(data) == "allowed\n"
	})
	if !strings.Contains(b.supLog.String(), `session "oca": permission request `+id+` ("bash"): allow by "ops"`) {
		t.Errorf("the supervisor's log:\n%s", b.supLog)
	}

	// Deny: the plugin replies "reject" with the person's reason, which
	// reaches the model; the command does not run.
	// (OpenCode is the pane's process here: typed as a person types, and
	// Enter again only while the model has not got the prompt: once it
	// has, an Enter would answer OpenCode's own permission question)
	oc := &ocSession{b: b, name: "oca", exe: opencode, log: modelLog}
	denied := filepath.Join(b.home, "opencode-denied.txt")
	prompt := "run: echo denied > " + denied
	b.waitFor(time.Minute, "OpenCode's prompt line", func() bool { return oc.screenHas("ctrl\\+p commands") })
	oc.tmux("send-keys", "-t", "=oca:", "-l", prompt)
	for try := 0; try < 3 && oc.turns(prompt) == 0; try++ {
		time.Sleep(500 * time.Millisecond)
		oc.tmux("send-keys", "-t", "=oca:", "Enter")
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end) && oc.turns(prompt) == 0; time.Sleep(200 * time.Millisecond) {
		}
	}
	first := id
	b.waitFor(time.Minute, "the second request on the box page", func() bool {
		if m := idRe.FindStringSubmatch(page()); m != nil && m[1] != first {
			id = m[1]
		}
		return id != first
	})
	if ans := a.decide(id, "deny"); ans.code != 303 {
		t.Fatalf("deny: %d %s", ans.code, ans.body)
	}
	b.waitFor(time.Minute, "the model told the person's reason", func() bool {
		for _, r := range oc.records() {
			if strings.Contains(string(r.Body), "A person denied this from agent-box (ops).") {
				return true
			}
		}
		return false
	})
	if _, err := os.Stat(denied); err == nil {
		t.Error("the denied command ran")
	}
}
