package journal

import (
	"io"
	"net"
	"strings"
)

// NativeSocket is journald's socket for its native protocol.
var NativeSocket = "/run/systemd/journal/socket"

// Native writes each line as one journal entry through journald's native
// protocol, for a process whose stderr is not the journal (exec-session's
// is the pane's terminal): the entry is the sender's, so journald files it
// under the sender's unit. A line journald does not take (no socket, a
// full queue) goes to Fallback.
type Native struct {
	Identifier string
	Fallback   io.Writer
}

func (n Native) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	var b strings.Builder
	b.WriteString("SYSLOG_IDENTIFIER=" + n.Identifier + "\nPRIORITY=5\nMESSAGE\n")
	var size [8]byte
	l := uint64(len(msg))
	for i := range size {
		size[i] = byte(l >> (8 * i))
	}
	b.Write(size[:])
	b.WriteString(msg + "\n")
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: NativeSocket, Net: "unixgram"})
	if err == nil {
		_, err = c.Write([]byte(b.String()))
		c.Close()
	}
	if err != nil && n.Fallback != nil {
		return n.Fallback.Write(p)
	}
	return len(p), nil
}
