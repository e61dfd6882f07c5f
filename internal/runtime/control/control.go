// Package control is the supervisor's control protocol, both sides of it:
// a request is one datagram on the unixgram socket <runtime>/supervisor.sock
// (paths.Env.SupervisorSocket), written by `agent-box session restart` and
// read by the supervisor:
//
//	restart NAME     restart one session (NAME a valid session name)
//	restart-all      restart every session
//
// Anything else is not a request. A datagram is at most MaxDatagram bytes;
// the longest valid one ("restart " and a 64-byte name) has 72.
package control

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/registry"
)

// MaxDatagram is the most the supervisor reads of one datagram; a longer
// one is cut there and is not a request.
const MaxDatagram = 128

// Request is one request: a restart of the session Name, or of all.
type Request struct {
	All  bool
	Name string
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
