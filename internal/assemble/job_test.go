package assemble

import "testing"

// TestAJobResolvesTheCommandLinesDefaults: without an entry the
// repository's files; with one its directory as the root and stdout; the
// banner names the command with its arguments.
func TestAJobResolvesTheCommandLinesDefaults(t *testing.T) {
	for _, tc := range []struct {
		job                       Job
		root, entry, out, command string
	}{
		{Job{}, ".", DefaultEntry, DefaultOut, RegenCommand},
		{Job{Entry: "x/y/m.nix"}, "x/y", "x/y/m.nix", "-", RegenCommand},
		{Job{Entry: "m.nix"}, ".", "m.nix", "-", RegenCommand},
		{Job{Entry: "/m.nix"}, "/", "/m.nix", "-", RegenCommand},
		{Job{Entry: "x/m.nix", Root: "r", Out: "o.nix", Args: []string{"-o", "o.nix", "x/m.nix"}}, "r", "x/m.nix", "o.nix", RegenCommand + " -o o.nix x/m.nix"},
	} {
		opts, out := tc.job.Resolve()
		if opts.Root != tc.root || opts.Entry != tc.entry || out != tc.out || opts.Command != tc.command {
			t.Errorf("%+v: root %q entry %q out %q command %q; want %q %q %q %q", tc.job, opts.Root, opts.Entry, out, opts.Command, tc.root, tc.entry, tc.out, tc.command)
		}
	}
}
