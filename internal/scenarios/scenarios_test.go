package scenarios

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/runtime/pwhash"
)

// The demo logins' hashes are what the auth service accepts for their
// passwords, and they are exactly the logins the web golden configures.
func TestDemoLoginsMatchTheirHashesAndTheWebGolden(t *testing.T) {
	logins, err := DemoLogins(module.Root())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range logins {
		names = append(names, l.Name)
		h, err := pwhash.ParseHash(l.Hash)
		if err != nil {
			t.Errorf("login %s: %v", l.Name, err)
			continue
		}
		if !h.Verify(l.Password) {
			t.Errorf("login %s: the hash does not verify its password", l.Name)
		}
		if h.Verify(l.Password + "x") {
			t.Errorf("login %s: the hash verifies another password", l.Name)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(module.Root(), "tests/golden/web/config.nix"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.Contains(string(cfg), "logins."+n+" = {") || !strings.Contains(string(cfg), "/etc/agent-box-demo/"+n+".hash") {
			t.Errorf("tests/golden/web/config.nix has no login %s with /etc/agent-box-demo/%s.hash", n, n)
		}
	}
	if !slices.Equal(names, []string{"ops", "alice-only"}) {
		t.Errorf("demo logins %v", names)
	}
}
