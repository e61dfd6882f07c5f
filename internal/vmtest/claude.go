package vmtest

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agent-box/agent-box/internal/golden"
)

// The Claude Code the VM tier runs: the native linux-x64 package of the
// npm registry at a pinned version, checked against the registry's
// integrity value recorded here (npm checks it too), fetched once into the
// cache beside the base image.
const (
	ClaudeVersion   = "2.1.328"
	claudePackage   = "@anthropic-ai/claude-code-linux-x64"
	claudeIntegrity = "sha512-KuzL+dBHgDCFTHJxwW+xuBJdVKfBsesGx2BBcTOG9sYDGoAD7b1hUV8rsTS4xjoJsB2SmeGraGjBiFuhrYuC9w=="
)

// The scripted model in the guest (internal/scriptedmodel): its address
// is the claude golden's ANTHROPIC_BASE_URL; its log is what the
// scenario reads.
const (
	modelUnit = "scripted-model.service"
	modelLog  = "/var/log/scripted-model.jsonl"
)

// claudeSettingsSuffix ends the path of Claude Code's managed settings
// drop-in: a golden that installs it runs Claude in the VM tier.
const claudeSettingsSuffix = "etc/claude-code/managed-settings.d/50-agent-box.json"

// UsesClaude reports whether a golden configuration runs Claude Code.
func UsesClaude(fx golden.Fixture) bool {
	_, ok := fx.Files[claudeSettingsSuffix]
	return ok
}

// EnsureClaude returns the cached claude binary, fetching it with npm
// (the registry's tarball, integrity-checked) when missing.
func EnsureClaude(ctx context.Context, log io.Writer) (string, error) {
	dir := filepath.Join(CacheDir(), "claude-code-"+ClaudeVersion)
	bin := filepath.Join(dir, "claude")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", fmt.Errorf("npm is required to fetch Claude Code for the VM tier: %w (run 'make deps')", err)
	}
	fmt.Fprintf(log, "vmtest: fetching %s@%s from the npm registry (once)\n", claudePackage, ClaudeVersion)
	tmp, err := os.MkdirTemp(CacheDir(), ".claude-fetch-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	pack := exec.CommandContext(ctx, "npm", "pack", "--silent", "--pack-destination", tmp, claudePackage+"@"+ClaudeVersion)
	out, err := pack.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm pack %s@%s: %v\n%s", claudePackage, ClaudeVersion, err, out)
	}
	tgz := filepath.Join(tmp, strings.TrimSpace(lastLine(out)))
	data, err := os.ReadFile(tgz)
	if err != nil {
		return "", fmt.Errorf("npm pack wrote no %s: %w", tgz, err)
	}
	sum := sha512.Sum512(data)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != claudeIntegrity {
		return "", fmt.Errorf("%s@%s: integrity %s, want %s", claudePackage, ClaudeVersion, got, claudeIntegrity)
	}
	untar := exec.CommandContext(ctx, "tar", "-xzf", tgz, "-C", tmp, "package/claude")
	if out, err := untar.CombinedOutput(); err != nil {
		return "", fmt.Errorf("unpacking %s: %v\n%s", tgz, err, out)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(tmp, "package", "claude"), bin); err != nil {
		return "", err
	}
	return bin, nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// modelUnitText runs the scripted model before the agents start.
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

// installClaude puts Claude Code and the scripted model into a guest
// whose golden runs Claude: the binary at a zero-hash store path linked
// from every user environment, the model's unit (enabled, ordered before
// the users' sessions units), and the API key file the golden names.
func installClaude(root string, fx golden.Fixture, bins Binaries, envDirs map[string]bool, users []string) error {
	if !UsesClaude(fx) {
		return nil
	}
	if bins.Claude == "" || bins.Model == "" {
		return fmt.Errorf("the golden runs Claude Code, but the guest has no claude or scripted-model binary")
	}
	store := "/nix/store/" + strings.Repeat("0", 32) + "-claude-code-" + ClaudeVersion
	if err := copyFile(bins.Claude, filepath.Join(root, store, "bin/claude"), 0o755); err != nil {
		return err
	}
	for env := range envDirs {
		link := filepath.Join(root, env, "bin", "claude")
		os.Remove(link)
		if err := os.Symlink(store+"/bin/claude", link); err != nil {
			return err
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
