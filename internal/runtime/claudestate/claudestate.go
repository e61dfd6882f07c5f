// Package claudestate merges into ~/.claude.json the few keys that let Claude Code start headless.
//
// It merges into ~/.claude.json the few keys that let
// Claude Code start headless (docs/runtime-contract.md, "Claude Code"):
// onboarding done (with a theme), the session's folder trusted, and the API key
// in the environment approved unless the user rejected it.
//
// Claude Code owns the file. It writes it under a lock (measured with
// 2.1.328): mkdir "~/.claude.json.lock" (a directory), read, write
// "~/.claude.json.tmp.<pid>.<hex>", rename over the file, rmdir the lock;
// when the lock stays taken it retries for about 1.5 s and then writes
// anyway. Merge follows the same protocol and holds the lock for
// milliseconds:
//   - the file is read only once the lock is held;
//   - every key and value the merge does not need is kept as it was: the
//     same order, the same bytes (whitespace is re-indented as Claude
//     writes it, two spaces);
//   - nothing is written when nothing is missing;
//   - a file that is not a regular file (a FIFO, a symbolic link, a
//     directory), is over the contract's size, or is not a JSON object
//     whose needed parts are objects, is left alone: Merge returns an
//     error saying why, and the agent starts without the merge.
package claudestate

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
)

// Needs is what one spawn needs in the file.
type Needs struct {
	Cwd    string // the session's working directory: trusted
	APIKey string // ANTHROPIC_API_KEY of the spawn, or ""
}

// Result says what Merge did.
type Result struct {
	Changed []string // the keys set, for the log
	// KeyRejected: the API key in the environment is one the user
	// rejected in Claude's dialog; Merge left that choice alone.
	KeyRejected bool
}

// Lock timing: how long Merge waits for Claude's lock, how often it
// looks, and the age after which a lock is stale (proper-lockfile's
// default, which Claude uses: a holder refreshes its lock's mtime).
var (
	LockWait  = 2 * time.Second
	lockPoll  = 10 * time.Millisecond
	StaleLock = 10 * time.Second
)

// ErrLocked: the lock was held, fresh, for all of LockWait.
var ErrLocked = errors.New("~/.claude.json is locked by another writer")

// File is ~/.claude.json in home.
func File(home string) string { return filepath.Join(home, ".claude.json") }

// Merge adds what n needs to ~/.claude.json in home.
func Merge(home string, n Needs) (Result, error) {
	path := File(home)
	unlock, err := lock(path + ".lock")
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	old, mode, err := read(path)
	if err != nil {
		return Result{}, err
	}
	doc := old
	if doc == nil {
		doc = []byte("{}")
	}
	out, res, err := merge(doc, n)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", escape.Quote(path, 200), err)
	}
	if len(res.Changed) == 0 {
		return res, nil
	}
	if err := write(path, out, mode); err != nil {
		return Result{}, err
	}
	return res, nil
}

// lock takes Claude's directory lock.
func lock(lockPath string) (func(), error) {
	deadline := time.Now().Add(LockWait)
	for {
		err := os.Mkdir(lockPath, 0o700)
		if err == nil {
			return func() { os.Remove(lockPath) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", escape.Quote(lockPath, 200), err)
		}
		if fi, err := os.Lstat(lockPath); err == nil && fi.IsDir() && time.Since(fi.ModTime()) > StaleLock {
			os.Remove(lockPath) // stale: its holder is gone (as proper-lockfile decides)
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w (%s held for %s)", ErrLocked, escape.Quote(lockPath, 200), LockWait)
		}
		time.Sleep(lockPoll)
	}
}

// read returns the file's bytes (nil when missing) and mode, refusing
// what is not a regular file of at most the contract's size.
func read(path string) ([]byte, fs.FileMode, error) {
	max := int64(contract.Conversations.ClaudeStateMaxBytes)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o600, nil
	}
	if errors.Is(err, syscall.ELOOP) {
		return nil, 0, fmt.Errorf("%s is a symbolic link: left alone", escape.Quote(path, 200))
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file (%s): left alone", escape.Quote(path, 200), fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, 0, err
	}
	if int64(len(data)) > max {
		return nil, 0, fmt.Errorf("%s holds more than %d bytes: left alone", escape.Quote(path, 200), max)
	}
	return data, fi.Mode().Perm(), nil
}

// write replaces the file as Claude does (a temp file beside it, renamed),
// synced first.
func write(path string, data []byte, mode fs.FileMode) error {
	var r [6]byte
	rand.Read(r[:])
	tmp := path + ".tmp." + strconv.Itoa(os.Getpid()) + "." + hex.EncodeToString(r[:])
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// merge edits the document.
func merge(doc []byte, n Needs) ([]byte, Result, error) {
	var res Result
	top, err := parseObject(doc)
	if err != nil {
		return nil, res, fmt.Errorf("not a JSON object: %w", err)
	}
	set := func(o *object, key string, val string, what string) {
		if o.get(key) == nil {
			o.set(key, json.RawMessage(val))
			res.Changed = append(res.Changed, what)
		}
	}
	if v := top.get("hasCompletedOnboarding"); v == nil || string(bytes.TrimSpace(v)) != "true" {
		top.set("hasCompletedOnboarding", json.RawMessage("true"))
		res.Changed = append(res.Changed, "hasCompletedOnboarding")
		// The onboarding chooses a theme; Claude drops the key later when
		// it holds the default, so it is set only with the onboarding.
		set(top, "theme", `"dark"`, "theme")
	}
	if n.Cwd != "" {
		projects, err := child(top, "projects")
		if err != nil {
			return nil, res, err
		}
		project, err := child(projects, n.Cwd)
		if err != nil {
			return nil, res, fmt.Errorf("projects: %w", err)
		}
		if v := project.get("hasTrustDialogAccepted"); v == nil || string(bytes.TrimSpace(v)) != "true" {
			project.set("hasTrustDialogAccepted", json.RawMessage("true"))
			res.Changed = append(res.Changed, "projects[cwd].hasTrustDialogAccepted")
		}
		projects.set(n.Cwd, project.marshal())
		top.set("projects", projects.marshal())
	}
	if len(n.APIKey) >= 20 {
		tail := n.APIKey[len(n.APIKey)-20:]
		responses, err := child(top, "customApiKeyResponses")
		if err != nil {
			return nil, res, err
		}
		approved, err := stringList(responses.get("approved"))
		if err != nil {
			return nil, res, fmt.Errorf("customApiKeyResponses.approved: %w", err)
		}
		rejected, err := stringList(responses.get("rejected"))
		if err != nil {
			return nil, res, fmt.Errorf("customApiKeyResponses.rejected: %w", err)
		}
		switch {
		case contains(rejected, tail):
			res.KeyRejected = true
		case !contains(approved, tail):
			approved = append(approved, tail)
			responses.set("approved", mustJSON(approved))
			if responses.get("rejected") == nil {
				responses.set("rejected", json.RawMessage("[]"))
			}
			top.set("customApiKeyResponses", responses.marshal())
			res.Changed = append(res.Changed, "customApiKeyResponses.approved")
		}
	}
	if len(res.Changed) == 0 {
		return doc, res, nil
	}
	var out bytes.Buffer
	if err := json.Indent(&out, top.marshal(), "", "  "); err != nil {
		return nil, res, err
	}
	out.WriteByte('\n')
	return out.Bytes(), res, nil
}

// child returns o[key] as an object (a new one when missing); a value of
// another type is an error: the file is not what Claude writes.
func child(o *object, key string) (*object, error) {
	v := o.get(key)
	if v == nil {
		return &object{}, nil
	}
	c, err := parseObject(v)
	if err != nil {
		return nil, fmt.Errorf("%s is not an object", escape.Quote(key, 200))
	}
	return c, nil
}

func stringList(v json.RawMessage) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	var l []string
	if err := json.Unmarshal(v, &l); err != nil {
		return nil, errors.New("not a list of strings")
	}
	return l, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// mustJSON encodes v as Claude (JSON.stringify) does: '<', '>' and '&'
// as they are.
func mustJSON(v any) json.RawMessage {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		panic(err) // only strings
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// object is a JSON object that keeps its keys' order and its values'
// bytes.
type object struct {
	keys []string
	vals []json.RawMessage
}

func parseObject(data []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not an object")
	}
	o := &object{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, ok := t.(string)
		if !ok {
			return nil, errors.New("a key is not a string")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o.keys, o.vals = append(o.keys, k), append(o.vals, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the object")
	}
	return o, nil
}

// get returns the value of key (the last one, as JSON.parse reads a
// repeated key), or nil.
func (o *object) get(key string) json.RawMessage {
	for i := len(o.keys) - 1; i >= 0; i-- {
		if o.keys[i] == key {
			return o.vals[i]
		}
	}
	return nil
}

func (o *object) set(key string, v json.RawMessage) {
	for i := len(o.keys) - 1; i >= 0; i-- {
		if o.keys[i] == key {
			o.vals[i] = v
			return
		}
	}
	o.keys, o.vals = append(o.keys, key), append(o.vals, v)
}

func (o *object) marshal() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(mustJSON(k))
		b.WriteByte(':')
		b.Write(o.vals[i])
	}
	b.WriteByte('}')
	return b.Bytes()
}
