// Package module gives tests the single-file module as the assembler makes it, in memory, and the bytes of its includes.
//
// It gives tests the single-file module as the assembler makes
// it from modules/src, in memory, and the exact bytes of each of its
// includes: what hosts run (the lib, option declarations, units and runtime
// source INSIDE the generated file) is what the tests evaluate and build.
// Whether the committed modules/agent-box.nix equals it is one test of its
// own (cmd/assemble-module's TestCommittedModuleIsCurrent), so a stale file
// fails there, once, and nowhere else.
package module

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/agent-box/agent-box/internal/assemble"
)

// Entry and Output are the module's source entry and generated file,
// relative to the repository root.
const (
	Entry  = "modules/src/agent-box.nix"
	Output = "modules/agent-box.nix"
)

// ZeroHash is the store hash of every path the offline evaluation renders,
// and so of every store path in tests/golden.
const ZeroHash = "00000000000000000000000000000000"

// Root is the repository root (absolute).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Module is the assembled module and where its includes are.
type Module struct {
	Bytes []byte
	Spans []assemble.Span
}

var (
	once        sync.Once
	assembled   *Module
	errAssemble error
)

// Assemble assembles the module from the current sources (once per test
// binary).
func Assemble(t testing.TB) *Module {
	t.Helper()
	once.Do(func() {
		root := Root()
		res, err := assemble.Assemble(assemble.Options{Root: root, Entry: filepath.Join(root, Entry), Command: "go run ./cmd/assemble-module"})
		if err != nil {
			errAssemble = fmt.Errorf("assembling %s: %w", Entry, err)
			return
		}
		assembled = &Module{Bytes: res.Output, Spans: res.Spans}
	})
	if errAssemble != nil {
		t.Fatal(errAssemble)
	}
	return assembled
}

// AssembleFrom assembles the module from the sources under root, a copy
// of the repository a test changed (not cached).
func AssembleFrom(t testing.TB, root string) *Module {
	t.Helper()
	res, err := assemble.Assemble(assemble.Options{Root: root, Entry: filepath.Join(root, Entry), Command: "go run ./cmd/assemble-module"})
	if err != nil {
		t.Fatalf("assembling %s under %s: %v", Entry, root, err)
	}
	return &Module{Bytes: res.Output, Spans: res.Spans}
}

// Include returns the bytes the include of path (relative to the root;
// directories end in "/") expanded to. It fails the test unless the module
// includes path exactly once.
func (m *Module) Include(t testing.TB, path string) []byte {
	t.Helper()
	var found []byte
	n := 0
	for _, s := range m.Spans {
		if s.Path == path {
			found = m.Bytes[s.Start:s.End]
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the module includes %s %d times, want once", path, n)
	}
	return found
}

// WriteInclude writes the include's bytes to dir/name and returns the path.
func (m *Module) WriteInclude(t testing.TB, path, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, m.Include(t, path), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Offline writes the module's lib, option declarations and units, as
// embedded, into a temporary directory and returns the path of a Nix file
// that evaluates to tests/lib/offline.nix applied to them: the offline
// evaluation every module test uses.
func (m *Module) Offline(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	lib := m.WriteInclude(t, "modules/src/lib/default.nix", dir, "lib.nix")
	decl := m.WriteInclude(t, "modules/src/options.nix", dir, "options.nix")
	units := m.WriteInclude(t, "modules/src/units/", dir, "units.nix")
	webUnits := m.WriteInclude(t, "modules/src/units/web/", dir, "webunits.nix")
	appUnits := m.WriteInclude(t, "modules/src/units/apps/", dir, "appunits.nix")
	expr := fmt.Sprintf("import %q {\n  lib = import %q;\n  declarations = import %q;\n  units = { base = import %q; web = import %q; apps = import %q; };\n  zeroHash = %q;\n}\n",
		filepath.Join(Root(), "tests", "lib", "offline.nix"), lib, decl, units, webUnits, appUnits, ZeroHash)
	p := filepath.Join(dir, "offline.nix")
	if err := os.WriteFile(p, []byte(expr), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
