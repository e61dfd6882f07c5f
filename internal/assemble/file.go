package assemble

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agent-box/agent-box/internal/textdiff"
)

// WriteFile writes data to name atomically: a temporary file in the same
// directory, synced, then renamed over name. On error name is untouched.
func WriteFile(name string, data []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %q: %w", name, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %q: %w", name, err)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write %q: %w", name, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write %q: %w", name, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %q: %w", name, err)
	}
	if err = os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("write %q: %w", name, err)
	}
	return nil
}

// Staleness compares freshly assembled bytes with the file at name. It
// returns "" when the file is current, and otherwise an explanation (a
// unified diff from the file to the fresh bytes, or words). A missing file
// is stale. This is the one check behind -check and the freshness test.
func Staleness(name string, fresh []byte) (string, error) {
	committed, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("%s does not exist\n", name), nil
	}
	if err != nil {
		return "", fmt.Errorf("check %q: %w", name, err)
	}
	return textdiff.Explain(name, name+" (regenerated)", committed, fresh), nil
}
