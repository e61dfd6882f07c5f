// Package recipes proves the README's recipes as they are written: "Add an agent", followed literally, adds a toy agent.
package recipes

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/nixtest"
	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/agentsetup"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/spawn"
)

// copyTree copies the files under src/rel to dst/rel.
func copyTree(t *testing.T, src, dst, rel string) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join(src, rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, r), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, r), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// edit replaces old (once) by new in root/rel.
func edit(t *testing.T, root, rel, old, new string) {
	t.Helper()
	p := filepath.Join(root, rel)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(data), old) != 1 {
		t.Fatalf("%s: the recipe's anchor %q is not there once: the README's recipe is out of date", rel, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// toyNix is the toy agent's one Nix file: its profile and one host-wide
// file, as modules/src/lib/agents/<agent>.nix is written.
const toyNix = `# Toy, an agent for the recipe's test.
{ contract, ... }:
let
  inherit (contract.conversations) idPlaceholder promptPlaceholder;
in
{
  profile = {
    packageAttr = "bashInteractive";
    command = "toy";
    args = [ ];
    resumeArgs = [ "--continue=${idPlaceholder}" ];
    newArgs = [ ];
    promptArgs = [ "--say=${promptPlaceholder}" ];
    setup = "toy";
  };

  files = runtime: guide: {
    "toy/config.json" = builtins.toJSON {
      hook = "${runtime} agent-hook toy session-start";
      inherit guide;
    };
  };
}
`

// TestTheAddAnAgentRecipeAddsAToyAgent follows "Add an agent" in a copy
// of the sources: the Nix side (the agent's file, its include line, its
// setup in the contract) makes a configuration with the toy evaluate, its
// profile reach the user's agents table and its host-wide file get
// installed; the Go side (its Setup, registered) is what a spawn of it
// calls. It counts the files the recipe touched.
func TestTheAddAnAgentRecipeAddsAToyAgent(t *testing.T) {
	root := module.Root()
	tmp := t.TempDir()
	for _, rel := range []string{"modules/src", "cmd/agent-box", "cmd/agent-box-exec", "internal/runtime"} {
		copyTree(t, root, tmp, rel)
	}
	touched := map[string]bool{}
	// 1. the agent's file
	if err := os.WriteFile(filepath.Join(tmp, "modules/src/lib/agents/toy.nix"), []byte(toyNix), 0o644); err != nil {
		t.Fatal(err)
	}
	touched["modules/src/lib/agents/toy.nix"] = true
	// 2. its include line in default.nix's agentDefs
	edit(t, tmp, "modules/src/lib/default.nix", "      opencode =\n        @@include:agents/opencode.nix@@\n        ;\n",
		"      opencode =\n        @@include:agents/opencode.nix@@\n        ;\n      toy =\n        @@include:agents/toy.nix@@\n        ;\n")
	touched["modules/src/lib/default.nix"] = true
	// 3. its setup in the contract
	edit(t, tmp, "internal/runtime/contract/contract.json", `"setups": ["claude", "codex", "opencode"]`, `"setups": ["claude", "codex", "opencode", "toy"]`)
	touched["internal/runtime/contract/contract.json"] = true
	// 4. its Setup: internal/runtime/agentsetup/toy.go (registered below,
	// in this test binary); 5. its section of docs/runtime-contract.md.
	touched["internal/runtime/agentsetup/toy.go"] = true
	touched["docs/runtime-contract.md"] = true
	if len(touched) > 5 {
		t.Errorf("the recipe touches %d files, more than 5: %v", len(touched), touched)
	}

	m := module.AssembleFrom(t, tmp)
	offline := m.Offline(t)
	expr := fmt.Sprintf(`let
  o = import %q;
  config = {
    enable = true;
    users.alice.sessions.main = { agent = "toy"; prompt = "hello"; };
  };
  installed = o.installed config;
in
{
  failures = o.failures config;
  toy = installed.files."etc/toy/config.json" or null;
  table = builtins.filter (p: builtins.match ".*agent-box-agents-alice.json" p != null) (builtins.attrNames installed.files);
  files = installed.files;
}
`, offline)
	file := filepath.Join(t.TempDir(), "toy.nix")
	if err := os.WriteFile(file, []byte(expr), 0o644); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Failures []string          `json:"failures"`
		Toy      *string           `json:"toy"`
		Table    []string          `json:"table"`
		Files    map[string]string `json:"files"`
	}
	if err := nixtest.EvalJSON(t, file, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Failures) > 0 {
		t.Errorf("a configuration with the toy fails its assertions: %q", out.Failures)
	}
	if out.Toy == nil || !strings.Contains(*out.Toy, "agent-hook toy session-start") {
		t.Errorf("the toy's host-wide file is not installed as its file renders it: %v", out.Toy)
	}
	if len(out.Table) != 1 {
		t.Fatalf("alice's agents table: %q", out.Table)
	}
	var table map[string]agents.Agent
	if err := json.Unmarshal([]byte(out.Files[out.Table[0]]), &table); err != nil {
		t.Fatalf("alice's agents table: %v", err)
	}
	toy, ok := table["toy"]
	if !ok || !strings.HasSuffix(toy.Command, "/toy") || toy.Setup != "toy" || !slices.Equal(toy.PromptArgs, []string{"--say={prompt}"}) {
		t.Fatalf("alice's agents table has the toy as %+v (ok %v)", toy, ok)
	}

	// The Go side: the toy's Setup is what its spawn runs.
	agentsetup.Register("toy", toySetup{})
	home := t.TempDir()
	e := paths.Env{Home: home, ConfigDir: filepath.Join(home, ".config/agent-box")}
	plan := spawn.Plan{Argv: []string{toy.Command}}
	if err := os.MkdirAll(e.ConversationsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	logs := spawn.Converse(context.Background(), e, toy, "main", &plan, time.Now())
	if !slices.Contains(plan.Argv, "--toy-ready") || !slices.Contains(plan.Env, "TOY_HOME="+home) {
		t.Errorf("the toy's Prepare did not shape the spawn: argv %q env %q (logs %q)", plan.Argv, plan.Env, logs)
	}
}

// toySetup is internal/runtime/agentsetup/toy.go of the recipe.
type toySetup struct{}

func (toySetup) Prepare(_ context.Context, s *agentsetup.Spawn) (string, []string) {
	s.Argv = append(s.Argv, "--toy-ready")
	s.Env = append(s.Env, "TOY_HOME="+s.Home)
	return "", []string{"toy prepared"}
}

func (toySetup) Gone(_ context.Context, id, path string, _ func(string, ...any)) string {
	return ""
}
