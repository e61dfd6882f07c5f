package claudestate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/hostilefile"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/google/go-cmp/cmp"
)

const key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"

func tail20(k string) string { return k[len(k)-20:] }

func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	return m
}

func TestMergeOfAMissingFileWritesOnlyTheNeededKeys(t *testing.T) {
	home := t.TempDir()
	res, err := Merge(home, Needs{Cwd: "/home/a/proj", APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(File(home))
	want := map[string]any{
		"hasCompletedOnboarding": true,
		"theme":                  "dark",
		"projects":               map[string]any{"/home/a/proj": map[string]any{"hasTrustDialogAccepted": true}},
		"customApiKeyResponses":  map[string]any{"approved": []any{tail20(key)}, "rejected": []any{}},
	}
	if d := cmp.Diff(want, decode(t, data)); d != "" {
		t.Errorf("file (-want +got):\n%s", d)
	}
	if len(res.Changed) != 4 {
		t.Errorf("changed %q, want 4 keys", res.Changed)
	}
	fi, _ := os.Stat(File(home))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600 for a new file", fi.Mode().Perm())
	}
	if _, err := os.Stat(File(home) + ".lock"); !os.IsNotExist(err) {
		t.Errorf("the lock is left behind: %v", err)
	}
}

// A file as Claude writes it, with the user's own keys (an OAuth account,
// an approved key, a project with its history) and odd bytes in strings.
const userFile = `{
  "numStartups": 7,
  "theme": "light",
  "primaryApiKey": "sk-ant-own-\u00e9<&>\"key\"",
  "oauthAccount": {
    "emailAddress": "a@example.com",
    "accountUuid": "0000"
  },
  "hasCompletedOnboarding": true,
  "projects": {
    "/home/a/other": {
      "allowedTools": [],
      "history": [
        {
          "display": "fix <b> & run",
          "pastedContents": {}
        }
      ]
    },
    "/home/a/proj": {
      "hasTrustDialogAccepted": false,
      "mcpServers": {}
    }
  },
  "customApiKeyResponses": {
    "approved": [
      "aaaaaaaaaaaaaaaaaaaa"
    ],
    "rejected": []
  },
  "zzz": null
}
`

func TestMergeKeepsEveryOtherKeyByteForByteAndInOrder(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(File(home), []byte(userFile), 0o644)
	res, err := Merge(home, Needs{Cwd: "/home/a/proj", APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"projects[cwd].hasTrustDialogAccepted", "customApiKeyResponses.approved"}, res.Changed); d != "" {
		t.Errorf("changed (-want +got):\n%s", d)
	}
	got, _ := os.ReadFile(File(home))
	want := strings.Replace(userFile, `"hasTrustDialogAccepted": false`, `"hasTrustDialogAccepted": true`, 1)
	want = strings.Replace(want, "\"aaaaaaaaaaaaaaaaaaaa\"\n", "\"aaaaaaaaaaaaaaaaaaaa\",\n      \""+tail20(key)+"\"\n", 1)
	if string(got) != want {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
	fi, _ := os.Stat(File(home))
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want the file's own 0644", fi.Mode().Perm())
	}
}

func TestMergeWritesNothingWhenNothingIsMissing(t *testing.T) {
	home := t.TempDir()
	if _, err := Merge(home, Needs{Cwd: "/p", APIKey: key}); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(File(home), old, old)
	before, _ := os.ReadFile(File(home))
	res, err := Merge(home, Needs{Cwd: "/p", APIKey: key})
	if err != nil || len(res.Changed) != 0 {
		t.Fatalf("second merge: %v, changed %q", err, res.Changed)
	}
	fi, _ := os.Stat(File(home))
	after, _ := os.ReadFile(File(home))
	if !fi.ModTime().Equal(old) || string(after) != string(before) {
		t.Error("the file was rewritten")
	}
}

func TestARejectedKeyIsReportedAndLeftRejected(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(File(home), []byte(`{"hasCompletedOnboarding":true,"theme":"dark","customApiKeyResponses":{"approved":[],"rejected":["`+tail20(key)+`"]}}`), 0o600)
	res, err := Merge(home, Needs{APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if !res.KeyRejected || len(res.Changed) != 0 {
		t.Errorf("result %+v, want the key reported rejected and nothing changed", res)
	}
}

func TestHostileFilesAreLeftAlone(t *testing.T) {
	limit := int64(contract.Conversations.ClaudeStateMaxBytes)
	plant := map[string]func(t *testing.T, path string){}
	for _, kind := range hostilefile.Kinds {
		plant[kind] = func(t *testing.T, p string) { hostilefile.Plant(t, p, kind, limit, `{"numStartups":1}`) }
	}
	for name, content := range map[string]string{
		"not JSON":                    `{"a":`,
		"a list":                      `[]`,
		"projects not an object":      `{"projects":[1]}`,
		"trailing data":               `{} {}`,
		"approved not a list of text": `{"customApiKeyResponses":{"approved":[1]}}`,
	} {
		plant[name] = func(t *testing.T, p string) { os.WriteFile(p, []byte(content), 0o600) }
	}
	plant["a symbolic link to a regular file"] = func(t *testing.T, p string) {
		target := filepath.Join(filepath.Dir(p), "elsewhere.json")
		os.WriteFile(target, []byte(`{}`), 0o600)
		os.Symlink(target, p)
	}
	for name, make := range plant {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			p := File(home)
			make(t, p)
			before, _ := os.Lstat(p)
			err := hostilefile.Within(t, func() error { _, err := Merge(home, Needs{Cwd: "/p", APIKey: key}); return err })
			if err == nil {
				t.Fatal("merged, want an error")
			}
			after, _ := os.Lstat(p)
			if !after.ModTime().Equal(before.ModTime()) || after.Mode() != before.Mode() || after.Size() != before.Size() {
				t.Error("the file was changed")
			}
			if _, err := os.Lstat(p + ".lock"); !errors.Is(err, os.ErrNotExist) {
				t.Error("the lock is left behind")
			}
		})
	}
}

func TestMergeWaitsForAHeldLockAndReadsTheFileOnlyThen(t *testing.T) {
	home := t.TempDir()
	lockDir := File(home) + ".lock"
	if err := os.Mkdir(lockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(File(home), []byte(`{"a":1}`), 0o600)
	done := make(chan error, 1)
	go func() { _, err := Merge(home, Needs{Cwd: "/p"}); done <- err }()
	time.Sleep(50 * time.Millisecond)
	// The holder (Claude) writes while it holds the lock, then releases.
	os.WriteFile(File(home), []byte(`{"a":2,"b":"claude's"}`), 0o600)
	os.Remove(lockDir)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Merge did not take the released lock")
	}
	m := decode(t, mustRead(t, File(home)))
	if m["a"] != float64(2) || m["b"] != "claude's" || m["hasCompletedOnboarding"] != true {
		t.Errorf("file %v: the holder's write was lost or the merge missing", m)
	}
}

func TestMergeGivesUpOnAFreshLockAndTakesAStaleOne(t *testing.T) {
	defer func(w time.Duration) { LockWait = w }(LockWait)
	LockWait = 100 * time.Millisecond
	home := t.TempDir()
	lockDir := File(home) + ".lock"
	os.Mkdir(lockDir, 0o755)
	if _, err := Merge(home, Needs{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("err %v, want ErrLocked", err)
	}
	if _, err := os.Stat(File(home)); !os.IsNotExist(err) {
		t.Fatal("wrote while the lock was held")
	}
	old := time.Now().Add(-StaleLock - time.Second)
	os.Chtimes(lockDir, old, old)
	if _, err := Merge(home, Needs{}); err != nil {
		t.Fatalf("a stale lock: %v", err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Claude drops "theme" when it holds the default: a file whose onboarding
// is done is not rewritten at every spawn to add it back.
func TestTheThemeIsSetOnlyWithTheOnboarding(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(File(home), []byte(`{"hasCompletedOnboarding":true,"projects":{"/p":{"hasTrustDialogAccepted":true}}}`), 0o600)
	res, err := Merge(home, Needs{Cwd: "/p"})
	if err != nil || len(res.Changed) != 0 {
		t.Errorf("changed %q, %v; want nothing", res.Changed, err)
	}
}
