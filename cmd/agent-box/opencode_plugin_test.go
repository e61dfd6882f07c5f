package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/google/go-cmp/cmp"
)

// TestThePluginReportsWhatOpenCodesEventsMean runs the golden bytes of
// agent-box's OpenCode plugin in Node (an ES module, as OpenCode's Bun
// loads it), its agent-box replaced by a recorder, and gives it the event
// sequences measured with OpenCode 1.18.33: a turn, a retry (its time in
// the report), a turn whose retries were spent on a 429 (session.error,
// then session.status idle and session.idle twice: the idles are not a
// finished turn, until the session works again), a person's abort (no
// error: its idle is the turn's end), a subagent's events and an error of
// no session (none).
// Each hook runs in order, one at a time.
func TestThePluginReportsWhatOpenCodesEventsMean(t *testing.T) {
	node, dir, plugin, calls := goldenPlugin(t)

	const next = 1796468519315
	st := func(id, status string) map[string]any {
		return map[string]any{"type": "session.status", "properties": map[string]any{"sessionID": id, "status": map[string]any{"type": status}}}
	}
	ev := func(typ, id string) map[string]any {
		return map[string]any{"type": typ, "properties": map[string]any{"sessionID": id}}
	}
	apiError := map[string]any{"type": "session.error", "properties": map[string]any{"sessionID": "ses_1", "error": map[string]any{
		"name": "APIError", "data": map[string]any{"message": "This request would exceed your account's rate limit. Please try again later.", "statusCode": 429, "isRetryable": true},
	}}}
	aborted := map[string]any{"type": "session.error", "properties": map[string]any{"sessionID": "ses_1", "error": map[string]any{"name": "MessageAbortedError", "data": map[string]any{"message": "Aborted"}}}}
	events := []map[string]any{
		{"type": "session.created", "properties": map[string]any{"info": map[string]any{"id": "ses_sub", "parentID": "ses_1"}}},
		st("ses_1", "busy"), ev("session.idle", "ses_1"),
		st("ses_1", "busy"),
		{"type": "session.status", "properties": map[string]any{"sessionID": "ses_1", "status": map[string]any{"type": "retry", "attempt": 1, "message": "rate limited", "next": next}}},
		apiError, apiError, st("ses_1", "idle"), ev("session.idle", "ses_1"), ev("session.idle", "ses_1"),
		st("ses_1", "busy"), ev("session.idle", "ses_1"),
		st("ses_1", "busy"), aborted, ev("session.idle", "ses_1"),
		st("ses_sub", "busy"), ev("session.idle", "ses_sub"),
		{"type": "session.error", "properties": map[string]any{"error": map[string]any{"name": "APIError", "data": map[string]any{"statusCode": 429}}}}, // no session: not the turn's
		ev("permission.asked", "ses_1"), // the last: the test waits for it
	}
	js, _ := json.Marshal(events)
	driver := filepath.Join(dir, "driver.mjs")
	os.WriteFile(driver, []byte(`process.env.AGENT_BOX_SESSION = "oc";
const { AgentBox } = await import(process.argv[2]);
const hooks = await AgentBox();
for (const event of JSON.parse(process.argv[3])) await hooks.event({ event });
`), 0o644)
	if out, err := exec.Command(node, driver, plugin, string(js)).CombinedOutput(); err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	want := []string{
		`agent-hook opencode event session.status {"status":"busy"}`,
		`agent-hook opencode event session.idle {"status":""}`,
		`agent-hook opencode event session.status {"status":"busy"}`,
		`agent-hook opencode event session.status {"status":"retry","next":1796468519315}`,
		`agent-hook opencode event session.error {"httpStatus":"429"}`,
		`agent-hook opencode event session.error {"httpStatus":"429"}`,
		`agent-hook opencode event session.status {"status":"idle"}`,
		`agent-hook opencode event session.status {"status":"busy"}`,
		`agent-hook opencode event session.idle {"status":""}`,
		`agent-hook opencode event session.status {"status":"busy"}`,
		`agent-hook opencode event session.idle {"status":""}`,
		`agent-hook opencode event permission.asked {"status":""}`,
	}
	var got []string
	deadline := time.Now().Add(20 * time.Second) // node exits with hooks still queued
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(calls)
		got = strings.Split(strings.TrimSpace(string(data)), "\n")
		if strings.Contains(string(data), "permission.asked") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the hooks the plugin ran (-want +got):\n%s", diff)
	}
}

// goldenPlugin writes the golden plugin as an ES module whose agent-box is
// a recorder appending each run's arguments and input to calls.
func goldenPlugin(t *testing.T) (node, dir, plugin, calls string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required (scripts/deps installs nodejs): %v", err)
	}
	dir = t.TempDir()
	rec, calls := filepath.Join(dir, "agent-box"), filepath.Join(dir, "calls")
	script := "#!/bin/sh\n{ printf '%s ' \"$@\"; cat; echo; } >>" + shellQuote(calls) + "\n"
	if err := os.WriteFile(rec, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(goldenFiles, "etc/opencode/agent-box.js"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), goldenRT) {
		t.Fatalf("the golden plugin does not run %s", goldenRT)
	}
	plugin = filepath.Join(dir, "agent-box.mjs")
	if err := os.WriteFile(plugin, []byte(strings.ReplaceAll(string(src), goldenRT, rec)), 0o644); err != nil {
		t.Fatal(err)
	}
	return node, dir, plugin, calls
}

// TestThePluginGivesAResumedSessionItsPrompt: the prompt exec-session
// gives a resumed OpenCode session (contract env agentPrompt) goes to that
// session through OpenCode's client, once, in the SDK's second shape, or
// its first when the second is refused; it is gone from the environment
// the agent's tools inherit; without it, or with one that is not JSON,
// nothing is sent.
func TestThePluginGivesAResumedSessionItsPrompt(t *testing.T) {
	node, dir, plugin, _ := goldenPlugin(t)
	driver := filepath.Join(dir, "prompt.mjs")
	os.WriteFile(driver, []byte(`const [plugin, firstOK] = process.argv.slice(2);
const sent = [];
const client = { session: { promptAsync: async (p) => { sent.push(p); return { response: { ok: sent.length > 1 || firstOK === "yes" } }; } } };
process.env.AGENT_BOX_SESSION = "oc";
const { AgentBox } = await import(plugin);
await AgentBox({ client });
const left = process.env.`+contract.Env.AgentPrompt.Name+`;
await new Promise((r) => setTimeout(r, 100));
console.log(JSON.stringify({ sent, left: left ?? null }));
`), 0o644)
	run := func(env, firstOK string) string {
		cmd := exec.Command(node, driver, plugin, firstOK)
		cmd.Env = append(os.Environ(), contract.Env.AgentPrompt.Name+"="+env)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	given := `{"session":"ses_1","prompt":"continue"}`
	for _, c := range []struct{ name, env, firstOK, want string }{
		{"the second shape taken", given, "yes", `{"sent":[{"sessionID":"ses_1","parts":[{"type":"text","text":"continue"}]}],"left":null}`},
		{"the second refused: the first", given, "no", `{"sent":[{"sessionID":"ses_1","parts":[{"type":"text","text":"continue"}]},{"path":{"id":"ses_1"},"body":{"parts":[{"type":"text","text":"continue"}]}}],"left":null}`},
		{"none given", "", "yes", `{"sent":[],"left":null}`},
		{"not JSON", "continue", "yes", `{"sent":[],"left":null}`},
	} {
		if got := run(c.env, c.firstOK); got != c.want {
			t.Errorf("%s: %s\nwant %s", c.name, got, c.want)
		}
	}
}

// TestThePluginRepliesAPersonsDecisionToOpenCode: OpenCode's
// permission.asked (the shape measured with 1.18.33) runs the hook with
// Claude's input shape (the permission, its command and patterns, its
// "always" patterns as suggestions); the decision the hook prints is
// replied through OpenCode's client: allow "once", allow with rules
// "always" (the SDK's call), deny "reject" with the reason (the reply
// route that takes a message; the SDK's call without it when that route
// is refused). A reply in OpenCode's own prompt (permission.replied) ends
// the waiting hook.
func TestThePluginRepliesAPersonsDecisionToOpenCode(t *testing.T) {
	node, dir, plugin, calls := goldenPlugin(t)
	// the recorder; the permission request's hook then gives the decision
	// the test sets (or waits, its pid in a file)
	rec := filepath.Join(dir, "agent-box")
	os.WriteFile(rec, []byte(`#!/bin/sh
{ printf '%s ' "$@"; cat; echo; } >>`+shellQuote(calls)+`
[ "$4" = permission.asked ] || exit 0
echo $$ > `+shellQuote(filepath.Join(dir, "pid"))+`
[ "$DECISION" = wait ] && exec sleep 60
printf '%s\n' "$DECISION"
`), 0o755)
	driver := filepath.Join(dir, "ask.mjs")
	os.WriteFile(driver, []byte(`const [plugin, routeOK, then] = process.argv.slice(2);
const sent = [];
const client = {
  _client: { post: async (o) => { sent.push(["route", o]); return { response: { ok: routeOK === "yes" } }; } },
  postSessionIdPermissionsPermissionId: async (o) => { sent.push(["sdk", o]); return { data: true }; },
};
process.env.AGENT_BOX_SESSION = "oc";
const { AgentBox } = await import(plugin);
const hooks = await AgentBox({ client });
await hooks.event({ event: { type: "permission.asked", properties: { id: "per_1", sessionID: "ses_1", permission: "bash", patterns: ["touch x"], metadata: { command: "touch x" }, always: ["touch *"], tool: { messageID: "msg_1", callID: "toolu_1" } } } });
if (then === "replied") {
  await new Promise((r) => setTimeout(r, 300));
  await hooks.event({ event: { type: "permission.replied", properties: { sessionID: "ses_1", requestID: "per_1", reply: "once" } } });
}
await new Promise((r) => setTimeout(r, 500));
console.log(JSON.stringify(sent));
process.exit(0); // not waiting for a hook left running: the test looks for it
`), 0o644)
	run := func(decision, routeOK, then string) string {
		os.Remove(calls)
		cmd := exec.Command(node, driver, plugin, routeOK, then)
		cmd.Env = append(os.Environ(), "DECISION="+decision)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	const input = `agent-hook opencode event permission.asked {"tool_name":"bash","tool_input":{"command":"touch x","patterns":["touch x"]},"permission_suggestions":["touch *"]}`
	sdk := func(response string) string {
		return `[["sdk",{"path":{"id":"ses_1","permissionID":"per_1"},"body":{"response":"` + response + `"}}]]`
	}
	deny := `{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"A person denied this from agent-box (ops)."},"hookEventName":"permission.asked"}}`
	route := `["route",{"url":"/permission/{requestID}/reply","path":{"requestID":"per_1"},"body":{"reply":"reject","message":"A person denied this from agent-box (ops)."}}]`
	for _, c := range []struct{ name, decision, routeOK, want string }{
		{"allow", `{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"permission.asked"}}`, "yes", sdk("once")},
		{"allow for the session", `{"hookSpecificOutput":{"decision":{"behavior":"allow","updatedPermissions":["touch *"]},"hookEventName":"permission.asked"}}`, "yes", sdk("always")},
		{"deny, the route with the reason", deny, "yes", "[" + route + "]"},
		{"deny, the route refused", deny, "no", "[" + route + "," + strings.TrimPrefix(sdk("reject"), "[")},
		{"no decision", "", "yes", "[]"},
	} {
		if got := run(c.decision, c.routeOK, ""); got != c.want {
			t.Errorf("%s: %s\nwant %s", c.name, got, c.want)
		}
		if data, _ := os.ReadFile(calls); strings.TrimSpace(string(data)) != input {
			t.Errorf("%s: the hook ran as %q, want %q", c.name, data, input)
		}
	}
	start := time.Now()
	if got := run("wait", "yes", "replied"); got != "[]" {
		t.Errorf("answered in OpenCode's prompt: %s", got)
	}
	t.Logf("the run with a hook ended by OpenCode's reply took %s", time.Since(start).Round(time.Millisecond))
	pid, _ := os.ReadFile(filepath.Join(dir, "pid"))
	if _, err := os.Stat("/proc/" + strings.TrimSpace(string(pid))); err == nil {
		t.Errorf("the hook (pid %s) still waits after OpenCode's own reply", pid)
		exec.Command("kill", strings.TrimSpace(string(pid))).Run()
	}
}
