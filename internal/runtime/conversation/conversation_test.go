package conversation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func ids(list ...string) func() string {
	i := 0
	return func() string { i++; return list[i-1] }
}

// The resume decision, one row per situation a spawn meets.
func TestDecide(t *testing.T) {
	const tr = "/home/a/.claude/projects/-home-a/c1.jsonl"
	cases := []struct {
		name       string
		rec        Record
		exists     bool
		gone       string // why the lookup says it cannot be resumed
		want       Decision
		wantPrompt string // the prompt left in the record
		wantFresh  string // FreshNote after
	}{
		{name: "the first spawn starts a new conversation with the prompt",
			rec: Record{Prompt: "build it"}, want: Decision{ID: "n1", Prompt: true}, wantPrompt: "build it"},
		{name: "a reported conversation whose transcript exists is resumed, and the prompt dropped",
			rec: Record{ID: "c1", Transcript: tr, Prompt: "build it", Spawns: 1}, exists: true,
			want: Decision{Resume: true, ID: "c1"}},
		{name: "a conversation a spawn had found that cannot be resumed now starts a new one and says why",
			rec: Record{ID: "c1", Transcript: tr, Spawns: 3, Seen: true}, gone: "the record of c1 is gone",
			want:      Decision{ID: "n1", Reason: "the record of c1 is gone"},
			wantFresh: "started fresh: the record of c1 is gone"},
		{name: "a conversation in which nothing was said starts again under its id, quietly",
			rec: Record{ID: "c1", Transcript: tr, Spawns: 2}, gone: "the record of c1 is gone",
			want: Decision{ID: "c1"}},
		{name: "a first spawn that died before its transcript existed gives the prompt again, same id",
			rec: Record{ID: "c1", Prompt: "build it", Spawns: 1}, want: Decision{ID: "c1", Prompt: true},
			wantPrompt: "build it"},
		{name: "an agent that chooses its own id and ended before reporting starts a new conversation, quietly",
			rec: Record{Spawns: 1}, want: Decision{ID: "n1"}},
		{name: "... and gets the prompt again",
			rec: Record{Spawns: 1, Prompt: "build it"}, want: Decision{ID: "n1", Prompt: true}, wantPrompt: "build it"},
		{name: "restart --fresh starts a new conversation although the transcript exists",
			rec: Record{ID: "c1", Transcript: tr, Spawns: 2, WantFresh: true}, exists: true,
			want:      Decision{ID: "n1", Reason: "a new conversation was asked for (restart --fresh)"},
			wantFresh: "started fresh: a new conversation was asked for (restart --fresh)"},
		{name: "a recorded id without a transcript path is not resumed",
			rec: Record{ID: "c1", Spawns: 1, Seen: true}, exists: true,
			want:      Decision{ID: "n1", Reason: `the transcript "" of conversation "c1" is missing`},
			wantFresh: `started fresh: the transcript "" of conversation "c1" is missing`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.rec
			var asked []string
			gone := func(id, p string) string {
				asked = append(asked, p)
				if c.exists {
					return ""
				}
				return c.gone
			}
			d := Decide(&r, gone, ids("n1"), t0)
			c.want.At = t0
			if diff := cmp.Diff(c.want, d); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
			for _, p := range asked {
				if p != c.rec.Transcript {
					t.Errorf("looked at %q, not the reported transcript %q", p, c.rec.Transcript)
				}
			}
			if r.Prompt != c.wantPrompt {
				t.Errorf("prompt left %q, want %q", r.Prompt, c.wantPrompt)
			}
			if r.WantFresh {
				t.Error("WantFresh survives the spawn")
			}
			if r.Spawns != c.rec.Spawns+1 {
				t.Errorf("spawns %d, want %d", r.Spawns, c.rec.Spawns+1)
			}
			if got := r.FreshNote(); got != c.wantFresh {
				t.Errorf("note %q, want %q", got, c.wantFresh)
			}
		})
	}
}

func TestTheFreshNoteEndsWhenTheAgentMovesToAnotherConversation(t *testing.T) {
	r := Record{ID: "c1", Transcript: "/gone", Spawns: 1, Seen: true}
	Decide(&r, TranscriptGone, ids("n1"), t0)
	r.ID = "n1" // the new conversation reports itself
	if r.FreshNote() == "" {
		t.Fatal("no note while the fresh conversation is current")
	}
	r.ID = "c9" // /clear
	if n := r.FreshNote(); n != "" {
		t.Errorf("note %q after /clear", n)
	}
}

type procs map[int]struct {
	ppid int
	exe  string
}

func (p procs) PPid(pid int) (int, error) {
	if e, ok := p[pid]; ok {
		return e.ppid, nil
	}
	return 0, os.ErrNotExist
}

func (p procs) Exe(pid int) (string, error) {
	if e, ok := p[pid]; ok {
		return e.exe, nil
	}
	return "", os.ErrNotExist
}

func TestCheckReporterAcceptsOnlyTheSessionsOwnAgent(t *testing.T) {
	const claude, bash, wrapper = "/nix/store/x-claude/bin/claude", "/bin/bash", "/bin/dash"
	cases := []struct {
		name string
		p    procs
		ok   bool
	}{
		{"the hook's parent is the pane's agent", procs{100: {1, claude}, 200: {100, "/ab"}}, true},
		{"the agent is a child of a wrapper in the pane", procs{100: {1, wrapper}, 150: {100, claude}, 200: {150, "/ab"}}, true},
		{"a claude -p that the agent's shell tool started", procs{100: {1, claude}, 150: {100, bash}, 160: {150, claude}, 200: {160, "/ab"}}, false},
		{"a claude -p execed by the agent's shell tool (a child running the pane's program)", procs{100: {1, claude}, 160: {100, claude}, 200: {160, "/ab"}}, false},
		{"a claude of an SSH login", procs{100: {1, claude}, 300: {1, "/usr/sbin/sshd"}, 310: {300, claude}, 200: {310, "/ab"}}, false},
		{"the parent is gone", procs{200: {999, "/ab"}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckReporter(c.p, 200, 100)
			if c.ok && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !c.ok && !errors.Is(err, ErrNotOurs) {
				t.Errorf("err %v, want ErrNotOurs", err)
			}
		})
	}
}

func TestReadReportValidates(t *testing.T) {
	good := `{"session_id":"88dab212-a1d7-4a6b-9fad-d81892c03884","transcript_path":"/home/a/.claude/projects/-home-a/88dab212-a1d7-4a6b-9fad-d81892c03884.jsonl","cwd":"/home/a","hook_event_name":"SessionStart","source":"startup","model":"m"}`
	r, err := ReadReport(strings.NewReader(good))
	if err != nil || r.SessionID != "88dab212-a1d7-4a6b-9fad-d81892c03884" || r.Source != "startup" {
		t.Fatalf("good report: %+v %v", r, err)
	}
	for name, in := range map[string]string{
		"not JSON":             `{`,
		"an id with a slash":   `{"session_id":"../x","transcript_path":"/t"}`,
		"no id":                `{"transcript_path":"/t"}`,
		"a relative path":      `{"session_id":"a","transcript_path":"t.jsonl"}`,
		"over the limit":       `{"session_id":"a","transcript_path":"/t","pad":"` + strings.Repeat("x", 70000) + `"}`,
		"an id over 128 bytes": `{"session_id":"` + strings.Repeat("a", 129) + `","transcript_path":"/t"}`,
	} {
		if _, err := ReadReport(strings.NewReader(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func testEnv(t *testing.T) paths.Env {
	home := t.TempDir()
	e, err := paths.FromEnv(func(k string) string {
		return map[string]string{"HOME": home, "AGENT_BOX_RUNTIME_DIR": filepath.Join(home, "run")}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestAcceptRecordsTheReportOfTheSessionsAgentOnly(t *testing.T) {
	e := testEnv(t)
	ctx := context.Background()
	rep := Report{SessionID: "c1", TranscriptPath: "/t/c1.jsonl", Source: "startup"}
	env := map[string]string{"AGENT_BOX_SESSION": "main", "AGENT_BOX_AGENT_PID": "100"}
	p := procs{100: {1, "/claude"}, 200: {100, "/ab"}, 300: {150, "/ab"}, 150: {100, "/claude"}}
	if _, err := Accept(ctx, func(k string) string { return env[k] }, e, p, 300, rep, t0); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("a nested claude's report: %v", err)
	}
	if _, err := os.Stat(Path(e.ConversationsDir(), "main")); !os.IsNotExist(err) {
		t.Fatal("a refused report wrote the file")
	}
	if _, err := Accept(ctx, func(k string) string { return env[k] }, e, p, 200, rep, t0); err != nil {
		t.Fatal(err)
	}
	r, err := Load(e.ConversationsDir(), "main")
	if err != nil || r.ID != "c1" || r.Transcript != "/t/c1.jsonl" || !r.Reported.Equal(t0) {
		t.Fatalf("record %+v, %v", r, err)
	}
	if _, err := Accept(ctx, func(string) string { return "" }, e, p, 200, rep, t0); !errors.Is(err, ErrNotOurs) {
		t.Errorf("outside a session: %v", err)
	}
	env["AGENT_BOX_SESSION"] = "../x"
	if _, err := Accept(ctx, func(k string) string { return env[k] }, e, p, 200, rep, t0); !errors.Is(err, ErrNotOurs) {
		t.Errorf("a session name that is a path: %v", err)
	}
}

func TestConcurrentReportsAndSpawnsLoseNothing(t *testing.T) {
	e := testEnv(t)
	dir := e.ConversationsDir()
	ctx := context.Background()
	if err := Reset(ctx, dir, "s", "go"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			Update(ctx, dir, "s", func(r *Record) error { r.ID, r.Transcript = "c"+strconv.Itoa(i), "/t"; return nil })
		}()
		go func() {
			defer wg.Done()
			Update(ctx, dir, "s", func(r *Record) error { r.Spawns++; return nil })
		}()
	}
	wg.Wait()
	r, err := Load(dir, "s")
	if err != nil || r.Spawns != 20 || r.ID == "" || r.Prompt != "go" {
		t.Errorf("record %+v, %v: want 20 spawns, an id and the prompt", r, err)
	}
}

func TestAnUnreadableFileIsStartedAnew(t *testing.T) {
	e := testEnv(t)
	dir := e.ConversationsDir()
	os.MkdirAll(dir, 0o700)
	os.WriteFile(Path(dir, "s"), []byte("{garbage"), 0o600)
	if _, err := Load(dir, "s"); err == nil {
		t.Fatal("Load accepted garbage")
	}
	if err := Update(context.Background(), dir, "s", func(r *Record) error { r.Spawns = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	if r, err := Load(dir, "s"); err != nil || r.Spawns != 1 {
		t.Errorf("%+v %v", r, err)
	}
}

func TestNewIDIsAVersion4UUID(t *testing.T) {
	id := NewID()
	if len(id) != 36 || id[14] != '4' || !strings.Contains("89ab", string(id[19])) {
		t.Errorf("%q is not a version-4 UUID", id)
	}
}

func TestHasTranscriptWantsANonEmptyRegularFile(t *testing.T) {
	dir := t.TempDir()
	full, empty, link := filepath.Join(dir, "full"), filepath.Join(dir, "empty"), filepath.Join(dir, "link")
	os.WriteFile(full, []byte("{}\n"), 0o600)
	os.WriteFile(empty, nil, 0o600)
	os.Symlink(full, link)
	for p, want := range map[string]bool{full: true, empty: false, link: false, dir: false, filepath.Join(dir, "none"): false} {
		if got := HasTranscript(p); got != want {
			t.Errorf("HasTranscript(%s) = %v, want %v", filepath.Base(p), got, want)
		}
	}
}

func TestAFreshNoteFollowsTheIDAnAgentChoseUntilItMovesOn(t *testing.T) {
	e := testEnv(t)
	ctx := context.Background()
	dir := e.ConversationsDir()
	// A Codex-like agent (no newArgs) whose transcript went missing.
	Update(ctx, dir, "main", func(r *Record) error {
		*r = Record{ID: "c1", Transcript: "/gone", Seen: true, Spawns: 2}
		Decide(r, TranscriptGone, func() string { return "" }, t0)
		return nil
	})
	env := map[string]string{"AGENT_BOX_SESSION": "main", "AGENT_BOX_AGENT_PID": "100"}
	p := procs{100: {1, "/codex"}, 200: {100, "/ab"}}
	report := func(id string) string {
		t.Helper()
		if _, err := Accept(ctx, func(k string) string { return env[k] }, e, p, 200, Report{SessionID: id, TranscriptPath: "/t/" + id}, t0); err != nil {
			t.Fatal(err)
		}
		r, _ := Load(dir, "main")
		return r.FreshNote()
	}
	if note := report("c2"); !strings.Contains(note, "started fresh: the transcript") {
		t.Errorf("after the new conversation's first report: note %q", note)
	}
	if note := report("c2"); note == "" {
		t.Error("a second report of the same conversation dropped the note")
	}
	if note := report("c3"); note != "" {
		t.Errorf("after the agent moved on: note %q", note)
	}
}

func TestTranscriptGoneSaysWhichTranscriptIsMissing(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "c1.jsonl")
	want := `the transcript "` + tr + `" of conversation "c1" is missing`
	if got := TranscriptGone("c1", tr); got != want {
		t.Errorf("missing: %q, want %q", got, want)
	}
	os.WriteFile(tr, []byte("{}\n"), 0o600)
	if got := TranscriptGone("c1", tr); got != "" {
		t.Errorf("present: %q, want \"\"", got)
	}
}
