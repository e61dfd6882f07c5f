// Package clientaddr is the one reading of a request's client address on the box's unauthenticated paths.
//
// It is the one reading of a request's client address on
// the box's unauthenticated paths (logins, webhooks): the header Caddy sets
// from {remote_host} (a client's own copy is replaced; X-Forwarded-For is
// never read), the key the limits count by, and the form the failed-login
// line logs, which fail2ban bans (docs/web-contract.md, "Logins").
//
// One client is: an IPv4 address; an IPv6 /64 (one host usually holds a
// whole /64, so rotating addresses inside it is still one client); the
// agents' loopback address (every connection of an agent user to the web
// port has it as its source: the module's nftables table rewrites it); every
// other loopback address together (the box's own processes: the operator's
// SSH tunnel, a local proxy); and "-" for a missing, repeated or unparsable
// header.
package clientaddr

import (
	"net/http"
	"net/netip"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// Header carries the client address from Caddy's route.
var Header = contract.Headers.Client

const (
	// Unknown is the client of a request without one valid Header.
	Unknown = "-"
	// Loopback is the key of every loopback address but the agents'.
	Loopback = "loopback"
	// Agents is the key of the agents' loopback address.
	Agents = "agents"
)

// agentsAddr is the source the module gives agent users' connections.
var agentsAddr = netip.MustParseAddr(contract.Web.AgentsClient.Address)

// Client is how the limits count a client and how the log names it.
type Client struct {
	// Key is the limits' key: an IPv4 address, an IPv6 /64 such as
	// 2001:db8:1:2::/64, Agents, Loopback or Unknown.
	Key string
	// Log is what the failed-login line says: Key, except for loopback
	// (the agents' address included), which is logged as the address
	// itself (fail2ban never bans it).
	Log string
}

// FromHeader is the client of a request: exactly one Header value that
// parses as an IP address without a zone (a zone is free text), else
// Unknown.
func FromHeader(h http.Header) Client {
	vs := h.Values(Header)
	if len(vs) != 1 {
		return Client{Unknown, Unknown}
	}
	return Of(vs[0])
}

// Of is the client of one address text.
func Of(addr string) Client {
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Zone() != "" {
		return Client{Unknown, Unknown}
	}
	a = a.Unmap()
	switch {
	case a == agentsAddr:
		return Client{Agents, a.String()}
	case a.IsLoopback():
		return Client{Loopback, a.String()}
	case a.Is6():
		p, _ := a.Prefix(64)
		return Client{p.String(), p.String()}
	}
	return Client{a.String(), a.String()}
}
