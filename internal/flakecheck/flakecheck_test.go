package flakecheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/golden"
	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/nixtest"
	"github.com/agent-box/agent-box/internal/scenarios"
)

// The nixos-26.05 pin: the revision, NAR hash and time of the nixos-26.05
// branch the flake is tested against.
const (
	nixosRev          = "b18a4b905f8d028dc4476412e6d6891728695379"
	nixosNarHash      = "sha256-gwrPcFf/rDjHPaVflbDZ040ZDmBTRj/7+s8ZmE2SaIM="
	nixosLastModified = 1787101114
)

var systems = []string{"aarch64-linux", "x86_64-linux"}

// Checks every system has, whether or not it can run VMs.
var plainChecks = []string{"assertions", "go-tests", "golden", "module-generated-up-to-date", "module-single-file"}

func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(module.Root())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// evalJSON evaluates a Nix expression (with %q-quoted absolute paths
// already substituted) and decodes its JSON value.
func evalJSON(t *testing.T, expr string, out any) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "eval.nix")
	if err := os.WriteFile(file, []byte(expr), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := nixtest.EvalJSON(t, file, out); err != nil {
		t.Fatal(err)
	}
}

func phases(t *testing.T) []scenarios.Phase {
	t.Helper()
	ps, err := scenarios.Phases(root(t))
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// requirements are the nixpkgs attributes of tests/scenarios/requirements.
func requirements(t *testing.T) []string {
	t.Helper()
	reqs, err := scenarios.Requirements(root(t))
	if err != nil {
		t.Fatal(err)
	}
	var attrs []string
	for _, r := range reqs {
		attrs = append(attrs, r.Nixpkgs)
	}
	return attrs
}

func goldenDirs(t *testing.T) []string {
	t.Helper()
	cfgs, err := golden.Configs(root(t))
	if err != nil {
		t.Fatal(err)
	}
	return cfgs
}

// flake.lock must pin exactly the nixos-26.05 revision of the notes: the
// flake's checks rely on behaviour of that release (switch-to-configuration
// stopping removed template instances, pkgs.nixfmt, env.CGO_ENABLED).
func TestFlakeLockPinsNixos2605(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root(t), "flake.lock"))
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Version int    `json:"version"`
		Root    string `json:"root"`
		Nodes   map[string]struct {
			Inputs   map[string]string `json:"inputs"`
			Locked   map[string]any    `json:"locked"`
			Original map[string]any    `json:"original"`
		} `json:"nodes"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&lock); err != nil {
		t.Fatalf("flake.lock is not a valid lock file: %v", err)
	}
	if lock.Version != 7 || lock.Root != "root" {
		t.Errorf("flake.lock version %d root %q, want version 7 root \"root\"", lock.Version, lock.Root)
	}
	if got := lock.Nodes[lock.Root].Inputs; !reflect.DeepEqual(got, map[string]string{"nixpkgs": "nixpkgs"}) {
		t.Errorf("root inputs = %v, want exactly nixpkgs", got)
	}
	if len(lock.Nodes) != 2 {
		t.Errorf("flake.lock has %d nodes, want root and nixpkgs", len(lock.Nodes))
	}
	n := lock.Nodes["nixpkgs"]
	want := map[string]any{
		"type":         "github",
		"owner":        "NixOS",
		"repo":         "nixpkgs",
		"rev":          nixosRev,
		"narHash":      nixosNarHash,
		"lastModified": float64(nixosLastModified),
	}
	if !reflect.DeepEqual(n.Locked, want) {
		t.Errorf("nixpkgs locked = %v\nwant %v", n.Locked, want)
	}
	if n.Original["ref"] != "nixos-26.05" || n.Original["owner"] != "NixOS" || n.Original["repo"] != "nixpkgs" {
		t.Errorf("nixpkgs original = %v, want github:NixOS/nixpkgs/nixos-26.05", n.Original)
	}
}

// nix/goldens.nix (the flake's list of golden configurations) reads the
// same directory listing as the Go tests, so no fixture goes unchecked
// against the real NixOS build.
func TestFlakeGoldenListIsTheGoldenDirectories(t *testing.T) {
	var listed []string
	evalJSON(t, fmt.Sprintf("import %q\n", filepath.Join(root(t), "nix", "goldens.nix")), &listed)
	sort.Strings(listed)
	if dirs := goldenDirs(t); !slices.Equal(listed, dirs) {
		t.Errorf("nix/goldens.nix lists %v, tests/golden has %v", listed, dirs)
	}
}

// nix/scenarios.nix (what the flake's VM tests run) reads the phases and
// requirements (and the demo logins) exactly as this independent reader does; every phase has
// its script and boots a golden configuration the flake knows.
func TestScenarioReaderMatchesPhasesAndRequirements(t *testing.T) {
	r := root(t)
	var got struct {
		Phases       []scenarios.Phase             `json:"phases"`
		Tests        map[string][]scenarios.Phase  `json:"tests"`
		Requirements []string                      `json:"requirements"`
		DemoLogins   []struct{ Name, Hash string } `json:"demoLogins"`
		DemoHooks    []scenarios.HookSecret        `json:"demoHooks"`
	}
	evalJSON(t, fmt.Sprintf("import %q %q\n", filepath.Join(r, "nix", "scenarios.nix"), filepath.Join(r, "tests", "scenarios")), &got)

	ps := phases(t)
	if !reflect.DeepEqual(got.Phases, ps) {
		t.Errorf("nix/scenarios.nix phases = %+v\nwant %+v", got.Phases, ps)
	}
	if !reflect.DeepEqual(got.Tests, scenarios.Tests(ps)) {
		t.Errorf("nix/scenarios.nix tests = %+v\nwant %+v", got.Tests, scenarios.Tests(ps))
	}
	if reqs := requirements(t); !slices.Equal(got.Requirements, reqs) {
		t.Errorf("nix/scenarios.nix requirements = %v, want %v", got.Requirements, reqs)
	}

	logins, err := scenarios.DemoLogins(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.DemoLogins) != len(logins) {
		t.Errorf("nix/scenarios.nix demoLogins = %v, want %v", got.DemoLogins, logins)
	}
	for i := range min(len(got.DemoLogins), len(logins)) {
		if g, w := got.DemoLogins[i], logins[i]; g.Name != w.Name || g.Hash != w.Hash {
			t.Errorf("nix/scenarios.nix demoLogins[%d] = %v, want %s %s", i, g, w.Name, w.Hash)
		}
	}

	hooks, err := scenarios.DemoHooks(r)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.DemoHooks, hooks) {
		t.Errorf("nix/scenarios.nix demoHooks = %v, want %v", got.DemoHooks, hooks)
	}

	dirs := goldenDirs(t)
	for name, ps := range scenarios.Tests(ps) {
		for _, p := range ps {
			if !slices.Contains(dirs, p.Config) {
				t.Errorf("phase %s boots golden %q, which tests/golden lacks", p.Name, p.Config)
			}
			if p.Config != ps[0].Config {
				t.Errorf("VM test %s mixes golden configurations %s and %s; one VM boots one", name, ps[0].Config, p.Config)
			}
			if _, err := os.Stat(filepath.Join(r, "tests", "scenarios", p.Name+".sh")); err != nil {
				t.Errorf("phase %s has no script: %v", p.Name, err)
			}
		}
	}
}

// flakeOutputs evaluates flake.nix's outputs against the stand-in nixpkgs
// and returns a JSON summary of them.
type flakeSummary struct {
	Checks       map[string][]string          `json:"checks"`
	Packages     map[string][]string          `json:"packages"`
	Apps         map[string]map[string]string `json:"apps"`
	Formatter    map[string]string            `json:"formatter"`
	DevShells    map[string][]string          `json:"devShells"`
	Modules      map[string]string            `json:"modules"`
	VendorHashes map[string]string            `json:"vendorHashes"`
	SubPackages  []string                     `json:"subPackages"`
	GoldenScript string                       `json:"goldenScript"`
	VMTests      map[string]struct {
		Name       string `json:"name"`
		TestScript string `json:"testScript"`
	} `json:"vmTests"`
}

func flakeOutputs(t *testing.T) flakeSummary {
	t.Helper()
	r := root(t)
	expr := fmt.Sprintf(`let
  flake = import %q;
  self = { outPath = %q; } // outputs;
  outputs = flake.outputs { inherit self; nixpkgs = import %q; };
  names = builtins.mapAttrs (_: builtins.attrNames);
  x86 = outputs.checks.x86_64-linux;
in
{
  checks = names outputs.checks;
  packages = names outputs.packages;
  devShells = names outputs.devShells;
  apps = builtins.mapAttrs (_: builtins.mapAttrs (_: a: "${a.type} ${a.program}")) outputs.apps;
  formatter = builtins.mapAttrs (_: f: f.name) outputs.formatter;
  modules = builtins.mapAttrs (_: toString) outputs.nixosModules;
  vendorHashes = {
    assemble-module = outputs.packages.x86_64-linux.assemble-module.vendorHash;
    go-tests = x86.go-tests.vendorHash;
  };
  subPackages = outputs.packages.x86_64-linux.assemble-module.subPackages;
  goldenScript = x86.golden.script;
  vmTests = builtins.mapAttrs (_: v: { inherit (v) name testScript; }) (
    removeAttrs x86 [ %s ]
  );
}
`, filepath.Join(r, "flake.nix"), r, filepath.Join(r, "internal", "flakecheck", "testdata", "stub-nixpkgs.nix"),
		`"`+strings.Join(plainChecks, `" "`)+`"`)
	var s flakeSummary
	evalJSON(t, expr, &s)
	return s
}

// The flake's outputs evaluate (against a stand-in nixpkgs) on both systems,
// with exactly the documented checks: the plain ones everywhere, and on
// x86_64-linux one VM test per group of scenario phases plus vm-switch.
func TestFlakeOutputsHaveTheDocumentedChecks(t *testing.T) {
	s := flakeOutputs(t)
	tests := scenarios.Tests(phases(t))
	var vms []string
	for name := range tests {
		vms = append(vms, "vm-"+name)
	}
	vms = append(vms, "vm-switch")
	for _, sys := range systems {
		want := slices.Clone(plainChecks)
		if sys == "x86_64-linux" {
			want = append(want, vms...)
		}
		sort.Strings(want)
		if got := s.Checks[sys]; !slices.Equal(got, want) {
			t.Errorf("checks.%s = %v\nwant %v", sys, got, want)
		}
		if got := s.Packages[sys]; !slices.Equal(got, []string{"assemble-module", "default"}) {
			t.Errorf("packages.%s = %v", sys, got)
		}
		if got := s.DevShells[sys]; !slices.Equal(got, []string{"default"}) {
			t.Errorf("devShells.%s = %v", sys, got)
		}
		if got := s.Formatter[sys]; got != "nixfmt" {
			t.Errorf("formatter.%s = %q, want pkgs.nixfmt (nixfmt-rfc-style is a deprecated alias on 26.05)", sys, got)
		}
		apps := s.Apps[sys]
		if len(apps) != 2 || !strings.HasSuffix(apps["assemble"], "/bin/assemble-module") || !strings.HasPrefix(apps["update-golden"], "app ") {
			t.Errorf("apps.%s = %v, want assemble (the assemble-module binary) and update-golden", sys, apps)
		}
	}
	if len(s.Checks) != len(systems) {
		t.Errorf("checks cover %d systems, want %v", len(s.Checks), systems)
	}
	if s.VendorHashes["assemble-module"] != s.VendorHashes["go-tests"] {
		t.Errorf("assemble-module and go-tests vendor differently: %v", s.VendorHashes)
	}
	if !slices.Equal(s.SubPackages, []string{"cmd/assemble-module"}) {
		t.Errorf("assemble-module subPackages = %v", s.SubPackages)
	}
	for _, cfg := range goldenDirs(t) {
		if !strings.Contains(s.GoldenScript, "echo \"golden: "+cfg+"\"") {
			t.Errorf("the golden check does not compare configuration %s", cfg)
		}
	}
	for name, ps := range tests {
		vm, ok := s.VMTests["vm-"+name]
		if !ok {
			continue // reported above
		}
		for _, p := range ps {
			want := fmt.Sprintf("(%q, %s),", p.Name, map[bool]string{true: "True", false: "False"}[p.Crash])
			if !strings.Contains(vm.TestScript, want) {
				t.Errorf("vm-%s does not run phase %s as %s", name, p.Name, want)
			}
		}
	}
}

// Both module outputs are the committed single file itself.
func TestFlakeModulesAreTheSingleFile(t *testing.T) {
	s := flakeOutputs(t)
	want, err := os.ReadFile(filepath.Join(root(t), module.Output))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"default", "agent-box"} {
		p, ok := s.Modules[name]
		if !ok {
			t.Errorf("nixosModules.%s is missing", name)
			continue
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("nixosModules.%s: %v", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("nixosModules.%s (%s) is not %s", name, p, module.Output)
		}
	}
	if len(s.Modules) != 2 {
		t.Errorf("nixosModules = %v, want default and agent-box", s.Modules)
	}
}

// The `assertions` check expects exactly the messages the module produces:
// the lib's (through the offline evaluation of the generated module's own
// declarations and lib) plus the glue's home check, whose wording is the
// lib's homeMessage.
func TestAssertionCasesExpectTheModulesMessages(t *testing.T) {
	r := root(t)
	offline := module.Assemble(t).Offline(t)
	var cases []struct {
		Name     string   `json:"name"`
		Expected []string `json:"expected"`
		Offline  []string `json:"offline"`
	}
	evalJSON(t, fmt.Sprintf(`let
  o = import %q;
  cases = import %q { mkForce = v: { _type = "override"; priority = 50; content = v; }; };
in
map (c: {
  inherit (c) name expected;
  offline =
    o.failures ({ enable = true; } // c.config.services.agent-box or { })
    ++ (
      if c.config ? users.users.alice.home then
        [ (o.lib.homeMessage "alice" c.config.users.users.alice.home.content) ]
      else
        [ ]
    );
}) cases
`, offline, filepath.Join(r, "nix", "assertion-cases.nix")), &cases)
	if len(cases) == 0 {
		t.Fatal("nix/assertion-cases.nix has no case")
	}
	for _, c := range cases {
		if len(c.Offline) == 0 {
			t.Errorf("case %q: the module reports nothing for it; it tests no assertion", c.Name)
		}
		if !slices.Equal(c.Expected, c.Offline) {
			t.Errorf("case %q expects %q\nthe module says %q", c.Name, c.Expected, c.Offline)
		}
	}
}

// vendorHash in flake.nix is the NAR hash of what `go mod vendor` writes
// for the current sources, computed as buildGoModule's goModules derivation
// does. It needs the Go module cache (make deps fills it) or the proxy.
func TestVendorHashMatchesGoModVendor(t *testing.T) {
	r := root(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is required: %v", err)
	}
	src := t.TempDir()
	err = filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r, p)
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "vendor" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !(strings.HasSuffix(rel, ".go") || rel == "go.mod" || rel == "go.sum") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(src, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "mod", "vendor")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod vendor: %v\n%s\nhint: run 'make deps' (go mod download)", err, out)
	}
	hash := exec.Command(nixtest.Command(t), "--extra-experimental-features", "nix-command", "hash", "path", "vendor")
	hash.Dir = src
	out, err := hash.Output()
	if err != nil {
		t.Fatalf("nix hash path vendor: %v", err)
	}
	got := strings.TrimSpace(string(out))
	s := flakeOutputs(t)
	if want := s.VendorHashes["assemble-module"]; got != want {
		t.Errorf("flake.nix vendorHash = %s, but go mod vendor hashes to %s\nhint: set vendorHash = %q in flake.nix", want, got, got)
	}
}

// The VM nodes, evaluated with stand-in packages (tests/golden/stub-pkgs.nix
// plus one per requirement): each scenario node imports the single-file
// module, sets services.agent-box to exactly its phases' golden
// configuration, installs exactly the requirements and carries the scenario
// scripts; the vm-switch node's specialisation replaces alice and bob by bob
// and carol.
func TestVMNodesBootTheGoldenConfigurationWithTheRequirements(t *testing.T) {
	r := root(t)
	var got struct {
		Scenario map[string]struct {
			Imports   []string          `json:"imports"`
			AgentBox  string            `json:"agentBox"`
			Golden    map[string]string `json:"golden"`
			Packages  []string          `json:"packages"`
			Scenarios string            `json:"scenarios"`
		} `json:"scenario"`
		SwitchBase    []string `json:"switchBase"`
		SwitchSpec    []string `json:"switchSpec"`
		LifecycleNext string   `json:"lifecycleNext"`
	}
	evalJSON(t, fmt.Sprintf(`let
  stub = import %[3]q;
  flake = import %[1]q;
  self = { outPath = %[2]q; } // outputs;
  outputs = flake.outputs { inherit self; nixpkgs = stub; };
  x86 = outputs.checks.x86_64-linux;
  scenarios = import %[4]q %[5]q;
  pkg = name: { type = "derivation"; inherit name; outPath = "/nix/store/00000000000000000000000000000000-${name}"; };
  pkgs = import %[6]q // builtins.listToAttrs (map (a: { name = a; value = pkg a; }) scenarios.requirements);
  vms = removeAttrs x86 [ %[7]s "vm-switch" ];
  # the nodes' option values are never read here (only the specialisations
  # use them, and they are not forced but for the lifecycle's environment)
  options = { };
  switch = x86.vm-switch.nodes.machine { inherit (stub) lib; inherit options; };
  node = vm: vm.nodes.machine { inherit pkgs options; };
in
{
  scenario = builtins.mapAttrs (
    name: vm:
    let
      node = vm.nodes.machine { inherit pkgs options; };
    in
    {
      imports = map toString node.imports;
      agentBox = builtins.toJSON node.services.agent-box;
      golden = builtins.listToAttrs (map (g: {
        name = g;
        value = builtins.toJSON (import (%[8]q + "/${g}/config.nix") { inherit pkgs; });
      }) (import %[9]q));
      packages = map (p: p.name) node.environment.systemPackages;
      scenarios = toString node.environment.etc."agent-box-test/scenarios".source;
    }
  ) vms;
  switchBase = builtins.attrNames switch.services.agent-box.users;
  switchSpec = builtins.attrNames switch.specialisation.changed.configuration.services.agent-box.users.content;
  lifecycleNext = (node x86.vm-lifecycle).specialisation.next.configuration.services.agent-box.users.alice.environment.LIFECYCLE;
}
`, filepath.Join(r, "flake.nix"), r, filepath.Join(r, "internal", "flakecheck", "testdata", "stub-nixpkgs.nix"),
		filepath.Join(r, "nix", "scenarios.nix"), filepath.Join(r, "tests", "scenarios"),
		filepath.Join(r, "tests", "golden", "stub-pkgs.nix"), `"`+strings.Join(plainChecks, `" "`)+`"`,
		filepath.Join(r, "tests", "golden"), filepath.Join(r, "nix", "goldens.nix")), &got)

	reqs := requirements(t)
	for name, ps := range scenarios.Tests(phases(t)) {
		n, ok := got.Scenario["vm-"+name]
		if !ok {
			t.Errorf("no VM test vm-%s", name)
			continue
		}
		if !slices.Equal(n.Imports, []string{filepath.Join(r, module.Output)}) {
			t.Errorf("vm-%s node imports %v, want only %s", name, n.Imports, module.Output)
		}
		if n.AgentBox != n.Golden[ps[0].Config] {
			t.Errorf("vm-%s node's services.agent-box is not tests/golden/%s/config.nix:\n%s", name, ps[0].Config, n.AgentBox)
		}
		if !slices.Equal(n.Packages, reqs) {
			t.Errorf("vm-%s node installs %v, want the requirements %v", name, n.Packages, reqs)
		}
		if n.Scenarios != filepath.Join(r, "tests", "scenarios") {
			t.Errorf("vm-%s node carries %s as the scenario scripts", name, n.Scenarios)
		}
	}
	if n := len(scenarios.Tests(phases(t))); len(got.Scenario) != n {
		t.Errorf("scenario VM tests %d, phase groups %d", len(got.Scenario), n)
	}
	if got.LifecycleNext != "new" {
		t.Errorf("vm-lifecycle's specialisation next sets alice's LIFECYCLE to %q, want new (lifecycle.sh checks it)", got.LifecycleNext)
	}
	if !slices.Equal(got.SwitchBase, []string{"alice", "bob"}) || !slices.Equal(got.SwitchSpec, []string{"bob", "carol"}) {
		t.Errorf("vm-switch users: base %v, specialisation %v; want [alice bob] then [bob carol]", got.SwitchBase, got.SwitchSpec)
	}
}

// TestBothReadersOfThePhasesFileAgree: one table of phases lines, read by
// internal/scenarios (the offline tier) and nix/scenarios.nix (the flake's
// VM tests); each accepts the same lines with the same flags and rejects
// the same lines.
func TestBothReadersOfThePhasesFileAgree(t *testing.T) {
	r := root(t)
	for _, c := range []struct {
		line string
		want *scenarios.Phase // nil: rejected
	}{
		{"a web", &scenarios.Phase{Name: "a", Config: "web"}},
		{"a web crash", &scenarios.Phase{Name: "a", Config: "web", Crash: true}},
		{"a", nil},
		{"a web crash crash", nil},
		{"a web alone", nil},
		{"a web fast", nil},
		{"a web crash fast", nil},
	} {
		t.Run(c.line, func(t *testing.T) {
			dir := t.TempDir()
			sd := filepath.Join(dir, scenarios.Dir)
			if err := os.MkdirAll(sd, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sd, "phases"), []byte(c.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			goPhases, goErr := scenarios.Phases(dir)
			file := filepath.Join(t.TempDir(), "eval.nix")
			expr := fmt.Sprintf("builtins.toJSON (import %q %q).phases\n", filepath.Join(r, "nix", "scenarios.nix"), sd)
			if err := os.WriteFile(file, []byte(expr), 0o644); err != nil {
				t.Fatal(err)
			}
			if c.want == nil {
				if goErr == nil || !strings.Contains(goErr.Error(), "want 'PHASE GOLDEN-CONFIG [crash]'") {
					t.Errorf("Go: %v, want the line rejected", goErr)
				}
				msg, err := nixtest.EvalFails(t, file)
				if err != nil || !strings.Contains(msg, "bad line '"+c.line+"' (want PHASE GOLDEN-CONFIG [crash])") {
					t.Errorf("Nix: %v\n%s\nwant the line rejected", err, msg)
				}
				return
			}
			if goErr != nil || len(goPhases) != 1 || goPhases[0] != *c.want {
				t.Errorf("Go: %+v, %v; want %+v", goPhases, goErr, *c.want)
			}
			out, err := nixtest.EvalFileRaw(t, file)
			var nixPhases []scenarios.Phase
			if err != nil || json.Unmarshal(out, &nixPhases) != nil {
				t.Fatalf("Nix: %v\n%s", err, out)
			}
			if len(nixPhases) != 1 || nixPhases[0] != *c.want {
				t.Errorf("Nix: %+v; want %+v", nixPhases, *c.want)
			}
		})
	}
}
