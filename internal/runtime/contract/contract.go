// Package contract holds the rules the runtime shares with the NixOS
// module and the docs, in web.json: the Go side embeds the file, the Nix
// lib includes the same bytes (modules/src/lib/default.nix), so a name
// that both sides use is written once. Today it holds the cookie names
// Caddy passes on to the auth service (docs/web-contract.md, "Caddy") and
// the web daemons' terminal check interval.
package contract

import (
	_ "embed"
	"encoding/json"
)

//go:embed web.json
var webJSON []byte

// Cookies are the box's own cookies: the only ones Caddy passes on.
type Cookies struct {
	// Session is the session cookie of every origin (__Host-: no Domain).
	Session string `json:"session"`
	// HandoverPrefix + U binds a hand-over code for U to the browser the
	// box origin gave it to; it is set for Domain=D and HandoverPath.
	HandoverPrefix string `json:"handoverPrefix"`
	HandoverPath   string `json:"handoverPath"`
}

// Interval is a Go duration setting with its environment variable, its
// default and its bounds (all Go durations, as Nix's options take them).
type Interval struct {
	Env     string `json:"env"`
	Default string `json:"default"`
	Min     string `json:"min"`
	Max     string `json:"max"`
}

// Web is web.json.
var Web struct {
	Cookies Cookies `json:"cookies"`
	// TerminalCheckInterval: how often a web daemon asks the auth service
	// whether the login sessions of its open terminals still live
	// (services.agent-box.web.terminalCheckInterval).
	TerminalCheckInterval Interval `json:"terminalCheckInterval"`
}

func init() {
	if err := json.Unmarshal(webJSON, &Web); err != nil {
		panic("contract: web.json: " + err.Error())
	}
}
