package flakecheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/golden"
	"github.com/agent-box/agent-box/internal/module"
)

// fakeHash stands in for the store hashes of a real build (32 characters of
// the store alphabet, not all zeros).
const fakeHash = "0123456789abcdfghijklmnpqrsvwxyz"

// nixosTree lays out a golden fixture the way NixOS's generateUnits
// installs it: /etc/systemd/system entries are real directories holding
// absolute symlinks into (fake) store paths under root, the enablement is a
// dangling relative link, the seed and agents files sit at the store paths
// the drop-ins name, and unrelated units are around. Store hashes are
// non-zero, as in a real build.
func nixosTree(t *testing.T, cfg string) (tree, etc, root string) {
	t.Helper()
	dir := t.TempDir()
	tree, etc, root = filepath.Join(dir, "system-units"), filepath.Join(dir, "etc"), filepath.Join(dir, "root")
	unzero := func(s string) string { return strings.ReplaceAll(s, module.ZeroHash, fakeHash) }
	write := func(p, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	fx, err := golden.Read(module.Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range fx.Files {
		switch {
		case strings.HasPrefix(name, "nix/store/"):
			write(filepath.Join(root, unzero(name)), unzero(data))
		case strings.HasPrefix(name, "etc/agent-box/"), strings.HasPrefix(name, "etc/fail2ban/"), strings.HasPrefix(name, "etc/sysctl.d/"), strings.HasPrefix(name, "etc/tmpfiles.d/"), strings.HasPrefix(name, "etc/polkit-1/"), strings.HasPrefix(name, "etc/claude-code/"), name == "etc/codex/config.toml", strings.HasPrefix(name, "etc/opencode/"):
			// environment.etc entries, linked like pkgs.linkFarm does
			rel := strings.TrimPrefix(name, "etc/")
			stored := filepath.Join(root, "nix/store", fakeHash+"-etc-"+strings.ReplaceAll(rel, "/", "-"))
			write(stored, unzero(data))
			link(stored, filepath.Join(etc, rel))
		case strings.HasPrefix(name, "etc/systemd/system/"):
			rel := strings.TrimPrefix(name, "etc/systemd/system/")
			stored := filepath.Join(root, "nix/store", fakeHash+"-unit-"+strings.NewReplacer("/", "-", "@", "-").Replace(rel), filepath.Base(rel))
			write(stored, unzero(data))
			link(stored, filepath.Join(tree, rel))
		default:
			t.Fatalf("golden %s: unexpected file %s", cfg, name)
		}
	}
	for name, target := range fx.Links {
		link(target, filepath.Join(tree, strings.TrimPrefix(name, "etc/systemd/system/")))
	}
	// With the web surface, NixOS's Caddyfile imports the agent-box files
	// (nixpkgs writes the rest of it).
	var imports []string
	for name := range fx.Files {
		if strings.HasPrefix(name, "nix/store/") && strings.HasSuffix(name, ".caddy") {
			imports = append(imports, "import /"+unzero(name)+"\n") // read under root, as the drop-ins' paths are
		}
	}
	if len(imports) > 0 {
		sort.Strings(imports)
		stored := filepath.Join(root, "nix/store", fakeHash+"-Caddyfile-formatted/Caddyfile")
		write(stored, "{\n\t"+imports[0]+"\tlog {\n\t\tlevel ERROR\n\t}\n}\n"+strings.Join(imports[1:], ""))
		link(stored, filepath.Join(etc, "caddy/caddy_config"))
	}
	// Units of the rest of the system, which the check must ignore.
	write(filepath.Join(root, "nix/store", fakeHash+"-systemd/example/systemd/system/sshd.service"), "[Service]\n")
	link(filepath.Join(root, "nix/store", fakeHash+"-systemd/example/systemd/system/sshd.service"), filepath.Join(tree, "sshd.service"))
	link("../remote-fs.target", filepath.Join(tree, "multi-user.target.wants", "remote-fs.target"))
	link("graphical.target", filepath.Join(tree, "default.target"))
	return tree, etc, root
}

func goldenCheck(t *testing.T, tree, etc, cfg, root string) (string, error) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is required: %v", err)
	}
	cmd := exec.Command(bash, filepath.Join(module.Root(), "nix", "golden-check.sh"), tree, etc,
		filepath.Join(module.Root(), "tests", "golden", cfg), filepath.Join(t.TempDir(), "out"), root)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The capture of the flake's `golden` check, run on a tree shaped like
// NixOS's real /etc/systemd/system for each fixture, reproduces the fixture
// exactly: dereferenced units and drop-ins, zeroed hashes, the enablement
// link, the seed and agents files; other units are ignored.
func TestGoldenCheckAcceptsTheFixtureAsNixOSInstallsIt(t *testing.T) {
	for _, cfg := range goldenDirs(t) {
		t.Run(cfg, func(t *testing.T) {
			tree, etc, root := nixosTree(t, cfg)
			if out, err := goldenCheck(t, tree, etc, cfg, root); err != nil {
				t.Fatalf("golden-check.sh rejects the fixture's own bytes: %v\n%s", err, out)
			}
		})
	}
}

// What the check exists to catch: a NixOS glue that installs anything else
// than the fixture fails it.
func TestGoldenCheckRejectsWhatTheFixtureLacks(t *testing.T) {
	const cfg = "minimal"
	overrides := "agent-box@alice.service.d/overrides.conf"
	for _, tc := range []struct {
		name   string
		mutate func(t *testing.T, tree, root string)
		want   string
	}{
		{"a full instance unit shadowing the template", func(t *testing.T, tree, _ string) {
			if err := os.WriteFile(filepath.Join(tree, "agent-box@alice.service"), []byte("[Service]\nExecStart=/bin/true\n"), 0o444); err != nil {
				t.Fatal(err)
			}
		}, "Only in"},
		{"a NixOS-injected PATH in the drop-in", func(t *testing.T, tree, _ string) {
			p := filepath.Join(tree, overrides)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			os.Remove(p)
			data = append(data, "Environment=\"PATH=/nix/store/"+fakeHash+"-coreutils/bin\"\n"...)
			if err := os.WriteFile(p, data, 0o444); err != nil {
				t.Fatal(err)
			}
		}, "+Environment=\"PATH=/nix/store/00000000000000000000000000000000-coreutils/bin\""},
		{"an extra template drop-in", func(t *testing.T, tree, _ string) {
			if err := os.MkdirAll(filepath.Join(tree, "agent-box@.service.d"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tree, "agent-box@.service.d", "overrides.conf"), []byte("[Service]\n"), 0o444); err != nil {
				t.Fatal(err)
			}
		}, "Only in"},
		{"no enablement link", func(t *testing.T, tree, _ string) {
			if err := os.Remove(filepath.Join(tree, "multi-user.target.wants", "agent-box@alice.service")); err != nil {
				t.Fatal(err)
			}
		}, "-etc/systemd/system/multi-user.target.wants/agent-box@alice.service -> ../agent-box@alice.service"},
		{"a different login file", func(t *testing.T, _, root string) {
			p := filepath.Join(root, "nix/store", fakeHash+"-etc-agent-box-users-alice.env")
			os.Remove(p)
			if err := os.WriteFile(p, []byte("AGENT_BOX_TMUX=/tmp/tmux\n"), 0o444); err != nil {
				t.Fatal(err)
			}
		}, "+AGENT_BOX_TMUX=/tmp/tmux"},
		{"a different seed", func(t *testing.T, _, root string) {
			p := filepath.Join(root, "nix/store", fakeHash+"-agent-box-seed-alice.json")
			os.Remove(p)
			if err := os.WriteFile(p, []byte("{\"sessions\":[]}\n\n"), 0o444); err != nil {
				t.Fatal(err)
			}
		}, "agent-box-seed-alice.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree, etc, root := nixosTree(t, cfg)
			tc.mutate(t, tree, root)
			out, err := goldenCheck(t, tree, etc, cfg, root)
			if err == nil {
				t.Fatalf("golden-check.sh accepted the tree:\n%s", out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("golden-check.sh output lacks %q:\n%s", tc.want, out)
			}
		})
	}
}

// With the web surface, the Caddy sites NixOS's Caddyfile imports are part
// of what the check compares.
func TestGoldenCheckRejectsOtherCaddySites(t *testing.T) {
	tree, etc, root := nixosTree(t, "web")
	matches, err := filepath.Glob(filepath.Join(root, "nix/store", fakeHash+"-agent-box-caddy-sites.caddy"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("no sites file in the tree: %v %v", matches, err)
	}
	os.Remove(matches[0])
	if err := os.WriteFile(matches[0], []byte("box.localhost:8443 {\n\trespond \"hi\"\n}\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	out, err := goldenCheck(t, tree, etc, "web", root)
	if err == nil || !strings.Contains(out, `+	respond "hi"`) {
		t.Errorf("golden-check.sh accepted other Caddy sites: %v\n%s", err, out)
	}
}

// The module's fail2ban jail in environment.etc is part of what the check
// compares.
func TestGoldenCheckRejectsAnotherFail2banJail(t *testing.T) {
	tree, etc, root := nixosTree(t, "web")
	stored := filepath.Join(root, "nix/store", fakeHash+"-etc-fail2ban-jail.d-agent-box-auth.local")
	if _, err := os.Stat(stored); err != nil {
		t.Fatalf("no jail in the tree: %v", err)
	}
	os.Remove(stored)
	if err := os.WriteFile(stored, []byte("[agent-box-auth]\nenabled = false\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	out, err := goldenCheck(t, tree, etc, "web", root)
	if err == nil || !strings.Contains(out, "+enabled = false") {
		t.Errorf("golden-check.sh accepted another jail: %v\n%s", err, out)
	}
}
