package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestExitCodes(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(nil, strings.NewReader("{}"), &out, &errb); code != 2 {
		t.Errorf("no -domain: exit %d, want 2", code)
	}
	errb.Reset()
	if code := run([]string{"-domain", "box.example.com", "-users", "alice"}, strings.NewReader(`{"admin":{"listen":"localhost:2019"}}`), &out, &errb); code != 1 || !strings.Contains(errb.String(), "admin listens on") {
		t.Errorf("a bad config: exit %d, stderr %q; want 1 naming the admin listener", code, errb.String())
	}
}
