package vmtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/agent-box/agent-box/internal/golden"
)

// CLI is an agent CLI the VM tier runs: the native linux-x64 package of
// the npm registry at a pinned version, checked against the registry's
// integrity value recorded here, fetched once into the cache beside the
// base image, and put at the zero-hash store path of its nixpkgs package
// for a golden that installs Marker (the agent's host-wide file).
type CLI struct {
	Command   string // the executable, in bin/ of its store path and of each user environment
	StoreName string // its nixpkgs package's name: /nix/store/<zeros>-<StoreName>-<Version>
	Package   string // on the npm registry
	Version   string
	Tarball   string // the tarball's file name under <registry>/<Package>/-/
	Integrity string
	Member    string // the executable inside the tarball
	Marker    string // a golden file that says the golden runs it
}

// CLIs are the pinned agent CLIs.
var CLIs = []CLI{
	{Command: "claude", StoreName: "claude-code", Package: "@anthropic-ai/claude-code-linux-x64", Version: "2.1.328",
		Tarball:   "claude-code-linux-x64-2.1.328.tgz",
		Integrity: "sha512-KuzL+dBHgDCFTHJxwW+xuBJdVKfBsesGx2BBcTOG9sYDGoAD7b1hUV8rsTS4xjoJsB2SmeGraGjBiFuhrYuC9w==",
		Member:    "package/claude", Marker: "etc/claude-code/managed-settings.d/50-agent-box.json"},
	// @openai/codex@0.171.0 names it as its optional dependency
	// @openai/codex-linux-x64 (npm:@openai/codex@0.171.0-linux-x64); a
	// static (musl) build.
	{Command: "codex", StoreName: "codex", Package: "@openai/codex", Version: "0.171.0",
		Tarball:   "codex-0.171.0-linux-x64.tgz",
		Integrity: "sha512-l66NZkQgdk2C3pbcfULDz42yEUB581MVA6I+Y43Wp4OIqEy73HCdmZ0GTjeAHY2ycuH4N00d9VsLrwT1jxshTw==",
		Member:    "package/vendor/x86_64-unknown-linux-musl/bin/codex", Marker: "etc/codex/config.toml"},
}

// OpenCode is the pinned OpenCode (opencode-ai@1.18.33 names it as its
// optional dependency; a Bun executable, glibc). It is not in CLIs: one
// start and turn took 20 CPU seconds and 1 GB of memory on the host
// (measured), more than the TCG guests can give within the tier's budget,
// so the host test cmd/agent-box TestOpenCodeUnattended runs it instead.
var OpenCode = CLI{Command: "opencode", StoreName: "opencode", Package: "opencode-linux-x64", Version: "1.18.33",
	Tarball:   "opencode-linux-x64-1.18.33.tgz",
	Integrity: "sha512-q/t/3p2CTxOT9y2kvjesb/LZab2+1eqlhhWA02Be6mjTtmYtNBcBsrI5yDo4Fw7ZSPBW2oyMIGMNRqiKQjiAWw==",
	Member:    "package/bin/opencode"}

// The scripted model in the guest (internal/scriptedmodel): its address
// is the claude golden's ANTHROPIC_BASE_URL and Codex's provider; its log
// is what the scenario reads.
const (
	modelUnit = "scripted-model.service"
	modelLog  = "/var/log/scripted-model.jsonl"
)

// UsedCLIs returns the agent CLIs a golden configuration runs.
func UsedCLIs(fx golden.Fixture) []CLI {
	var used []CLI
	for _, c := range CLIs {
		if _, ok := fx.Files[c.Marker]; ok {
			used = append(used, c)
		}
	}
	return used
}

// Ensure returns the cached executable of c, downloading the package's
// tarball from the npm registry ($npm_config_registry, else npm's
// default) when missing, checked against c.Integrity before use.
func (c CLI) Ensure(ctx context.Context, log io.Writer) (string, error) {
	dir := filepath.Join(CacheDir(), c.StoreName+"-"+c.Version)
	bin := filepath.Join(dir, c.Command)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	data, err := fetchTarball(ctx, npmRegistry()+"/"+c.Package+"/-/"+c.Tarball, c.Integrity, log)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", c.Command, c.Version, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := untarOne(data, c.Member, bin+".tmp", 0o755); err != nil {
		return "", fmt.Errorf("%s %s: %w", c.Command, c.Version, err)
	}
	return bin, os.Rename(bin+".tmp", bin)
}

// npmRegistry is $npm_config_registry, else npm's default, without a
// final slash.
func npmRegistry() string {
	if r := os.Getenv("npm_config_registry"); r != "" {
		return strings.TrimSuffix(r, "/")
	}
	return "https://registry.npmjs.org"
}

// fetchTarball downloads url and checks it against integrity (npm's
// "sha512-<base64>").
func fetchTarball(ctx context.Context, url, integrity string, log io.Writer) ([]byte, error) {
	fmt.Fprintf(log, "vmtest: fetching %s (once)\n", url)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s for the VM tier: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching %s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", url, err)
	}
	sum := sha512.Sum512(data)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != integrity {
		return nil, fmt.Errorf("%s: integrity %s, want %s", url, got, integrity)
	}
	return data, nil
}

// untarOne writes the file name of a gzipped tar archive to dest.
func untarOne(tgz []byte, name, dest string, mode os.FileMode) error {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return fmt.Errorf("no %s in the archive", name)
		}
		if err != nil {
			return err
		}
		if h.Name != name {
			continue
		}
		f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, tr); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
}

// modelUnitFormat runs the scripted model before the agents start (%s:
// the users' sessions units).
const modelUnitFormat = `[Unit]
Description=scripted model for the VM tier (internal/scriptedmodel)
Before=%s
DefaultDependencies=no
After=local-fs.target

[Service]
ExecStart=/usr/local/bin/scripted-model -listen 127.0.0.1:8099 -log ` + modelLog + `

[Install]
WantedBy=multi-user.target
`

// installAgents puts the agent CLIs a golden runs and the scripted model
// into a guest: each executable at its zero-hash store path linked from
// every user environment, the model's unit (enabled, ordered before the
// users' sessions units), the host-wide runtime the agents' hooks name,
// and the API key file the golden names.
func installAgents(root string, fx golden.Fixture, bins Binaries, envDirs map[string]bool, users []string) error {
	used := UsedCLIs(fx)
	if len(used) == 0 {
		return nil
	}
	if bins.Model == "" {
		return fmt.Errorf("the golden runs agent CLIs, but the guest has no scripted-model binary")
	}
	for _, c := range used {
		if bins.CLIs[c.Command] == "" {
			return fmt.Errorf("the golden runs %s, but the guest has no %s binary", c.Package, c.Command)
		}
		store := "/nix/store/" + strings.Repeat("0", 32) + "-" + c.StoreName + "-" + c.Version
		if err := copyFile(bins.CLIs[c.Command], filepath.Join(root, store, "bin", c.Command), 0o755); err != nil {
			return err
		}
		for env := range envDirs {
			link := filepath.Join(root, env, "bin", c.Command)
			os.Remove(link)
			if err := os.Symlink(store+"/bin/"+c.Command, link); err != nil {
				return err
			}
		}
	}
	// The host-wide runtime that the managed hook names.
	runtime := "/nix/store/" + strings.Repeat("0", 32) + "-agent-box-runtime/bin/agent-box"
	if err := copyFile(bins.AgentBox, filepath.Join(root, runtime), 0o755); err != nil {
		return err
	}
	if err := copyFile(bins.Model, filepath.Join(root, "usr/local/bin/scripted-model"), 0o755); err != nil {
		return err
	}
	unit := filepath.Join(root, "etc/systemd/system", modelUnit)
	var before []string
	for _, u := range users {
		before = append(before, "agent-box-sessions@"+u+".service")
	}
	if err := writeFile(unit, []byte(fmt.Sprintf(modelUnitFormat, strings.Join(before, " "))), 0o644); err != nil {
		return err
	}
	if err := enable(root, "multi-user.target", "/etc/systemd/system/"+modelUnit); err != nil {
		return err
	}
	// Each user's secrets file that the golden names under
	// /etc/agent-box-demo: a fake API key (the scripted model takes any).
	for _, data := range fx.Files {
		for _, line := range strings.Split(data, "\n") {
			f, ok := strings.CutPrefix(line, "EnvironmentFile=-")
			if !ok {
				f, ok = strings.CutPrefix(line, "EnvironmentFile=")
			}
			if !ok || !strings.HasPrefix(f, "/etc/agent-box-demo/") || !strings.HasSuffix(f, ".claude.env") {
				continue
			}
			key := "ANTHROPIC_API_KEY=sk-ant-api03-scripted-model-" + strings.Repeat("k", 40) + "\n"
			if err := writeFile(filepath.Join(root, f), []byte(key), 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
