// Package approval is an agent's permission request on its way from the agent's hook to the auth service, and the answer back.
//
// It holds (docs/web-contract.md, "Approvals") the wire format both sides
// check, what an agent's hook input becomes, what the hook prints for each
// answer, and the hook's wait.
//
// Invariants: a request's tool and input are the agent's text, cleaned
// (no control, escape or bidirectional-override character; at most the
// contract's bytes, cut at a character) before they leave the hook, and
// checked again by the service: whatever shows them shows plain text. An
// answer is one of the four decisions; anything else is no decision, and
// the agent's own prompt takes over.
package approval

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// The decisions a person can take; None is the service's answer when the
// wait ended without one.
const (
	Allow        = "allow"
	AllowSession = "allow-session"
	Deny         = "deny"
	None         = "none"
)

// Decisions are the decisions a person can take, in the page's order.
var Decisions = []string{Allow, AllowSession, Deny}

// Request is what a hook sends: its own random ID (it sends the same
// again after a restart of the service), its session and agent setup,
// the tool (a name of toolPattern) and its input as text, whether that
// text was cut (then only a denial can be taken: a person cannot allow
// what they could not read), and the rules the agent would set for the
// rest of the session with the allow, as text ("" when it offers none:
// no "allow for this session").
type Request struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	Agent   string `json:"agent"`
	Tool    string `json:"tool"`
	Input   string `json:"input"`
	Cut     bool   `json:"cut,omitempty"`
	Rules   string `json:"rules,omitempty"`
}

// toolName is what a tool's name may hold (the contract's toolPattern):
// an identifier (Claude's Bash or mcp__server__tool, OpenCode's bash or
// external_directory), no character that could draw over the page's own
// text.
var toolName = &contract.Name{Pattern: contract.Approvals.ToolPattern}

// AllowsSession reports whether the request offers "allow for this
// session".
func (r Request) AllowsSession() bool { return r.Rules != "" && !r.Cut }

// Offers reports whether a person may take decision d on r.
func (r Request) Offers(d string) bool {
	switch d {
	case Deny:
		return true
	case Allow:
		return !r.Cut
	case AllowSession:
		return r.AllowsSession()
	}
	return false
}

// Answer is the service's answer: a decision (or None) and who took it
// (a login, with "(notification)" when it came through an action URL).
type Answer struct {
	Decision string `json:"decision"`
	By       string `json:"by,omitempty"`
}

// Check reports whether r is a request of the contract: an ID of 32 hex
// digits, a session name, an agent setup that asks, a tool and an input
// within their bounds that are clean text.
func (r Request) Check() error {
	lim := contract.Approvals
	switch {
	case len(r.ID) != 32 || !isHex(r.ID):
		return errors.New("the id is not 32 hex digits")
	case !contract.Names.Session.Match(r.Session):
		return errors.New("not a session name")
	case lim.AgentEvents[r.Agent] == "":
		return errors.New("not an agent setup that asks for permissions")
	case len(r.Tool) > lim.MaxToolBytes || !toolName.Match(r.Tool):
		return fmt.Errorf("the tool is not a name of %s, at most %d bytes", lim.ToolPattern, lim.MaxToolBytes)
	case len(r.Input) > lim.MaxInputBytes || Clean(r.Input, lim.MaxInputBytes) != r.Input:
		return fmt.Errorf("the input is not clean text of at most %d bytes", lim.MaxInputBytes)
	case len(r.Rules) > lim.MaxRulesBytes || Clean(r.Rules, lim.MaxRulesBytes) != r.Rules:
		return fmt.Errorf("the rules are not clean text of at most %d bytes", lim.MaxRulesBytes)
	}
	return nil
}

// Check reports whether a is an answer the service can give.
func (a Answer) Check() error {
	if a.Decision != None && !IsDecision(a.Decision) {
		return fmt.Errorf("%q is not a decision", a.Decision)
	}
	if len(a.By) > 128 || Clean(a.By, 128) != a.By || strings.ContainsAny(a.By, "\n\t") {
		return errors.New("the answer's author is not one line of clean text")
	}
	return nil
}

// IsDecision reports whether d is one of Decisions.
func IsDecision(d string) bool { return d == Allow || d == AllowSession || d == Deny }

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// ellipsis ends a text Clean cut.
const ellipsis = "…"

// Clean is s as plain text for a person: invalid UTF-8 replaced, every
// control character but newline and tab, every format character (the
// bidirectional overrides and isolates, zero-width characters) and every
// private-use or unassigned one left out, and at most max bytes, cut at
// a character with an ellipsis at the end.
func Clean(s string, limit int) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '\n' || r == '\t':
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), unicode.Is(unicode.Co, r), !unicode.IsPrint(r) && !unicode.IsSpace(r) && r != utf8.RuneError:
			continue
		case unicode.IsSpace(r) && r != ' ':
			r = ' ' // a line or paragraph separator, no-break spaces: a space
		}
		b.WriteRune(r)
	}
	out := b.String()
	if len(out) <= limit {
		return out
	}
	cut := limit - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:max(cut, 0)] + ellipsis
}

// Asks reports whether setup's hook for event waits for a person's
// decision (the contract's approvals.agentEvents).
func Asks(setup, event string) bool {
	e, ok := contract.Approvals.AgentEvents[setup]
	return ok && e == event
}

// sessionRules are the setups whose answer can carry rules for the rest
// of the session: Claude Code's updatedPermissions, and OpenCode's
// "always", which agent-box's plugin replies when the answer has them
// (Codex fails a hook that sets them: measured with 0.171.0).
var sessionRules = map[string]bool{"claude": true, "opencode": true}

// FromHook is the request of setup's permission hook input: Claude Code's
// (measured with 2.1.328: tool_name, tool_input, permission_suggestions),
// Codex's (measured with 0.171.0: tool_name, tool_input with the command
// and the model's justification as its description; no suggestions) and
// what agent-box's OpenCode plugin makes of a permission.asked (the
// permission as tool_name, its command and patterns as tool_input, its
// "always" patterns as suggestions) have one shape. The tool's input
// becomes "key: value" lines in key order, a shell command first;
// AllowSession when the agent suggested rules for the session and can
// take them.
func FromHook(setup, id, session string, input []byte) (Request, error) {
	var in struct {
		Tool        string                     `json:"tool_name"`
		Input       map[string]json.RawMessage `json:"tool_input"`
		Suggestions []json.RawMessage          `json:"permission_suggestions"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return Request{}, fmt.Errorf("the permission hook's input is not JSON: %w", err)
	}
	if in.Tool == "" {
		return Request{}, errors.New("the permission hook's input names no tool")
	}
	lim := contract.Approvals
	tool := []rune(in.Tool)
	for i, c := range tool {
		if c > 0x7f || !toolName.Match(string(c)) {
			tool[i] = '_'
		}
	}
	text := inputText(in.Input)
	r := Request{ID: id, Session: session, Agent: setup, Tool: string(tool), Input: Clean(text, lim.MaxInputBytes)}
	if len(r.Tool) > lim.MaxToolBytes {
		r.Tool = r.Tool[:lim.MaxToolBytes]
	}
	r.Cut = r.Input != Clean(text, len(text)+1)
	if len(in.Suggestions) > 0 && sessionRules[setup] {
		var lines []string
		for _, s := range in.Suggestions {
			lines = append(lines, string(s))
		}
		if rules := strings.Join(lines, "\n"); Clean(rules, lim.MaxRulesBytes) == rules {
			r.Rules = rules // longer or unclean rules are not offered
		}
	}
	return r, nil
}

// inputText is a tool's input as text: "command" (a shell command) first
// as it is, then every other key in order as "key: value" (a string as it
// is, anything else as its JSON).
func inputText(in map[string]json.RawMessage) string {
	var lines []string
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sortFirst(keys, "command")
	for _, k := range keys {
		v := in[k]
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		if k == "command" && len(lines) == 0 {
			lines = append(lines, s)
			continue
		}
		lines = append(lines, k+": "+s)
	}
	return strings.Join(lines, "\n")
}

// sortFirst sorts keys with first, when present, in front.
func sortFirst(keys []string, first string) {
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && less(keys[j], keys[j-1], first); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
}

func less(a, b, first string) bool {
	if a == first || b == first {
		return a == first && b != first
	}
	return a < b
}

// Output is what setup's permission hook prints for an answer (measured
// with Claude Code 2.1.328 and Codex 0.171.0, which take the same shape;
// agent-box's OpenCode plugin reads it too): allow runs the tool;
// allow-session (not for Codex, which fails a hook that sets rules) also
// adds the agent's own suggestions (the input's permission_suggestions)
// as the session's rules; deny refuses it and tells the model why; no
// decision prints nothing, and the agent's own prompt takes over.
func Output(setup string, a Answer, input []byte) []byte {
	decision := map[string]any{}
	switch a.Decision {
	case Allow:
		decision["behavior"] = "allow"
	case AllowSession:
		decision["behavior"] = "allow"
		if !sessionRules[setup] {
			break
		}
		var in struct {
			Suggestions []json.RawMessage `json:"permission_suggestions"`
		}
		if json.Unmarshal(input, &in) == nil && len(in.Suggestions) > 0 {
			decision["updatedPermissions"] = in.Suggestions
		}
	case Deny:
		decision["behavior"] = "deny"
		decision["message"] = "A person denied this from agent-box (" + a.By + ")."
	default:
		return nil
	}
	out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": contract.Approvals.AgentEvents[setup], "decision": decision}})
	return append(out, '\n')
}
