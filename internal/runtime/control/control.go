// Package control is the supervisor's control protocol, both sides of it:
// a request is one datagram on the unixgram socket <runtime>/supervisor.sock
// (paths.Env.SupervisorSocket), written by `agent-box session restart` and
// read by the supervisor:
//
//	restart NAME                    restart one session (NAME a valid session name)
//	restart-all                     restart every session
//	attention NAME STATE [REASON]   the session's agent reports an attention state
//	                                (working, needs-you, finished or limited; a reason of the contract's)
//	attention NAME limited REASON UNIX
//	                                a usage limit that the agent said resets at UNIX (seconds)
//
// Anything else is not a request. A datagram is at most MaxDatagram bytes;
// the longest valid one ("attention ", a 64-byte name, "limited", the
// longest reason and a reset in the year 9999) has under 128 (the test
// checks it).
package control

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/registry"
)

// MaxDatagram is the most the supervisor reads of one datagram; a longer
// one is cut there and is not a request.
const MaxDatagram = 128

// maxUnix bounds a reset time: the year 9999 (a time past it does not
// round-trip through the observation file's RFC 3339).
const maxUnix = 253402300799

// Request is one request: a restart of the session Name, or of all; or,
// with Attention set, the attention state Name's agent reports.
type Request struct {
	All       bool
	Name      string
	Attention *attention.Event
}

// Attend is the report that session name's agent is in state s for reason.
func Attend(name string, s attention.State, reason string) Request {
	return Request{Name: name, Attention: &attention.Event{Kind: attention.Agent, State: s, Reason: reason}}
}

// AttendLimit is the report that session name's agent reached a usage
// limit (reason) that it said resets at reset (zero: it did not say).
func AttendLimit(name, reason string, reset time.Time) Request {
	r := Attend(name, attention.Limited, reason)
	if !reset.IsZero() {
		r.Attention.Until = time.Unix(reset.Unix(), 0).UTC()
	}
	return r
}

// Restart is the request to restart session name ("" for every session).
func Restart(name string) Request {
	if name == "" {
		return Request{All: true}
	}
	return Request{Name: name}
}

// Format is the datagram of r.
func (r Request) Format() []byte {
	if a := r.Attention; a != nil {
		if a.State == attention.Limited && !a.Until.IsZero() {
			return []byte("attention " + r.Name + " " + string(a.State) + " " + a.Reason + " " + strconv.FormatInt(a.Until.Unix(), 10))
		}
		return []byte(strings.TrimSuffix("attention "+r.Name+" "+string(a.State)+" "+a.Reason, " "))
	}
	if r.All {
		return []byte("restart-all")
	}
	return []byte("restart " + r.Name)
}

// Parse reads one datagram; ok is false for anything that is not a request.
func Parse(b []byte) (r Request, ok bool) {
	f := strings.Fields(string(b))
	switch {
	case len(f) == 2 && f[0] == "restart" && registry.ValidName(f[1]):
		return Request{Name: f[1]}, true
	case len(f) == 1 && f[0] == "restart-all":
		return Request{All: true}, true
	case (len(f) == 3 || len(f) == 4) && f[0] == "attention" && registry.ValidName(f[1]):
		st, reason := attention.State(f[2]), ""
		if len(f) == 4 {
			reason = f[3]
		}
		if !attention.AgentCan(st) || st == attention.Working && reason != "" || reason != "" && !attention.KnownReason(reason) {
			return Request{}, false
		}
		return Attend(f[1], st, reason), true
	case len(f) == 5 && f[0] == "attention" && registry.ValidName(f[1]) && f[2] == string(attention.Limited) && attention.KnownReason(f[3]):
		unix, err := strconv.ParseInt(f[4], 10, 64)
		if err != nil || unix <= 0 || unix > maxUnix {
			return Request{}, false
		}
		return AttendLimit(f[1], f[3], time.Unix(unix, 0)), true
	}
	return Request{}, false
}

// Send writes one datagram to the supervisor's socket at path.
func Send(path string, datagram []byte) error {
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Write(datagram)
	return err
}

// IsNotListening reports whether err from Send means nobody reads the
// socket (no supervisor runs).
func IsNotListening(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT)
}
