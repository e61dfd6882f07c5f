package vmtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/scenarios"
)

func TestACrashPhaseKeepsTheNextPhaseOnItsDisk(t *testing.T) {
	phases := []scenarios.Phase{
		{Name: "a", Config: "x"},
		{Name: "pre", Config: "x", Crash: true},
		{Name: "post", Config: "x"},
		{Name: "b", Config: "y"},
		{Name: "p1", Config: "y", Crash: true},
		{Name: "p2", Config: "y", Crash: true},
		{Name: "p3", Config: "y"},
	}
	want := []string{"a", "pre+post", "b", "p1+p2+p3"}
	if diff := cmp.Diff(want, names(Chains(phases))); diff != "" {
		t.Errorf("chains (-want +got):\n%s", diff)
	}
}

func TestTheLongestChainsBootFirst(t *testing.T) {
	cs := Chains([]scenarios.Phase{
		{Name: "short"}, {Name: "pre", Crash: true}, {Name: "post"}, {Name: "long"}, {Name: "new"}, {Name: "tie"},
	})
	last := map[string]float64{"short": 40, "pre": 50, "post": 60, "long": 400, "tie": 40}
	// new (never timed: first) > long 400 > pre+post 110 > short 40 = tie 40 (file order)
	want := []string{"new", "long", "pre+post", "short", "tie"}
	if diff := cmp.Diff(want, names(Order(cs, last))); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"short", "pre+post", "long", "new", "tie"}, names(cs)); diff != "" {
		t.Errorf("Order changed its input (-want +got):\n%s", diff)
	}
}

func TestTheNumberOfGuestsIsChecked(t *testing.T) {
	for _, c := range []struct {
		env  string
		want int
		err  string
	}{
		{"", 2, ""},
		{"1", 1, ""},
		{"3", 3, ""},
		{"0", 0, `AGENT_BOX_VM_JOBS="0": want a number of guests from 1 to 8`},
		{"two", 0, `AGENT_BOX_VM_JOBS="two": want a number of guests from 1 to 8`},
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv("AGENT_BOX_VM_JOBS", c.env)
			n, err := Jobs()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if n != c.want || got != c.err {
				t.Errorf("Jobs() = %d, %q; want %d, %q", n, got, c.want, c.err)
			}
		})
	}
}

func TestTheLastRunsTimesAreMerged(t *testing.T) {
	t.Setenv("AGENT_BOX_VM_CACHE", t.TempDir())
	if got := LastTimes(); len(got) != 0 {
		t.Fatalf("no file: %v, want empty", got)
	}
	if err := SaveTimes(map[string]float64{"a": 1, "b": 2}); err != nil {
		t.Fatal(err)
	}
	if err := SaveTimes(map[string]float64{"b": 3}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]float64{"a": 1, "b": 3}, LastTimes()); diff != "" {
		t.Errorf("times (-want +got):\n%s", diff)
	}
}

// TestTheTestingDocStatesTheBudget: docs/testing.md states the budget the
// harness marks the tier against.
func TestTheTestingDocStatesTheBudget(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(module.Root(), "docs/testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("The budget: %.0f s for the whole tier", TierBudget.Seconds())
	if !strings.Contains(strings.Join(strings.Fields(string(data)), " "), want) {
		t.Errorf("docs/testing.md does not say %q", want)
	}
}
