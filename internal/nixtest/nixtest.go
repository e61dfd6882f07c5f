// Package nixtest runs the real Nix evaluator for tests. Nix is required:
// when it is missing the test fails (never skips) and says how to install it.
package nixtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Command returns the path of the nix binary or fails the test.
func Command(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("nix")
	if err != nil {
		t.Fatalf("nix is required for this test but not on PATH: %v\nhint: run 'make deps' (installs Debian's nix-bin)", err)
	}
	return p
}

// start runs nix (or nix-instantiate) with args: stdout, stderr and the
// error of the run.
func start(t testing.TB, name string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	dir := filepath.Dir(Command(t))
	cmd := exec.Command(filepath.Join(dir, name), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// Pure evaluation only: no store writes, no network, no user config.
	cmd.Env = append(os.Environ(), "NIX_CONFIG=experimental-features = nix-command\nsubstituters =\n")
	err = cmd.Run()
	return out.Bytes(), errOut.Bytes(), err
}

// run runs nix (or nix-instantiate) with args and returns stdout.
func run(t testing.TB, name string, args ...string) ([]byte, error) {
	t.Helper()
	stdout, stderr, err := start(t, name, args...)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr)
	}
	return stdout, nil
}

// EvalFileRaw evaluates the Nix file to a string and returns its exact
// bytes (nix eval --raw carries invalid UTF-8, --json cannot).
func EvalFileRaw(t testing.TB, file string) ([]byte, error) {
	t.Helper()
	return run(t, "nix", "eval", "--raw", "-f", file)
}

// EvalStrings evaluates each expression (each must yield a string) in one
// Nix process and returns their exact bytes, in order.
func EvalStrings(t testing.TB, exprs []string) ([][]byte, error) {
	t.Helper()
	var b strings.Builder
	b.WriteString("let f = s: \"${toString (builtins.stringLength s)}:${s}\"; in builtins.concatStringsSep \"\" [\n")
	for _, e := range exprs {
		b.WriteString("(f (\n")
		b.WriteString(e)
		b.WriteString("\n))\n")
	}
	b.WriteString("]\n")
	file := filepath.Join(t.TempDir(), "eval.nix")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := EvalFileRaw(t, file)
	if err != nil {
		return nil, err
	}
	res := make([][]byte, 0, len(exprs))
	for len(out) > 0 {
		i := bytes.IndexByte(out, ':')
		if i < 0 {
			return nil, fmt.Errorf("malformed batch output %q", out)
		}
		n, err := strconv.Atoi(string(out[:i]))
		if err != nil || i+1+n > len(out) {
			return nil, fmt.Errorf("malformed batch output at %q", out[:min(len(out), 40)])
		}
		res = append(res, out[i+1:i+1+n])
		out = out[i+1+n:]
	}
	if len(res) != len(exprs) {
		return nil, fmt.Errorf("batch gave %d strings for %d expressions", len(res), len(exprs))
	}
	return res, nil
}

// Parse checks that file is syntactically valid Nix (nix-instantiate --parse).
func Parse(t testing.TB, file string) error {
	t.Helper()
	_, err := run(t, "nix-instantiate", "--parse", file)
	return err
}

// EvalJSON evaluates the Nix file strictly and decodes its JSON value into
// out. (JSON carries valid UTF-8 only; use EvalFileRaw for arbitrary bytes.)
func EvalJSON(t testing.TB, file string, out any) error {
	t.Helper()
	data, err := run(t, "nix-instantiate", "--eval", "--strict", "--json", file)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decoding the value of %s: %w", file, err)
	}
	return nil
}

// EvalFails evaluates the Nix file strictly and expects the evaluation to
// fail; it returns Nix's error output. It is an error when the file
// evaluates.
func EvalFails(t testing.TB, file string) (string, error) {
	t.Helper()
	stdout, stderr, err := start(t, "nix-instantiate", "--eval", "--strict", "--json", file)
	if err == nil {
		return "", fmt.Errorf("%s evaluated without error, to %s", file, bytes.TrimSpace(stdout))
	}
	if _, ok := err.(*exec.ExitError); !ok {
		return "", fmt.Errorf("nix-instantiate %s: %w", file, err)
	}
	return string(stderr), nil
}
