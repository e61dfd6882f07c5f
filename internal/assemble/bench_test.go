package assemble

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// synthetic writes a module of about scale*600 KB from scale*100 included
// files (half .nix splices, half text files: units, scripts, Go sources).
func synthetic(tb testing.TB, scale int) (root string, size int) {
	tb.Helper()
	root = tb.TempDir()
	write := func(name, data string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
		size += len(data)
	}
	var entry strings.Builder
	entry.WriteString("{\n")
	textLine := "\tExecStart=/nix/store/x-agent-box/bin/agent-box supervise --flag '${x}' ''quoted''\n"
	nixLine := "  opt = lib.mkOption { type = lib.types.str; default = \"v\"; description = ''text''; };\n"
	for i := 0; i < 50*scale; i++ {
		write(fmt.Sprintf("units/u%d@.service", i), strings.Repeat(textLine, 6000/len(textLine)*1))
		write(fmt.Sprintf("lib/m%d.nix", i), "{\n  unit =\n    @@include:../units/u"+fmt.Sprint(i)+"@.service@@\n  ;\n"+strings.Repeat(nixLine, 6000/len(nixLine))+"}\n")
		fmt.Fprintf(&entry, "  m%d =\n    @@include:lib/m%d.nix@@\n  ;\n", i, i)
	}
	entry.WriteString("}\n")
	write("main.nix", entry.String())
	return root, size
}

// BenchmarkAssemble measures one assembly of a ~600 KB module from ~100
// files (x1) and of ten times that input (x10). Target: x1 under 5 ms here;
// x10 at most 12 times x1.
func BenchmarkAssemble(b *testing.B) {
	for _, scale := range []int{1, 10} {
		b.Run(fmt.Sprintf("x%d", scale), func(b *testing.B) {
			root, size := synthetic(b, scale)
			opts := Options{Root: root, Entry: filepath.Join(root, "main.nix"), Command: "BENCH"}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			var out int
			for b.Loop() {
				res, err := Assemble(opts)
				if err != nil {
					b.Fatal(err)
				}
				out = len(res.Output)
			}
			b.ReportMetric(float64(out), "out-bytes")
		})
	}
}
