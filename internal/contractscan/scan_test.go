package contractscan

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// excluded are the files the scan does not read: the contract itself and
// what is generated from it (its Go values, the goldens, the single module
// file).
var excluded = []string{
	"internal/runtime/contract/contract.json",
	"internal/runtime/contract/values.go",
	"modules/agent-box.nix",
	"tests/golden/**",
}

// allowed are the places a copy of a contract string may stand, each with
// its reason. Keep it short: a copy in the module's sources or the
// runtime belongs in the contract instead.
var allowed = []struct{ glob, reason string }{
	{"**/*_test.go", "tests state the values they expect: an oracle independent of the contract"},
	{"tests/**", "the scenarios, browser tests and Nix cases check the box from outside, as an operator would: independent oracles"},
	{"nix/**", "the NixOS VM tests and flake checks: independent oracles, like tests/"},
	{"internal/caddycheck/**", "an independent oracle of the Caddyfile (house style: independent of the contract it checks)"},
	{"internal/vmtest/**", "the QEMU harness boots the goldens and reads the guest's units and journal as an operator would: an independent oracle, like tests/"},
	{"modules/src/units/**", "verbatim unit files, byte for byte as shipped: TestUnitsHoldTheContractsLiterals compares each literal with the contract"},
	{"docs/*.md", "the prose around the generated tables names the rules it explains"},
	{"internal/assemble/testdata/**", "assembler fixtures: a template unit's name as an include path (the '@' of a marker)"},
}

// generated are the generated blocks inside hand-written files: their
// text is the contract's (or a list's) and is checked by its own test.
var generated = regexp.MustCompile(`(?s)<!-- BEGIN [^:]+: generated .*?<!-- END [^>]*-->`)

func match(glob, file string) bool {
	if rest, ok := strings.CutPrefix(glob, "**/"); ok {
		ok, _ := path.Match(rest, path.Base(file))
		return ok
	}
	if dir, ok := strings.CutSuffix(glob, "/**"); ok {
		return strings.HasPrefix(file, dir+"/")
	}
	ok, _ := path.Match(glob, file)
	return ok
}

// files are the repository's files as a fresh clone has them, and the new
// ones git does not ignore.
func files(t *testing.T) []string {
	// -z: names as they are (without it git quotes one with a backslash,
	// such as a mount unit's run-agent\x2dbox-<user>.mount)
	out, err := exec.Command("git", "-C", module.Root(), "ls-files", "-z", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// TestNoRuleIsCopiedOutsideTheContract scans the tree for every contract
// string of MinLen bytes or more; comments of Go and Nix sources are not
// scanned (StripComments), nor are the excluded files and the generated
// blocks. A copy anywhere else fails, unless an allowed entry gives the
// reason it stands there.
func TestNoRuleIsCopiedOutsideTheContract(t *testing.T) {
	probes, err := Probes(contract.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if len(probes) < 40 {
		t.Fatalf("only %d probes: the contract's strings are not all read", len(probes))
	}
	used := map[string]bool{}
	var scanned int
file:
	for _, f := range files(t) {
		for _, g := range excluded {
			if match(g, f) {
				continue file
			}
		}
		data, err := os.ReadFile(filepath.Join(module.Root(), f))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted, not yet committed
			}
			t.Fatal(err)
		}
		scanned++
		text := generated.ReplaceAllFunc(StripComments(f, data), func(b []byte) []byte {
			return []byte(strings.Repeat("\n", strings.Count(string(b), "\n")))
		})
		hits := Scan(f, text, probes)
		if len(hits) == 0 {
			continue
		}
		for _, a := range allowed {
			if match(a.glob, f) {
				used[a.glob] = true
				continue file
			}
		}
		for _, h := range hits {
			t.Errorf("%s: a copy of the contract's %s; use the contract (Go: package contract; Nix: the lib's contract)", h, h.Key)
		}
	}
	if scanned < 100 {
		t.Fatalf("scanned only %d files", scanned)
	}
	t.Logf("scanned %d files for %d contract strings", scanned, len(probes))
	for _, a := range allowed {
		if !used[a.glob] {
			t.Errorf("allowed %q holds no copy any more: remove it from the list", a.glob)
		}
	}
}
