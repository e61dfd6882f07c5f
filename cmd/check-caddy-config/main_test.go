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

func TestAppsFlag(t *testing.T) {
	for _, bad := range []string{"alice", "alice:records:private", ":records", "alice:"} {
		var out, errb bytes.Buffer
		if code := run([]string{"-domain", "box.example.com", "-apps", bad}, strings.NewReader("{}"), &out, &errb); code != 2 || !strings.Contains(errb.String(), "-apps") {
			t.Errorf("-apps %q: exit %d, stderr %q; want 2 naming -apps", bad, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	code := run([]string{"-domain", "box.example.com", "-users", "alice", "-apps", "alice:records,alice:site:public"}, strings.NewReader(`{"admin":{"listen":"unix//run/caddy/admin.sock"}}`), &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "no route for the app origin records--alice.box.example.com") || !strings.Contains(errb.String(), "no route for the app origin site--alice.box.example.com") {
		t.Errorf("apps without routes: exit %d, stderr %q; want 1 naming both app origins", code, errb.String())
	}
}
