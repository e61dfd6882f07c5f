// Package golden reads the golden fixtures of tests/golden/<cfg>/, the one list of golden configurations.
//
// It reads the golden fixtures: tests/golden/<cfg>/ holds
// config.nix (a services.agent-box configuration), files/ (every file the
// module installs for it, relative to /, store hashes zeroed) and links
// ("name -> target" per line, for the symlinks it installs). The directory
// listing is the one list of golden configurations: the Go tests, the VM
// tier and the flake (nix/goldens.nix) all read it.
package golden

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Dir is the fixtures' directory, relative to the repository root.
const Dir = "tests/golden"

// Fixture is what the module installs for one configuration.
type Fixture struct {
	Files map[string]string // path relative to / -> bytes
	Links map[string]string // path relative to / -> link target
}

// Configs lists the golden configurations (the directories of tests/golden),
// sorted.
func Configs(root string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(root, Dir))
	if err != nil {
		return nil, fmt.Errorf("golden configurations: %w", err)
	}
	var cfgs []string
	for _, e := range entries {
		if e.IsDir() {
			cfgs = append(cfgs, e.Name())
		}
	}
	if len(cfgs) == 0 {
		return nil, fmt.Errorf("golden configurations: %s holds none", Dir)
	}
	return cfgs, nil
}

// Read reads tests/golden/<cfg>/files/** and the links manifest.
func Read(root, cfg string) (Fixture, error) {
	base := filepath.Join(root, Dir, cfg)
	fx := Fixture{Files: map[string]string{}, Links: map[string]string{}}
	files := filepath.Join(base, "files")
	err := filepath.WalkDir(files, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file (links belong in the links manifest)", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(files, p)
		if err != nil {
			return err
		}
		fx.Files[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		return fx, fmt.Errorf("golden %s: %w", cfg, err)
	}
	data, err := os.ReadFile(filepath.Join(base, "links"))
	if err != nil {
		return fx, fmt.Errorf("golden %s: %w", cfg, err)
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, target, ok := strings.Cut(line, " -> ")
		if !ok {
			return fx, fmt.Errorf("%s/links:%d: bad line %q (want 'name -> target')", base, i+1, line)
		}
		fx.Links[name] = target
	}
	return fx, nil
}

// LinksManifest is the links file for links: a comment, then one
// "name -> target" line per link, sorted.
func LinksManifest(links map[string]string) string {
	lines := make([]string, 0, len(links))
	for name, target := range links {
		lines = append(lines, name+" -> "+target)
	}
	sort.Strings(lines)
	return "# name -> target of every symlink the module installs (relative to /)\n" + strings.Join(lines, "\n") + "\n"
}

// Write replaces tests/golden/<cfg>/files and links with fx.
func Write(root, cfg string, fx Fixture) error {
	base := filepath.Join(root, Dir, cfg)
	if err := os.RemoveAll(filepath.Join(base, "files")); err != nil {
		return err
	}
	for name, data := range fx.Files {
		p := filepath.Join(base, "files", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(base, "links"), []byte(LinksManifest(fx.Links)), 0o644)
}
