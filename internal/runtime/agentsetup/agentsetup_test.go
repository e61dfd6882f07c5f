package agentsetup

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// TestEverySetupOfTheContractIsRegistered: the runtime prepares exactly
// the setups the module may name (the contract's).
func TestEverySetupOfTheContractIsRegistered(t *testing.T) {
	if diff := cmp.Diff(contract.Conversations.Setups, Names()); diff != "" {
		t.Errorf("setups (-contract +registered):\n%s", diff)
	}
	if For("") != nil || For("no-such-setup") != nil {
		t.Error("For returns a Setup for no setup")
	}
}

func TestCodexTrustQuotesTheFolderAsATOMLString(t *testing.T) {
	for _, c := range []struct{ dir, want string }{
		{"/home/ada", `projects={"/home/ada"={trust_level="trusted"}}`},
		{"/srv/v1.2/x", `projects={"/srv/v1.2/x"={trust_level="trusted"}}`},
		{`/a"b\c`, `projects={"/a\"b\\c"={trust_level="trusted"}}`},
		{"/a\tb\nc\x7f", `projects={"/a\u0009b\u000Ac\u007F"={trust_level="trusted"}}`},
		{"/é", `projects={"/é"={trust_level="trusted"}}`},
	} {
		if got := CodexTrust(c.dir); got != c.want {
			t.Errorf("CodexTrust(%q) = %s, want %s", c.dir, got, c.want)
		}
	}
}
