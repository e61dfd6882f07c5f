package vmtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/agent-box/agent-box/internal/golden"
	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// EnsureWebAssets returns a cached directory holding the served files of
// the contract's webAssets (each package's tarball fetched from the npm
// registry once, checked against its integrity value, reduced to its
// files), what the module's agent-box-web-assets derivation builds.
func EnsureWebAssets(ctx context.Context, log io.Writer) (string, error) {
	a := contract.WebAssets
	pins, err := json.Marshal(a.Packages)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(pins)
	dir := filepath.Join(CacheDir(), "web-assets-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return dir, nil
	}
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	for _, p := range a.Packages {
		url := strings.Replace(p.Tarball, "https://registry.npmjs.org", npmRegistry(), 1)
		data, err := fetchTarball(ctx, url, p.Integrity, log)
		if err != nil {
			return "", fmt.Errorf("web asset %s %s: %w", p.Name, p.Version, err)
		}
		for member, file := range p.Files {
			if err := untarOne(data, member, filepath.Join(tmp, file), 0o644); err != nil {
				return "", fmt.Errorf("web asset %s %s: %w", p.Name, p.Version, err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return "", err
	}
	os.RemoveAll(dir)
	return dir, os.Rename(tmp, dir)
}

// assetsRe finds the web daemons' asset directories in a golden's drop-ins.
var assetsRe = regexp.MustCompile(`(?m)^Environment="` + regexp.QuoteMeta(contract.Env.WebAssets.Name) + `=([^"]+)"$`)

// installWebAssets copies the cached assets (dir) into every asset
// directory the golden's drop-ins name (inside the users' zero-hash
// environments).
func installWebAssets(root string, fx golden.Fixture, dir string) error {
	targets := map[string]bool{}
	for _, data := range fx.Files {
		for _, m := range assetsRe.FindAllStringSubmatch(data, -1) {
			targets[m[1]] = true
		}
	}
	if len(targets) == 0 {
		return nil
	}
	if dir == "" {
		return fmt.Errorf("the golden's web daemons name %s but no web assets were fetched", contract.Env.WebAssets.Name)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(targets))
	for t := range targets {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		for _, e := range ents {
			if e.Name() == ".complete" {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return err
			}
			if err := writeFile(filepath.Join(root, t, e.Name()), data, 0o444); err != nil {
				return fmt.Errorf("installing web assets: %w", err)
			}
		}
	}
	return nil
}
