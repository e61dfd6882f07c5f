// Package embeddedruntime proves that the runtime source the module embeds
// is exactly the repository's non-test runtime source, and that it builds
// the way buildGoModule builds it: standard library only, no vendor/, no
// module cache.
package embeddedruntime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/nixtest"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/google/go-cmp/cmp"
)

// runtimeDirs are the runtime source directories the module embeds: the
// programs it builds (its subPackages) and their packages.
var runtimeDirs = []string{"cmd/agent-box", "cmd/" + contract.Programs.Spawn.Name, "internal/runtime"}

// embeddedRuntime evaluates the module's embedded runtime source with real
// Nix: relative path -> bytes, as buildGoModule will see it.
func embeddedRuntime(t *testing.T, m *module.Module) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	files := map[string][]byte{}
	for i, d := range runtimeDirs {
		set := m.WriteInclude(t, d+"/", dir, fmt.Sprintf("set%d.nix", i))
		namesFile := filepath.Join(dir, fmt.Sprintf("names%d.nix", i))
		if err := os.WriteFile(namesFile, []byte(fmt.Sprintf("builtins.attrNames (import %q)\n", set)), 0o644); err != nil {
			t.Fatal(err)
		}
		var names []string
		if err := nixtest.EvalJSON(t, namesFile, &names); err != nil {
			t.Fatal(err)
		}
		exprs := make([]string, len(names))
		for j, n := range names {
			exprs[j] = fmt.Sprintf("(import %q).%q", set, n)
		}
		values, err := nixtest.EvalStrings(t, exprs)
		if err != nil {
			t.Fatal(err)
		}
		for j, n := range names {
			files[d+"/"+n] = values[j]
		}
	}
	lib := m.WriteInclude(t, "modules/src/lib/default.nix", dir, "lib.nix")
	gomod, err := nixtest.EvalStrings(t, []string{fmt.Sprintf("(import %q).runtimeGoMod", lib)})
	if err != nil {
		t.Fatal(err)
	}
	files["go.mod"] = gomod[0]
	return files
}

// TestEmbeddedRuntimeIsExactlyTheNonTestSources compares the embedded file
// set with the repository, independently of the assembler: every non-test
// file of the runtime directories (Go files and what they embed; hidden
// files such as .assemble-ignore are the assembler's), byte for byte, and
// nothing else.
func TestEmbeddedRuntimeIsExactlyTheNonTestSources(t *testing.T) {
	m := module.Assemble(t)
	got := embeddedRuntime(t, m)
	want := map[string][]byte{}
	for _, d := range runtimeDirs {
		err := filepath.WalkDir(filepath.Join(module.Root(), d), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() && e.Name() == "testdata" {
				return filepath.SkipDir
			}
			if e.IsDir() || strings.HasSuffix(p, "_test.go") || strings.HasPrefix(e.Name(), ".") {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(module.Root(), p)
			want[filepath.ToSlash(rel)] = data
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	delete(got, "go.mod")
	keys := func(m map[string][]byte) []string {
		var k []string
		for n := range m {
			k = append(k, n)
		}
		sort.Strings(k)
		return k
	}
	if d := cmp.Diff(keys(want), keys(got)); d != "" {
		t.Fatalf("embedded runtime files differ from the non-test sources (-want +got):\n%s", d)
	}
	for n, w := range want {
		if string(got[n]) != string(w) {
			t.Errorf("%s: embedded bytes differ from the file", n)
		}
	}
}

// TestEmbeddedRuntimeBuildsLikeNix writes the runtime exactly as the module
// embeds it, with the module's go.mod, and builds it the way buildGoModule
// does: vendor mode, no proxy, an empty module cache, local toolchain, no
// cgo. A non-stdlib import or a file missing from the embed fails here:
// this is the one check that the runtime is standard library only.
func TestEmbeddedRuntimeBuildsLikeNix(t *testing.T) {
	m := module.Assemble(t)
	src := t.TempDir()
	for name, data := range embeddedRuntime(t, m) {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bins := t.TempDir()
	cmd := exec.Command("go", "build", "-trimpath", "-o", bins+"/", "./cmd/agent-box", "./cmd/"+contract.Programs.Spawn.Name)
	cmd.Dir = src
	cmd.Env = append(os.Environ(),
		"GOFLAGS=-mod=vendor", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local",
		"GOMODCACHE="+t.TempDir(), "CGO_ENABLED=0", "GOSUMDB=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the embedded runtime like buildGoModule: %v\n%s", err, out)
	}
	bin := filepath.Join(bins, "agent-box")
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) == 0 {
		t.Fatalf("%s version: %v %q", bin, err, out)
	}
	// the spawn program, without its arguments: its usage, exit 2
	spawn := filepath.Join(bins, contract.Programs.Spawn.Name)
	out, err = exec.Command(spawn).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != contract.ExitCodes.Usage.Code || !strings.Contains(string(out), "usage: "+contract.Programs.Spawn.Name) {
		t.Fatalf("%s: %v %q, want its usage and exit %d", spawn, err, out, contract.ExitCodes.Usage.Code)
	}
}
