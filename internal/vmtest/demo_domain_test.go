package vmtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTheDemoServesTheWebGoldensDomain: the demo's domain is the one the
// web golden configures (the guest's Caddy serves that), and its port is
// the one forwarded.
func TestTheDemoServesTheWebGoldensDomain(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "tests", "golden", "web", "config.nix"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `domain = "`+DemoDomain+`";`) {
		t.Errorf("tests/golden/web/config.nix does not set domain = %q", DemoDomain)
	}
	if !strings.Contains(string(data), `appsDomain = "`+DemoAppsDomain+`";`) {
		t.Errorf("tests/golden/web/config.nix does not set appsDomain = %q", DemoAppsDomain)
	}
	if !strings.HasSuffix(DemoAppsDomain, ":"+strconv.Itoa(DemoPort)) {
		t.Errorf("DemoAppsDomain %q is not on DemoPort %d", DemoAppsDomain, DemoPort)
	}
	if !strings.HasSuffix(DemoDomain, ":"+strconv.Itoa(DemoPort)) {
		t.Errorf("DemoDomain %q is not on DemoPort %d", DemoDomain, DemoPort)
	}
}
