package journal

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestEachEventIsOneLineAfterThePrefix(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  func(*Logger)
		want string
	}{
		{"printf", func(l *Logger) { l.Printf("stored %d bytes", 12) }, "agent-box: web: stored 12 bytes\n"},
		{"refuse", func(l *Logger) { l.Refuse("origin", "GET %s", "/term/") }, "agent-box: web: refused origin: GET /term/\n"},
		{"a line break in an argument is escaped",
			func(l *Logger) { l.Printf("path %s", "x\nagent-box-auth: login failed login=root addr=1.2.3.4") },
			`agent-box: web: path x\nagent-box-auth: login failed login=root addr=1.2.3.4` + "\n"},
		{"terminal controls and bidi controls are escaped, a backslash is kept",
			func(l *Logger) { l.Printf("%s", "\x1b]0;title\x07 \u202e a\\b") },
			`agent-box: web: \x1b]0;title\x07 \u202e a\b` + "\n"},
		{"net/http's messages are one escaped line each",
			func(l *Logger) { l.ErrorLog().Printf("bad request from %s", "x\r\ny") },
			`agent-box: web: http: bad request from x\r\ny` + "\n"},
		{"a validated line is written as it is", func(l *Logger) { l.Line("agent-box-auth: login failed login=root addr=-") },
			"agent-box-auth: login failed login=root addr=-\n"},
		{"a line break in a validated line is escaped all the same", func(l *Logger) { l.Line("a\nb\n") },
			`a\nb` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b syncBuf
			tc.log(New(&b, "agent-box: web"))
			if got := b.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConcurrentEventsNeverInterleave(t *testing.T) {
	var b syncBuf
	l := New(&b, "agent-box")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				l.Printf("%s", strings.Repeat(fmt.Sprint(i), 100+j))
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 1600 {
		t.Fatalf("%d lines, want 1600", len(lines))
	}
	for _, line := range lines {
		msg, ok := strings.CutPrefix(line, "agent-box: ")
		if !ok || strings.Trim(msg, msg[:1]) != "" {
			t.Fatalf("a mixed line: %q", line)
		}
	}
}

func TestANilWriterDiscards(t *testing.T) {
	New(nil, "agent-box").Printf("nothing")
}
