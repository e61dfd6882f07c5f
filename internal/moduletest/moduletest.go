// Package moduletest gives tests the generated single-file module and the
// exact bytes of each of its includes, so that what hosts run (the
// renderers, units and runtime source INSIDE modules/agent-box.nix) is what
// the tests evaluate and build.
package moduletest

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agent-box/agent-box/internal/assemble"
)

// Entry and Output are the module's source entry and generated file,
// relative to the repository root.
const (
	Entry  = "modules/src/agent-box.nix"
	Output = "modules/agent-box.nix"
)

// Root is the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Module is the committed generated module and where its includes are.
type Module struct {
	Bytes []byte
	Spans []assemble.Span
}

// Load reads the committed module and locates its includes by assembling
// the sources the way the CLI does. A stale module fails the test: the spans
// would not describe the committed bytes.
func Load(t testing.TB) *Module {
	t.Helper()
	root := Root()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// Assemble exactly as `go run ./cmd/assemble-module` at the root does
	// (the banner names the entry as given, so the offsets depend on it).
	if err := os.Chdir(root); err != nil {
		t.Fatal(err)
	}
	res, aerr := assemble.Assemble(assemble.Options{Root: ".", Entry: Entry, Command: "go run ./cmd/assemble-module"})
	committed, rerr := os.ReadFile(Output)
	if err := os.Chdir(wd); err != nil {
		t.Fatal(err)
	}
	if aerr != nil {
		t.Fatalf("assembling the module: %v", aerr)
	}
	if rerr != nil {
		t.Fatal(rerr)
	}
	if !bytes.Equal(committed, res.Output) {
		t.Fatalf("%s is stale; run 'go run ./cmd/assemble-module'", Output)
	}
	return &Module{Bytes: committed, Spans: res.Spans}
}

// Include returns the bytes of the module that the include of path (relative
// to the root; directories end in "/") expanded to. It fails the test if the
// module does not include path exactly once.
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
