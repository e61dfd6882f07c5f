package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEveryFieldIsSetAndKnown: web.json has exactly the fields the Go side
// reads (a misspelt key would leave a name empty), and the names are
// cookie names browsers accept with their prefixes' rules.
func TestEveryFieldIsSetAndKnown(t *testing.T) {
	dec := json.NewDecoder(bytes.NewReader(webJSON))
	dec.DisallowUnknownFields()
	var w struct {
		Cookies               Cookies  `json:"cookies"`
		TerminalCheckInterval Interval `json:"terminalCheckInterval"`
	}
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("web.json: %v", err)
	}
	iv := w.TerminalCheckInterval
	if !strings.HasPrefix(iv.Env, "AGENT_BOX_") {
		t.Errorf("terminalCheckInterval.env %q: want an AGENT_BOX_ variable", iv.Env)
	}
	var ds [3]time.Duration
	for i, v := range []string{iv.Min, iv.Default, iv.Max} {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("terminalCheckInterval: %v", err)
		}
		ds[i] = d
	}
	if !(0 < ds[0] && ds[0] <= ds[1] && ds[1] <= ds[2]) {
		t.Errorf("terminalCheckInterval: want 0 < min <= default <= max, got %+v", iv)
	}
	c := w.Cookies
	if c.Session == "" || c.HandoverPrefix == "" || c.HandoverPath == "" {
		t.Fatalf("an empty field: %+v", c)
	}
	if !strings.HasPrefix(c.Session, "__Host-") || !strings.HasPrefix(c.HandoverPrefix, "__Secure-") || !strings.HasPrefix(c.HandoverPath, "/") {
		t.Errorf("prefixes: %+v", c)
	}
	for _, name := range []string{c.Session, c.HandoverPrefix + "alice"} {
		ck := (&http.Cookie{Name: name, Value: "v"}).String()
		if !strings.HasPrefix(ck, name+"=") {
			t.Errorf("%q is not a valid cookie name (%q)", name, ck)
		}
	}
}

// TestTheDocsStateTheCheckInterval: docs/web-contract.md states the
// terminal check interval's variable, bounds and default as web.json has
// them (the one place the docs give them).
func TestTheDocsStateTheCheckInterval(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "web-contract.md"))
	if err != nil {
		t.Fatal(err)
	}
	iv := Web.TerminalCheckInterval
	want := fmt.Sprintf("`%s` (`web.terminalCheckInterval`: a Go duration from `%s` to `%s`; default `%s`;", iv.Env, iv.Min, iv.Max, iv.Default)
	if !strings.Contains(strings.Join(strings.Fields(string(data)), " "), want) {
		t.Errorf("docs/web-contract.md does not say %q", want)
	}
}
