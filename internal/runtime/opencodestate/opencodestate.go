// Package opencodestate answers whether OpenCode still holds a session, so
// that a spawn resumes it only then (docs/runtime-contract.md, "OpenCode").
//
// OpenCode keeps its sessions as rows of one SQLite database (measured
// with 1.18.33: ~/.local/share/opencode/opencode.db, table session, column
// id), not as a file per conversation; `opencode --session ID` with an id
// the database lacks prints "Session not found" and exits 1, so resuming a
// deleted session would fail at every spawn. The database is read with the
// sqlite3 program, read-only, never written.
package opencodestate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/conversation"
)

// Timeout bounds one lookup (a database another OpenCode holds locked).
const Timeout = 5 * time.Second

// Has reports whether the OpenCode database at db holds session id. A
// missing database, or one that is not a regular file, holds nothing. An
// error says the answer is unknown: no sqlite3 program, a database it
// cannot read, or one without OpenCode's session table.
func Has(ctx context.Context, sqlite3, db, id string) (bool, error) {
	if !conversation.ValidID(id) {
		return false, fmt.Errorf("%q is not an OpenCode session id", id)
	}
	fi, err := os.Lstat(db)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() || fi.Size() == 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	// -init /dev/null: the user's ~/.sqliterc is not read.
	cmd := exec.CommandContext(ctx, sqlite3, "-readonly", "-batch", "-bail", "-noheader", "-init", "/dev/null",
		db, "SELECT count(*) FROM session WHERE id = '"+id+"';")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return false, fmt.Errorf("reading %s with %s: %v: %s", db, sqlite3, err, msg)
	}
	switch out := strings.TrimSpace(stdout.String()); out {
	case "0":
		return false, nil
	case "1":
		return true, nil
	default:
		return false, fmt.Errorf("reading %s: unexpected answer %q", db, out)
	}
}
