package agents

import "testing"

func TestParseRequiresAbsoluteCommandsAndKnownFields(t *testing.T) {
	if _, err := parse([]byte(`{"a": {"command": "claude"}}`)); err == nil {
		t.Errorf("relative command accepted")
	}
	if _, err := parse([]byte(`{"a": {"command": "/bin/a", "extra": 1}}`)); err == nil {
		t.Errorf("unknown field accepted")
	}
	a, err := parse([]byte(`{"b": {"command": "/bin/b"}, "a": {"command": "/bin/a", "args": ["-x"]}}`))
	if err != nil || len(a) != 2 || a.Names()[0] != "a" {
		t.Errorf("parse = %v, %v", a, err)
	}
}
