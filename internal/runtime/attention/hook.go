package attention

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
)

// ErrUnmapped: an event the setup installs a hook for, whose detail means
// no state (a notification type agent-box does not know yet). Nothing
// changes.
var ErrUnmapped = errors.New("means no attention state")

// HookSetups is the setups that report attention events, sorted.
func HookSetups() []string {
	var out []string
	for setup := range contract.Attention.AgentEvents {
		out = append(out, setup)
	}
	sort.Strings(out)
	return out
}

// HookEvents is the agent's event names a setup installs hooks for (the
// keys of the contract's attention.agentEvents without their detail),
// sorted; nil for a setup without any.
func HookEvents(setup string) []string {
	seen := map[string]bool{}
	var out []string
	for key := range contract.Attention.AgentEvents[setup].Events {
		name, _, _ := strings.Cut(key, ":")
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// FromHook maps the event name an agent's hook was installed for, and the
// hook's input (JSON, read only when the event has details), to the
// state it means. input is at most the contract's eventMaxBytes; whatever
// it holds, the result carries only the contract's names.
func FromHook(setup, name string, input []byte) (Event, error) {
	ae, ok := contract.Attention.AgentEvents[setup]
	if !ok {
		return Event{}, fmt.Errorf("setup %s reports no attention events", escape.Quote(setup, 64))
	}
	if strings.Contains(name, ":") {
		return Event{}, fmt.Errorf("%s is not an event agent-box installs a %s hook for", escape.Quote(name, 64), setup)
	}
	plain, hasPlain := ae.Events[name]
	field := ae.DetailFields[name]
	if field == "" {
		if !hasPlain {
			return Event{}, fmt.Errorf("%s is not an event agent-box installs a %s hook for", escape.Quote(name, 64), setup)
		}
		return Event{Kind: Agent, State: State(plain.State), Reason: plain.Reason}, nil
	}
	var in map[string]json.RawMessage
	var detail string
	if err := json.Unmarshal(input, &in); err != nil {
		if !hasPlain {
			return Event{}, fmt.Errorf("the %s hook's input is not a JSON object: %w", name, err)
		}
	} else if err := json.Unmarshal(in[field], &detail); err != nil && !hasPlain {
		return Event{}, fmt.Errorf("the %s hook's input has no string %s", name, field)
	}
	se, ok := ae.Events[name+":"+detail]
	switch {
	case ok:
	case hasPlain:
		se = plain // a detail without a state of its own: the event's
	default:
		return Event{}, fmt.Errorf("%s %s %s: %w", name, field, escape.Quote(detail, 64), ErrUnmapped)
	}
	return Event{Kind: Agent, State: State(se.State), Reason: se.Reason}, nil
}
