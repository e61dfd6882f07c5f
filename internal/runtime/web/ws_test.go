package web

// The RFC 6455 these tests need, standard library only: a client
// handshake, the server's accept, and unfragmented frames (masked from the
// client, unmasked from the server).

import (
	"bufio"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
)

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

const (
	opBinary = 0x2
	opClose  = 0x8
)

func wsAccept(key string) string {
	sum := sha1.Sum([]byte(key + wsGUID))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// wsHandshake sends a WebSocket handshake for path on c with the headers
// h and reads the answer. On 101 the accept key is checked and br reads
// the frames that follow.
func wsHandshake(c net.Conn, host, path string, h http.Header) (*http.Response, *bufio.Reader, error) {
	var k [16]byte
	rand.Read(k[:])
	key := base64.StdEncoding.EncodeToString(k[:])
	req, err := http.NewRequest(http.MethodGet, "http://"+host+path, nil)
	if err != nil {
		return nil, nil, err
	}
	for name, vs := range h {
		req.Header[name] = append([]string(nil), vs...)
	}
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Sec-WebSocket-Key", key)
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Protocol", "tty")
	if err := req.Write(c); err != nil {
		return nil, nil, err
	}
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, nil, err
	}
	if res.StatusCode == http.StatusSwitchingProtocols && res.Header.Get("Sec-WebSocket-Accept") != wsAccept(key) {
		return res, nil, fmt.Errorf("Sec-WebSocket-Accept %q, want %q", res.Header.Get("Sec-WebSocket-Accept"), wsAccept(key))
	}
	return res, br, nil
}

// wsUpgrade is the server side: it answers 101 and hands over the
// connection.
func wsUpgrade(w http.ResponseWriter, r *http.Request) (net.Conn, *bufio.Reader, error) {
	key := r.Header.Get("Sec-WebSocket-Key")
	if key == "" || r.Header.Get("Sec-WebSocket-Version") != "13" {
		return nil, nil, errors.New("not a version 13 handshake")
	}
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: tty\r\n\r\n", wsAccept(key))
	if err := brw.Flush(); err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, brw.Reader, nil
}

// writeFrame writes one final frame; a client masks its payload.
func writeFrame(w io.Writer, op byte, payload []byte, mask bool) error {
	hdr := []byte{0x80 | op, 0}
	n := len(payload)
	switch {
	case n < 126:
		hdr[1] = byte(n)
	case n <= 0xffff:
		hdr[1] = 126
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr[1] = 127
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	body := payload
	if mask {
		hdr[1] |= 0x80
		var key [4]byte
		rand.Read(key[:])
		hdr = append(hdr, key[:]...)
		body = make([]byte, n)
		for i := range payload {
			body[i] = payload[i] ^ key[i%4]
		}
	}
	_, err := w.Write(append(hdr, body...))
	return err
}

// readFrame reads one unfragmented frame and unmasks it.
func readFrame(r *bufio.Reader) (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	if h[0]&0x80 == 0 {
		return 0, nil, errors.New("fragmented frame")
	}
	op, n := h[0]&0x0f, uint64(h[1]&0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > 1<<20 {
		return 0, nil, fmt.Errorf("frame of %d bytes", n)
	}
	var key [4]byte
	masked := h[1]&0x80 != 0
	if masked {
		if _, err := io.ReadFull(r, key[:]); err != nil {
			return 0, nil, err
		}
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, err
	}
	if masked {
		for i := range p {
			p[i] ^= key[i%4]
		}
	}
	return op, p, nil
}
