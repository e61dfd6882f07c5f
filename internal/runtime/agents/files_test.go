package agents

import (
	"github.com/agent-box/agent-box/internal/hostilefile"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

func TestABadAgentsTableIsAnErrorAtOnce(t *testing.T) {
	for _, kind := range []string{"FIFO", "directory", "symlink to a FIFO", "oversized file"} {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "agents.json")
			hostilefile.Plant(t, p, kind, MaxFileSize, "{}")
			err := hostilefile.Within(t, func() error { _, err := Load(p); return err })
			if !userfile.Bad(err) || !strings.Contains(err.Error(), p) {
				t.Errorf("Load = %v, want a not-regular or too-large error naming the file", err)
			}
		})
	}
}

func TestAnAgentsCommandAndArgumentsAreBounded(t *testing.T) {
	arg := strings.Repeat("a", 40<<10)
	if _, err := parse([]byte(`{"a": {"command": "/bin/a", "args": ["` + arg + `"]}}`)); err != nil {
		t.Errorf("a 40 KiB argument: %v", err)
	}
	_, err := parse([]byte(`{"a": {"command": "/bin/a", "args": ["` + arg + `", "` + arg + `"]}}`))
	if err == nil || !strings.Contains(err.Error(), "65536") {
		t.Errorf("two 40 KiB arguments: %v, want an error naming 65536", err)
	}
}

func TestErrorsQuoteAgentNamesAndCommandsEscapedAndCut(t *testing.T) {
	name := `\u001b[2J` + strings.Repeat("x", 1000)
	_, err := parse([]byte(`{"` + name + `": {"command": "rel\u001b]0;t\u0007"}}`))
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\x07") || !strings.Contains(err.Error(), `\x1b[2Jx`) {
		t.Fatalf("parse = %v, want the name and command escaped", err)
	}
	if msg := err.Error(); len(msg) > 200 || !strings.Contains(msg, "... (1004 bytes)") {
		t.Errorf("the name is not cut at 64 bytes: %d bytes: %s", len(msg), msg)
	}
}
