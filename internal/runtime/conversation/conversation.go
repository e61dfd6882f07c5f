// Package conversation keeps each session's conversation across the deaths of its agent process.
//
// It keeps each session's conversation across the deaths
// of its agent process: which conversation the agent reported last, the
// kickoff prompt until it has reached a conversation, and the decision each
// spawn makes (docs/runtime-contract.md, "Conversations").
//
// One file per session, ~/.local/state/agent-box/conversations/NAME.json
// (Dir), written only through Update (atomicfile: locked, fsynced, renamed),
// so the agent's report (the hook, from inside the agent) and the next spawn
// (exec-session) never lose each other's writes, and a report written just
// before a power cut is there after it.
//
// Invariants:
//   - a spawn resumes the recorded conversation only when its transcript,
//     at the path the agent itself reported, is a non-empty regular file
//     (HasTranscript); otherwise it
//     starts a new conversation and says why (Record.Fresh);
//   - the kickoff prompt is given to a new conversation until a spawn finds
//     a conversation to resume, and never after that;
//   - a report is accepted only from the session's own agent process (see
//     CheckReporter): a conversation that the agent or a login starts with
//     the same program changes nothing.
package conversation

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/atomicfile"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// MaxFileSize is the largest conversation file read or written: the prompt
// at its limit, every byte escaped as \u00XX, and the rest.
func MaxFileSize() int64 { return int64(6*contract.Conversations.PromptMaxBytes + 64<<10) }

const formatVersion = 1

// Record is one session's conversation file.
type Record struct {
	Version int `json:"version"`
	// ID and Transcript are what the agent reported last: its
	// conversation id and the path of its transcript.
	ID         string    `json:"id,omitempty"`
	Transcript string    `json:"transcript,omitempty"`
	Source     string    `json:"source,omitempty"`
	Reported   time.Time `json:"reported,omitzero"`
	// Seen: a spawn found the transcript of ID (something was said in
	// the conversation).
	Seen bool `json:"seen,omitempty"`
	// Prompt is the kickoff prompt while it has not reached a
	// conversation that a spawn could resume.
	Prompt string `json:"prompt,omitempty"`
	// Spawns counts the spawns that read this file; Last is the last
	// spawn's decision.
	Spawns int       `json:"spawns"`
	Last   *Decision `json:"last,omitempty"`
	// Fresh says why the current conversation is a new one although
	// one was recorded (a missing transcript, `restart --fresh`).
	Fresh *Fresh `json:"fresh,omitempty"`
	// WantFresh asks the next spawn for a new conversation.
	WantFresh bool `json:"wantFresh,omitempty"`
	// Notice is what the last spawn found that the person should know
	// (a rejected API key, a ~/.claude.json left alone), or "".
	Notice string `json:"notice,omitempty"`
	// Resume is the prompt the next spawn gives the conversation it
	// resumes (the supervisor's resume after a usage limit); one spawn
	// takes it, resuming or not.
	Resume string `json:"resume,omitempty"`
}

// Fresh is a new conversation started although one was recorded.
type Fresh struct {
	ID     string    `json:"id"` // the new conversation's id, if chosen up front
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Decision is what one spawn does.
type Decision struct {
	Resume bool      `json:"resume"` // continue ID; else start a new conversation
	ID     string    `json:"id"`     // the id resumed, or the id chosen for the new one
	Prompt bool      `json:"prompt"` // the kickoff prompt goes with it
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// Path is the conversation file of session name in dir.
func Path(dir, name string) string { return filepath.Join(dir, name+".json") }

// Load reads a session's record; a missing file is an empty record.
func Load(dir, name string) (Record, error) {
	data, err := userfile.Read(Path(dir, name), MaxFileSize())
	if errors.Is(err, os.ErrNotExist) {
		return Record{Version: formatVersion}, nil
	}
	if err != nil {
		return Record{}, err
	}
	return parse(Path(dir, name), data)
}

func parse(path string, data []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, fmt.Errorf("conversation file %q: %w", path, err)
	}
	if r.Version != formatVersion {
		return Record{}, fmt.Errorf("conversation file %q: unsupported version %d (want %d)", path, r.Version, formatVersion)
	}
	return r, nil
}

// Update changes a session's record under its lock. A file that cannot be
// parsed is replaced by what fn makes of an empty record: it holds nothing
// that cannot be rebuilt (the worst loss is one resume).
func Update(ctx context.Context, dir, name string, fn func(*Record) error) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	path := Path(dir, name)
	return atomicfile.Update(ctx, path, 0o600, MaxFileSize(), func(old []byte, exists bool) ([]byte, error) {
		r := Record{Version: formatVersion}
		if exists {
			if p, err := parse(path, old); err == nil {
				r = p
			}
		}
		if err := fn(&r); err != nil {
			return nil, err
		}
		r.Version = formatVersion
		data, err := json.MarshalIndent(&r, "", "  ")
		if err != nil {
			return nil, err
		}
		data = append(data, '\n')
		if bytes.Equal(data, old) {
			return nil, atomicfile.ErrNoChange
		}
		return data, nil
	})
}

// Reset starts a session's record anew (a session was added): no
// conversation, and prompt to give to the first one.
func Reset(ctx context.Context, dir, name, prompt string) error {
	return Update(ctx, dir, name, func(r *Record) error {
		*r = Record{Prompt: prompt}
		return nil
	})
}

// Seed gives a seeded session its prompt unless the session has a record
// already: a registry rebuilt from the seed keeps every conversation.
func Seed(ctx context.Context, dir, name, prompt string) error {
	if prompt == "" {
		return nil
	}
	if _, err := os.Lstat(Path(dir, name)); err == nil {
		return nil
	}
	return Update(ctx, dir, name, func(r *Record) error {
		if r.Spawns == 0 && r.ID == "" {
			r.Prompt = prompt
		}
		return nil
	})
}

// Remove deletes a session's record and its lock file (the session was
// removed: a new session of the same name starts its own conversation).
func Remove(dir, name string) error {
	p := Path(dir, name)
	err := os.Remove(p)
	os.Remove(p + ".lock")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// CheckPrompt validates a kickoff prompt against the contract's limit.
func CheckPrompt(p string) error {
	if max := contract.Conversations.PromptMaxBytes; len(p) > max {
		return fmt.Errorf("the prompt is %d bytes, more than %d", len(p), max)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return errors.New("the prompt holds a NUL byte (an argument cannot)")
	}
	return nil
}

// Decide is the spawn's decision on r. gone says why the conversation id
// cannot be resumed from what its agent reported (transcript: the path in
// the report), "" when it can (TranscriptGone, or an agent's own lookup);
// newID makes a conversation id ("" for an agent that chooses its own). It
// updates r: the spawn count, the decision, the conversation a new start
// will have (its id, if chosen up front), Fresh, and the prompt (dropped
// once a conversation is resumed).
//
// A conversation whose transcript no spawn has found yet (Claude Code
// writes it at the first message) had nothing said in it: it starts again
// under the same id, without a note; so does one the agent never reported
// (an agent that chooses its ids and reports at its first turn). One whose transcript a spawn found
// and is gone now starts afresh, and Fresh says why.
func Decide(r *Record, gone func(id, transcript string) string, newID func() string, now time.Time) Decision {
	r.Spawns++
	why := ""
	if r.ID != "" && !r.WantFresh {
		why = TranscriptGone(r.ID, "") // no transcript reported
		if r.Transcript != "" {
			why = gone(r.ID, r.Transcript)
		}
	}
	var d Decision
	switch {
	case r.WantFresh:
		d.Reason = "a new conversation was asked for (restart --fresh)"
	case r.ID != "" && why == "":
		d = Decision{Resume: true, ID: r.ID}
	case r.ID != "" && r.Seen:
		d.Reason = why
	case r.ID != "":
		d.ID = r.ID // nothing was said in it yet
	}
	// No id: the first spawn, or an agent that chooses its own ids and
	// reported none (Codex reports at its first turn): nothing was said,
	// nothing is lost.
	d.At = now
	r.WantFresh = false
	if d.Resume {
		r.Seen = true
		r.Prompt = ""
	} else {
		if d.ID == "" {
			d.ID = newID()
		}
		// The recorded conversation is left behind (its transcript stays
		// where the agent keeps it); the new one reports itself.
		r.ID, r.Transcript, r.Source, r.Seen = d.ID, "", "", false
		d.Prompt = r.Prompt != ""
		if d.Reason != "" {
			r.Fresh = &Fresh{ID: d.ID, Reason: d.Reason, At: now}
		}
	}
	r.Last = &d
	return d
}

// FreshNote is what `session ls` says about r: why its conversation is a
// new one, while that conversation is the session's; else "".
func (r Record) FreshNote() string {
	if r.Fresh == nil {
		return ""
	}
	if r.ID != "" && r.Fresh.ID != "" && r.ID != r.Fresh.ID {
		return "" // the agent moved on (/clear, /resume): not the fresh one
	}
	return "started fresh: " + r.Fresh.Reason
}

// NewID returns a random version-4 UUID, the form Claude Code takes for
// --session-id.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// TranscriptGone is Decide's gone for an agent that keeps a conversation
// as one file: "" while HasTranscript(transcript), else why not.
func TranscriptGone(id, transcript string) string {
	if HasTranscript(transcript) {
		return ""
	}
	return fmt.Sprintf("the transcript %s of conversation %s is missing", escape.Quote(transcript, 200), escape.Quote(id, 64))
}

// HasTranscript reports whether path names a transcript to resume: a
// regular file (no symbolic link at its end) of at least one byte. An
// empty one (a power cut before the agent's data reached the disk) would
// make the agent refuse the resume and exit at once, at every spawn.
func HasTranscript(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Size() > 0
}
