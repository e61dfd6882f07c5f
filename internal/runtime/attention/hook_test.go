package attention

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHookInputsMapToStates: the inputs measured from each agent (Claude
// Code 2.1.328's Notification and hooks, Codex 0.171.0's Stop, the
// OpenCode plugin's events) mean the contract's states; the rest is an
// error or unmapped, never a state.
func TestHookInputsMapToStates(t *testing.T) {
	for _, c := range []struct {
		name, setup, event, input string
		want                      Event
		err                       string
		unmapped                  bool
	}{
		{name: "claude permission prompt", setup: "claude", event: "Notification",
			input: `{"hook_event_name":"Notification","message":"Claude needs your permission","notification_type":"permission_prompt"}`,
			want:  agent(NeedsYou, "permission")},
		{name: "claude idle prompt", setup: "claude", event: "Notification",
			input: `{"notification_type":"idle_prompt","message":"Claude is waiting for your input"}`, want: agent(NeedsYou, "idle")},
		{name: "claude elicitation", setup: "claude", event: "Notification", input: `{"notification_type":"elicitation_dialog"}`, want: agent(NeedsYou, "elicitation")},
		{name: "claude question", setup: "claude", event: "Notification", input: `{"notification_type":"agent_needs_input"}`, want: agent(NeedsYou, "question")},
		{name: "claude permission request", setup: "claude", event: "PermissionRequest", input: `{"tool_name":"Bash"}`, want: agent(NeedsYou, "permission")},
		{name: "claude prompt", setup: "claude", event: "UserPromptSubmit", input: `not even JSON`, want: agent(Working, "")},
		{name: "claude tool", setup: "claude", event: "PreToolUse", want: agent(Working, "")},
		{name: "claude tool done (after a yes)", setup: "claude", event: "PostToolUse", want: agent(Working, "")},
		{name: "claude stop", setup: "claude", event: "Stop", want: agent(Finished, "turn")},
		{name: "claude failed turn", setup: "claude", event: "StopFailure", want: agent(NeedsYou, "error")},
		{name: "claude usage limit", setup: "claude", event: "StopFailure",
			input: `{"session_id":"s","transcript_path":"/t","cwd":"/","prompt_id":"p","hook_event_name":"StopFailure","error":"rate_limit","last_assistant_message":"API Error: Request rejected (429) · limited"}`,
			want:  agent(Limited, "limit")},
		{name: "claude failed turn of another kind", setup: "claude", event: "StopFailure", input: `{"error":"server_error"}`, want: agent(NeedsYou, "error")},
		{name: "claude failed turn without an error field", setup: "claude", event: "StopFailure", input: `{"error":7}`, want: agent(NeedsYou, "error")},
		{name: "codex stop", setup: "codex", event: "Stop", input: `{"last_assistant_message":"done"}`, want: agent(Finished, "turn")},
		{name: "codex prompt", setup: "codex", event: "UserPromptSubmit", input: `{"hook_event_name":"UserPromptSubmit","prompt":"hi"}`, want: agent(Working, "")},
		{name: "opencode permission", setup: "opencode", event: "permission.asked", want: agent(NeedsYou, "permission")},
		{name: "opencode replied", setup: "opencode", event: "permission.replied", want: agent(Working, "")},
		{name: "opencode busy", setup: "opencode", event: "session.status", input: `{"status":"busy"}`, want: agent(Working, "")},
		{name: "opencode idle turn", setup: "opencode", event: "session.idle", want: agent(Finished, "turn")},
		{name: "opencode waits for its retry (the plugin's report of session.status retry)", setup: "opencode", event: "session.status",
			input: `{"status":"retry","next":1796468519315}`, want: agent(Limited, "limit")},
		{name: "opencode's retries spent on a 429 (the plugin's report of session.error)", setup: "opencode", event: "session.error",
			input: `{"httpStatus":"429"}`, want: agent(Limited, "limit")},
		{name: "opencode's retries spent on a 500", setup: "opencode", event: "session.error", input: `{"httpStatus":"500"}`, want: agent(NeedsYou, "error")},
		{name: "opencode's error without a status", setup: "opencode", event: "session.error", input: `{"httpStatus":""}`, want: agent(NeedsYou, "error")},
		{name: "a new notification type", setup: "claude", event: "Notification", input: `{"notification_type":"auth_success"}`, unmapped: true},
		{name: "opencode idle status", setup: "opencode", event: "session.status", input: `{"status":"idle"}`, unmapped: true},
		{name: "a detail that is no string", setup: "claude", event: "Notification", input: `{"notification_type":7}`, err: "has no string notification_type"},
		{name: "a detail missing", setup: "claude", event: "Notification", input: `{}`, err: "has no string notification_type"},
		{name: "input not JSON", setup: "claude", event: "Notification", input: `{"notification_type":`, err: "not a JSON object"},
		{name: "an event without a hook", setup: "claude", event: "SessionEnd", err: `"SessionEnd" is not an event`},
		{name: "an event of another agent", setup: "codex", event: "PreToolUse", err: `"PreToolUse" is not an event`},
		{name: "a key with its detail is no event name", setup: "claude", event: "Notification:idle_prompt", err: "is not an event"},
		{name: "an unknown setup", setup: "gemini", event: "Stop", err: "reports no attention events"},
		{name: "a hostile name is quoted", setup: "claude", event: "x\x1b[2J", err: `"x\x1b[2J"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := FromHook(c.setup, c.event, []byte(c.input))
			switch {
			case c.unmapped:
				if !errors.Is(err, ErrUnmapped) {
					t.Fatalf("FromHook = %+v, %v; want ErrUnmapped", got, err)
				}
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) || errors.Is(err, ErrUnmapped) {
					t.Fatalf("FromHook = %+v, %v; want an error with %q", got, err, c.err)
				}
			case err != nil:
				t.Fatalf("FromHook: %v", err)
			default:
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Errorf("FromHook (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestHookEventsAreTheNamesHooksAreInstalledFor: the event names, without
// details, sorted (what the managed files install hooks for).
func TestHookEventsAreTheNamesHooksAreInstalledFor(t *testing.T) {
	for setup, want := range map[string][]string{
		"claude":   {"Notification", "PermissionRequest", "PostToolUse", "PreToolUse", "Stop", "StopFailure", "UserPromptSubmit"},
		"codex":    {"PermissionRequest", "Stop", "UserPromptSubmit"},
		"opencode": {"permission.asked", "permission.replied", "session.error", "session.idle", "session.status"},
		"none":     nil,
	} {
		if diff := cmp.Diff(want, HookEvents(setup)); diff != "" {
			t.Errorf("HookEvents(%s) (-want +got):\n%s", setup, diff)
		}
	}
}
