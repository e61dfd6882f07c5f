package repocheck

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// runtimeImports is every import between the runtime's packages that is
// allowed: package -> the runtime packages its non-test files import. A new
// edge fails the test until it is added here, so an upward import (a
// library importing the supervisor, the CLI or the web daemon) is a
// visible decision. The leaves own their rules: contract (the shared
// rules), escape, userfile, atomicfile, sdlisten, seal, tmux, badconfig
// (a configuration refused), httpserve (the one server set-up), journal
// (the one log line shape, over escape).
var runtimeImports = map[string][]string{
	"actions":       {"agents", "control", "conversation", "envfile", "escape", "paths", "registry", "state"},
	"agents":        {"contract", "escape", "userfile"},
	"atomicfile":    {"userfile"},
	"attention":     {"contract", "escape"},
	"badconfig":     {},
	"approval":      {"contract"},
	"auth":          {"approval", "atomicfile", "attention", "badconfig", "board", "clientaddr", "contract", "escape", "httpserve", "journal", "loginlimit", "notify", "pending", "pwhash", "userfile", "webui"},
	"agentsetup":    {"claudestate", "contract", "conversation", "escape", "opencodestate", "usagelimit", "userfile"},
	"pwhash":        {},
	"loginlimit":    {},
	"board":         {"attention", "contract"},
	"claudestate":   {"contract", "escape"},
	"opencodestate": {"conversation"},
	"apprun":        {"filewatch"},
	"appctl":        {"contract"},
	"cli":           {"actions", "agents", "agentsetup", "appctl", "apprun", "approval", "attention", "auth", "badconfig", "contract", "control", "conversation", "diskquota", "envfile", "escape", "journal", "notify", "paths", "pwhash", "registry", "sdlisten", "seal", "sessionsrv", "sessionstate", "spawn", "state", "supervisor", "tmux", "uploads", "web"},
	"clientaddr":    {"contract"},
	"contract":      {},
	"diskquota":     {"contract", "escape"},
	"usagelimit":    {},
	"control":       {"attention", "registry"},
	"envfile":       {"atomicfile", "escape", "userfile"},
	"escape":        {},
	"filewatch":     {},
	"httpserve":     {},
	"conversation":  {"atomicfile", "contract", "escape", "paths", "userfile"},
	"journal":       {"escape"},
	"hooks":         {"badconfig", "clientaddr", "contract", "escape", "httpserve", "journal", "registry"},
	"notify":        {"approval", "attention", "badconfig", "contract", "journal", "userfile"},
	"pending":       {"approval", "atomicfile", "contract", "userfile"},
	"observe":       {"atomicfile", "attention", "userfile"},
	"oomkills":      {"userfile"},
	"peer":          {"escape"},
	"paths":         {"contract", "envfile", "escape"},
	"registry":      {"atomicfile", "contract", "escape", "userfile"},
	"sdlisten":      {},
	"seal":          {},
	"sessionsrv":    {"atomicfile", "contract", "paths", "peer", "tmux", "userfile"},
	"sessionstate":  {"attention", "conversation", "observe", "paths", "registry", "sessionsrv", "state", "tmux"},
	"spawn":         {"agents", "agentsetup", "atomicfile", "contract", "conversation", "envfile", "escape", "journal", "paths", "registry", "userfile"},
	"state":         {"agents", "atomicfile", "escape", "userfile"},
	"supervisor":    {"agents", "agentsetup", "approval", "atomicfile", "attention", "contract", "control", "conversation", "escape", "filewatch", "journal", "observe", "oomkills", "paths", "registry", "sessionsrv", "spawn", "state", "tmux", "usagelimit", "userfile"},
	"tmux":          {"contract"},
	"uploads":       {"contract"},
	"userfile":      {},
	"webui":         {"contract"},
	"web":           {"actions", "agents", "appctl", "badconfig", "contract", "envfile", "escape", "hooks", "httpserve", "journal", "paths", "peer", "registry", "sessionsrv", "sessionstate", "uploads", "webui"},
}

// TestRuntimeImportsAreTheAllowedOnes reads the imports of every runtime
// package's non-test files and compares them with runtimeImports, both
// ways: an edge the table lacks fails, and so does one the code no longer
// has (the table stays exact).
func TestRuntimeImportsAreTheAllowedOnes(t *testing.T) {
	const prefix = "github.com/agent-box/agent-box/internal/runtime/"
	dir := filepath.Join(root, "internal", "runtime")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		pkg := e.Name()
		seen[pkg] = true
		files, err := filepath.Glob(filepath.Join(dir, pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range af.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				if dep, ok := strings.CutPrefix(p, prefix); ok {
					got[dep] = true
				}
			}
		}
		allowed, known := runtimeImports[pkg]
		if !known {
			t.Errorf("internal/runtime/%s is not in runtimeImports: add it with the runtime packages it imports", pkg)
			continue
		}
		for dep := range got {
			if !slices.Contains(allowed, dep) {
				t.Errorf("internal/runtime/%s imports %s, which runtimeImports does not allow: is that the right direction? If so, add the edge", pkg, dep)
			}
		}
		for _, dep := range allowed {
			if !got[dep] {
				t.Errorf("internal/runtime/%s no longer imports %s: remove the edge from runtimeImports", pkg, dep)
			}
		}
	}
	for pkg := range runtimeImports {
		if !seen[pkg] {
			t.Errorf("runtimeImports names %s, which is not a package under internal/runtime", pkg)
		}
	}
}

// TestTheSpawnProgramLinksNoServer: what tmux runs in every pane
// (cmd/agent-box-exec) is built from the spawn path alone, so that its
// start, most of what a respawn adds to tmux's own, stays small: no HTTP
// server or client, no TLS, no HTML templates in its dependencies.
func TestTheSpawnProgramLinksNoServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-C", root, "-deps", "./cmd/agent-box-exec").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/agent-box/agent-box/internal/runtime/spawn") {
		t.Fatalf("cmd/agent-box-exec does not build the spawn path: %q", deps)
	}
	for _, bad := range []string{"net/http", "crypto/tls", "html/template", "github.com/agent-box/agent-box/internal/runtime/hooks"} {
		if slices.Contains(deps, bad) {
			t.Errorf("cmd/agent-box-exec depends on %s", bad)
		}
	}
}
