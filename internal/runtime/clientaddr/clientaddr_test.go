package clientaddr

import (
	"net/http"
	"net/netip"
	"testing"
)

func TestOneClientPerAddressSlash64AgentsAndTheRestOfLoopback(t *testing.T) {
	for _, tc := range []struct {
		name, addr, key, log string
	}{
		{"IPv4", "198.51.100.7", "198.51.100.7", "198.51.100.7"},
		{"IPv4 with leading zeros is no address", "198.051.100.7", Unknown, Unknown},
		{"IPv4 in IPv6", "::ffff:198.51.100.7", "198.51.100.7", "198.51.100.7"},
		{"IPv6: its /64", "2001:DB8:1:2:a:b:c:d", "2001:db8:1:2::/64", "2001:db8:1:2::/64"},
		{"another address of that /64", "2001:db8:1:2::1", "2001:db8:1:2::/64", "2001:db8:1:2::/64"},
		{"the next /64", "2001:db8:1:3::1", "2001:db8:1:3::/64", "2001:db8:1:3::/64"},
		{"127.0.0.1", "127.0.0.1", Loopback, "127.0.0.1"},
		{"any 127/8 address", "127.3.2.1", Loopback, "127.3.2.1"},
		{"::1", "::1", Loopback, "::1"},
		{"IPv4 loopback in IPv6", "::ffff:127.0.0.2", Loopback, "127.0.0.2"},
		{"the agents' address", agentsAddr.String(), Agents, agentsAddr.String()},
		{"the agents' address in IPv6", "::ffff:" + agentsAddr.String(), Agents, agentsAddr.String()},
		{"the address after it", agentsAddr.Next().String(), Loopback, agentsAddr.Next().String()},
		{"a zone", "fe80::1%eth0", Unknown, Unknown},
		{"a port", "198.51.100.7:80", Unknown, Unknown},
		{"a prefix", "2001:db8::/64", Unknown, Unknown},
		{"a host name", "evil.example", Unknown, Unknown},
		{"text after it", "1.2.3.4 addr=5.6.7.8", Unknown, Unknown},
		{"empty", "", Unknown, Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Of(tc.addr); got != (Client{tc.key, tc.log}) {
				t.Errorf("Of(%q) = %+v, want key %q log %q", tc.addr, got, tc.key, tc.log)
			}
		})
	}
}

func TestOnlyOneHeaderValueCounts(t *testing.T) {
	h := http.Header{}
	if got := FromHeader(h); got.Key != Unknown {
		t.Errorf("no header: %+v", got)
	}
	h.Add(Header, "198.51.100.7")
	if got := FromHeader(h); got.Key != "198.51.100.7" {
		t.Errorf("one header: %+v", got)
	}
	h.Add(Header, "198.51.100.8")
	if got := FromHeader(h); got.Key != Unknown {
		t.Errorf("two headers: %+v", got)
	}
	h = http.Header{}
	h.Set("X-Forwarded-For", "198.51.100.9")
	if got := FromHeader(h); got.Key != Unknown {
		t.Errorf("X-Forwarded-For is never read: %+v", got)
	}
}

// The agents' address must be IPv4 loopback (the nftables table gives it
// to IPv4 connections, whose replies must come back on lo) and not
// 127.0.0.1, where the operator's SSH tunnel arrives.
func TestTheAgentsAddressIsIPv4LoopbackButNot127001(t *testing.T) {
	if !agentsAddr.Is4() || !agentsAddr.IsLoopback() || agentsAddr == netip.MustParseAddr("127.0.0.1") {
		t.Errorf("web.agentsClient.address %s: want an IPv4 loopback address other than 127.0.0.1", agentsAddr)
	}
}
