package contractscan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testContract = `{
  "a": {"path": "/run/x-web/<user>.sock", "what": "AGENT_BOX_PROSE is prose"},
  "b": {"name": "AGENT_BOX_TMUX", "fd": "status", "short": "ab"},
  "c": {"route": "/<user>/hook/*", "unit": "caddy.service"},
  "d": {"slice": "x-box-<user>.slice"}
}`

// TestScanFindsEachCopyOnce: templates match any short argument, their
// fixed pieces match alone, prose, bare words, short strings and file
// suffixes are not probes, a longer match covers a shorter one, and a
// probe inside a longer word is not a copy.
func TestScanFindsEachCopyOnce(t *testing.T) {
	probes, err := Probes([]byte(testContract))
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, p := range probes {
		texts = append(texts, p.Text)
	}
	want := []string{"/run/x-web/<user>.sock", "/run/x-web/", "AGENT_BOX_TMUX", "/<user>/hook/*", "/hook/", "caddy.service", "x-box-<user>.slice"}
	if d := cmp.Diff(want, texts); d != "" {
		t.Errorf("probes (-want +got):\n%s", d)
	}
	src := strings.Join([]string{
		`dial("/run/x-web/alice.sock")`,        // 1: the template, once
		`p := "/run/x-web/" + u + ".sock"`,     // 2: its fixed piece
		`env "AGENT_BOX_TMUX" x`,               // 3
		`AGENT_BOX_TMUX_OLD AGENT_BOX_TMUXX`,   // 4: other words
		`handle /${u}/hook/* {`,                // 5: the route template
		`systemd.services.caddy.serviceConfig`, // 6: not the unit
		`status verify AGENT_BOX_PROSE`,        // 7: words and prose
		`x-box-alice.slice x-box-web`,          // 8: the slice; a bare prefix is none
	}, "\n")
	var got []string
	for _, h := range Scan("f", []byte(src), probes) {
		got = append(got, h.String())
	}
	wantHits := []string{
		"f:1: /run/x-web/alice.sock (a.path)",
		"f:2: /run/x-web/ (a.path)",
		"f:3: AGENT_BOX_TMUX (b.name)",
		"f:5: /${u}/hook/ (c.route)", // "*" stands for anything too
		"f:8: x-box-alice.slice (d.slice)",
	}
	if d := cmp.Diff(wantHits, got); d != "" {
		t.Errorf("hits (-want +got):\n%s", d)
	}
}

// TestStripCommentsKeepsStringsAndLines: Go and Nix comments are blanked
// (newlines kept), strings are not, whatever they hold.
func TestStripCommentsKeepsStringsAndLines(t *testing.T) {
	for _, tc := range []struct{ file, src, want string }{
		{"a.go", "x := \"// kept\" // gone\n/* gone\ngone */ y", "x := \"// kept\"        \n       \n        y"},
		{"a.nix", "x = \"# kept\"; # gone\n/* gone */ y", "x = \"# kept\";       \n           y"},
		{"a.nix", "x = ''\n  # kept ''${x} '''\n''; # gone", "x = ''\n  # kept ''${x} '''\n'';       "},
		{"a.sh", "# kept", "# kept"},
		{"a.nix", "x =\n  @@include:../d/agent-box-exec/@@\n  ;", "x =\n" + strings.Repeat(" ", 34) + "\n  ;"},
		{"a.nix", "x = \"@@include:kept@@\";", "x = \"@@include:kept@@\";"},
	} {
		if got := string(StripComments(tc.file, []byte(tc.src))); got != tc.want {
			t.Errorf("StripComments(%s, %q) = %q; want %q", tc.file, tc.src, got, tc.want)
		}
	}
}
