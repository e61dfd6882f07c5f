package contract

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestEveryFieldIsSetAndKnown: web.json has exactly the fields the Go side
// reads (a misspelt key would leave a name empty), and the names are
// cookie names browsers accept with their prefixes' rules.
func TestEveryFieldIsSetAndKnown(t *testing.T) {
	dec := json.NewDecoder(bytes.NewReader(webJSON))
	dec.DisallowUnknownFields()
	var w struct {
		Cookies Cookies `json:"cookies"`
	}
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("web.json: %v", err)
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
