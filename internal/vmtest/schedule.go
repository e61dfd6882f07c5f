package vmtest

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/scenarios"
)

// TierBudget is what the whole tier may take on the reference machine (2
// cores, TCG, two guests at once, warm caches), the phases the open issues
// will add included (docs/testing.md states it, and what each phase takes).
// Going over fails nothing (the machine is noisy): the harness's summary
// marks it, so that a tier that blows it shows in review.
const TierBudget = 1000 * time.Second

// A Chain is phases that must run one after the other on one disk: a
// phase that ends in a power cut and the phases that boot its disk after.
type Chain []scenarios.Phase

// Chains cuts the phases (in file order) into chains: a phase joins the
// chain of the phase before it if that one ends in a crash.
func Chains(phases []scenarios.Phase) []Chain {
	var cs []Chain
	for i, ph := range phases {
		if i > 0 && phases[i-1].Crash {
			cs[len(cs)-1] = append(cs[len(cs)-1], ph)
			continue
		}
		cs = append(cs, Chain{ph})
	}
	return cs
}

// Order puts the chains longest first by the seconds the phases took in the last run, so that two guests
// at once end close together. A chain with a phase never timed here comes
// first (it may be the longest); equal chains keep their file order, which
// puts the longest first.
func Order(cs []Chain, last map[string]float64) []Chain {
	cost := func(c Chain) float64 {
		s := 0.0
		for _, ph := range c {
			t, ok := last[ph.Name]
			if !ok {
				return math.Inf(1)
			}
			s += t
		}
		return s
	}
	out := append([]Chain(nil), cs...)
	sort.SliceStable(out, func(i, j int) bool { return cost(out[i]) > cost(out[j]) })
	return out
}

// names lists the chains as "a, pre+post".
func names(cs []Chain) []string {
	var out []string
	for _, c := range cs {
		var n []string
		for _, ph := range c {
			n = append(n, ph.Name)
		}
		out = append(out, strings.Join(n, "+"))
	}
	return out
}

// Jobs is how many guests boot at once: $AGENT_BOX_VM_JOBS, else 2. On
// this 2-core machine two guests of one vCPU each took the tier from
// 1,177 s to 1,022 s; each guest runs about 1.4 times slower beside
// another, so more would not pay.
func Jobs() (int, error) {
	v := os.Getenv("AGENT_BOX_VM_JOBS")
	if v == "" {
		return 2, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 8 {
		return 0, fmt.Errorf("AGENT_BOX_VM_JOBS=%q: want a number of guests from 1 to 8", v)
	}
	return n, nil
}

// timesFile keeps each phase's seconds of the last run on this machine.
func timesFile() string { return filepath.Join(CacheDir(), "phase-seconds.json") }

// LastTimes reads the seconds of the last run; none is an empty map.
func LastTimes() map[string]float64 {
	m := map[string]float64{}
	if data, err := os.ReadFile(timesFile()); err == nil {
		json.Unmarshal(data, &m) // a damaged file only loses the order
	}
	return m
}

// SaveTimes merges this run's seconds into the file for the next run.
func SaveTimes(took map[string]float64) error {
	m := LastTimes()
	for k, v := range took {
		m[k] = v
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(timesFile(), append(data, '\n'), 0o644)
}
