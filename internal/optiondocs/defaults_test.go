package optiondocs

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/auth"
	"github.com/agent-box/agent-box/internal/runtime/web"
)

// TestTheWebDurationsDefaultToTheRuntimes checks that the module's default
// for each web duration is the default the runtime applies when the value
// is absent, so the option reference (generated from the declarations)
// states what a host that sets nothing gets. The golden web configuration
// and the VM tier use shorter values; these are the production ones. (All
// three defaults come from the contract on both sides: this guards the
// wiring of the options and the runtime to it, not a second copy.)
func TestTheWebDurationsDefaultToTheRuntimes(t *testing.T) {
	defaults := map[string]json.RawMessage{}
	for _, e := range declared(t) {
		defaults[e.Loc] = e.Default
	}
	for _, tc := range []struct {
		option  string
		runtime time.Duration
	}{
		{"services.agent-box.web.sessionLifetime", auth.DefaultSessionLifetime},
		{"services.agent-box.web.idleTimeout", auth.DefaultIdleTimeout},
		{"services.agent-box.web.terminalCheckInterval", web.DefaultAliveInterval},
	} {
		t.Run(tc.option, func(t *testing.T) {
			var s string
			if err := json.Unmarshal(defaults[tc.option], &s); err != nil {
				t.Fatalf("the option's default %s is not a string: %v", defaults[tc.option], err)
			}
			d, err := time.ParseDuration(s)
			if err != nil {
				t.Fatalf("the option's default %q: %v", s, err)
			}
			if d != tc.runtime {
				t.Errorf("the option defaults to %q (%v); the runtime's default is %v", s, d, tc.runtime)
			}
		})
	}
}
