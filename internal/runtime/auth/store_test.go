package auth

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/hostilefile"
	"github.com/agent-box/agent-box/internal/runtime/loginlimit"
)

// TestSessionsSurviveARestart: a new Server on the same state directory
// knows the sessions; the file is 0600 and holds no secret.
func TestSessionsSurviveARestart(t *testing.T) {
	w := newTW(t)
	f := w.family()
	w.restart(testConfig)
	if w.verifyCode("alice", f.alice) != 204 || w.verifyCode("bob", f.bob) != 204 {
		t.Error("the children did not survive the restart")
	}
	rec := w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{f.box}})
	if !strings.Contains(rec.Body.String(), "Logged in as ops") {
		t.Error("the box session did not survive the restart")
	}
	p := filepath.Join(w.dir, "sessions.json")
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("sessions.json: %v %v", fi.Mode(), err)
	}
	data, _ := os.ReadFile(p)
	for _, c := range []string{f.box, f.alice, f.bob} {
		id, secret, _ := strings.Cut(c, ".")
		if strings.Contains(string(data), secret) {
			t.Errorf("the secret of %s is on disk", id)
		}
		if !strings.Contains(string(data), secretHash(secret)) || !strings.Contains(string(data), `"id": "`+id+`"`) {
			t.Errorf("the id or sha256(secret) of %s is not on disk", id)
		}
	}
	st := w.readState()
	byID := map[string]Session{}
	for _, s := range st.Sessions {
		byID[s.ID] = s
	}
	want := Session{ID: idOf(f.alice), Login: "ops", Origin: "alice", Parent: idOf(f.box), Created: t0, Expires: t0.Add(2 * time.Hour), LastSeen: t0}
	got := byID[idOf(f.alice)]
	got.SHA256 = ""
	if !got.Created.Equal(want.Created) || got.Login != want.Login || got.Origin != want.Origin || got.Parent != want.Parent || !got.Expires.Equal(want.Expires) {
		t.Errorf("stored child %+v, want %+v", got, want)
	}
	if b := byID[idOf(f.box)]; b.Origin != "" || b.Parent != "" || b.Login != "ops" {
		t.Errorf("stored box session %+v", b)
	}
}

// TestLastSeenIsWrittenAtMostOnceAMinute, but a logout at once.
func TestLastSeenIsWrittenAtMostOnceAMinute(t *testing.T) {
	w := newTW(t)
	f := w.family()
	lastSeen := func() time.Time {
		for _, s := range w.readState().Sessions {
			if s.ID == idOf(f.alice) {
				return s.LastSeen
			}
		}
		t.Fatal("alice's child is not on disk")
		return time.Time{}
	}
	w.clock.Advance(30 * time.Second)
	w.verifyCode("alice", f.alice)
	if got := lastSeen(); !got.Equal(t0) {
		t.Errorf("30 s after the last write: lastSeen %s on disk, want %s", got, t0)
	}
	w.clock.Advance(31 * time.Second)
	w.verifyCode("alice", f.alice)
	if got, want := lastSeen(), t0.Add(61*time.Second); !got.Equal(want) {
		t.Errorf("61 s on: lastSeen %s on disk, want %s", got, want)
	}
	w.clock.Advance(10 * time.Second)
	w.verifyCode("alice", f.alice)
	if got, want := lastSeen(), t0.Add(61*time.Second); !got.Equal(want) {
		t.Errorf("10 s after that write: %s, want %s", got, want)
	}
	w.pages(rq{method: "POST", host: "box.test", target: "/auth/logout", cookies: []string{f.box}})
	if n := len(w.readState().Sessions); n != 0 {
		t.Errorf("right after the logout, %d sessions on disk", n)
	}
}

// TestAConfigurationChangeEndsSessions when the service starts with it.
func TestAConfigurationChangeEndsSessions(t *testing.T) {
	const (
		opsAliceOnly = `{"domain": "box.test", "users": ["alice", "bob"], "logins": {"ops": {"users": ["bob"]}, "al": {"users": ["alice"]}}, "sessionLifetime": "2h0m0s", "idleTimeout": "1h0m0s"}`
		noOps        = `{"domain": "box.test", "users": ["alice", "bob"], "logins": {"al": {"users": ["alice"]}}, "sessionLifetime": "2h0m0s", "idleTimeout": "1h0m0s"}`
		noAlice      = `{"domain": "box.test", "users": ["bob"], "logins": {"ops": {"users": ["bob"]}, "al": {"users": []}}, "sessionLifetime": "2h0m0s", "idleTimeout": "1h0m0s"}`
	)
	type alive struct{ opsBox, opsAlice, opsBob, alBox, alAlice bool }
	for _, tc := range []struct {
		name    string
		config  string
		newHash string // a login whose password hash changes
		want    alive
		ended   int
	}{
		{"unchanged", testConfig, "", alive{true, true, true, true, true}, 0},
		{"a user removed from a login", opsAliceOnly, "", alive{true, false, true, true, true}, 1},
		{"a login removed", noOps, "", alive{false, false, false, true, true}, 3},
		{"a user removed", noAlice, "", alive{true, false, true, true, false}, 2},
		{"a password changed", testConfig, "ops", alive{false, false, false, true, true}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTW(t)
			ops := w.family()
			alBox := w.login("al")
			alAlice := w.child(alBox, "alice")
			if tc.newHash != "" {
				w.hashes[tc.newHash] = fastHash("new password")
			}
			w.log.Reset()
			w.restart(tc.config)
			boxAlive := func(c string) bool {
				return strings.Contains(w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{c}}).Body.String(), "Logged in")
			}
			got := alive{
				opsBox: boxAlive(ops.box), opsAlice: w.verifyCode("alice", ops.alice) == 204, opsBob: w.verifyCode("bob", ops.bob) == 204,
				alBox: boxAlive(alBox), alAlice: w.verifyCode("alice", alAlice) == 204,
			}
			if got != tc.want {
				t.Errorf("alive %+v, want %+v", got, tc.want)
			}
			wantLog := ""
			if tc.ended > 0 {
				wantLog = "agent-box-auth: ended " + strconv.Itoa(tc.ended) + " sessions the configuration no longer allows\n"
			}
			if w.log.String() != wantLog {
				t.Errorf("logged %q, want %q", w.log.String(), wantLog)
			}
			if n := len(w.readState().Sessions); n != 5-tc.ended {
				t.Errorf("%d sessions on disk, want %d", n, 5-tc.ended)
			}
		})
	}
}

// TestAnUnreadableStateFileStartsEmpty: everyone logs in again, the
// service starts, nothing hangs.
func TestAnUnreadableStateFileStartsEmpty(t *testing.T) {
	for _, kind := range append([]string{"garbage", "another version"}, hostilefile.Kinds...) {
		t.Run(kind, func(t *testing.T) {
			w := newTW(t)
			f := w.family()
			p := filepath.Join(w.dir, "sessions.json")
			os.Remove(p)
			switch kind {
			case "garbage":
				write(t, p, "{not json")
			case "another version":
				write(t, p, `{"version": 2, "sessions": []}`)
			default:
				data, _ := os.ReadFile(p)
				hostilefile.Plant(t, p, kind, stateLimit, string(data))
			}
			w.log.Reset()
			c := mustConfig(t, testConfig)
			c.hashes = w.hashes
			done := make(chan error, 1)
			go func() {
				s, err := New(Options{Config: c, StateDir: w.dir, Log: w.log, Clock: w.clock})
				w.s = s
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("New hangs on the state file")
			}
			if kind == "directory" {
				// nothing can be written in its place: the service does not start
				if err == nil || !strings.Contains(err.Error(), "write sessions") {
					t.Errorf("New: %v, want the failed write", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(w.log.String(), "starting with no sessions") {
				t.Errorf("logged %q", w.log.String())
			}
			if w.verifyCode("alice", f.alice) != 401 {
				t.Error("a session survived")
			}
		})
	}
}

func TestInvalidEntriesAreDropped(t *testing.T) {
	w := newTW(t)
	f := w.family()
	p := filepath.Join(w.dir, "sessions.json")
	data, _ := os.ReadFile(p)
	// bob's child gets an origin that is no user name
	s := strings.Replace(string(data), `"origin": "bob"`, `"origin": "../bob"`, 1)
	write(t, p, s)
	w.log.Reset()
	w.restart(testConfig)
	if !strings.Contains(w.log.String(), "dropped 1 invalid session entries") || w.verifyCode("bob", f.bob) != 401 || w.verifyCode("alice", f.alice) != 204 {
		t.Errorf("logged %q", w.log.String())
	}
}

// TestSessionCaps: a login keeps at most 64 box sessions and a box session
// 8 children per origin; the least recently seen goes.
func TestSessionCaps(t *testing.T) {
	w := newTW(t)
	first := w.login("ops")
	for i := 0; i < maxBoxPerLogin; i++ {
		w.clock.Advance(time.Second)
		w.s.limits = loginlimit.NewLimiter()
		w.login("ops")
	}
	rec := w.pages(rq{method: "GET", host: "box.test", target: "/", cookies: []string{first}})
	if strings.Contains(rec.Body.String(), "Logged in") {
		t.Error("the 65th box session did not end the least recently seen")
	}
	box := w.login("ops")
	kids := []string{}
	for i := 0; i <= maxChildren; i++ {
		w.clock.Advance(time.Second)
		kids = append(kids, w.child(box, "alice"))
	}
	if w.verifyCode("alice", kids[0]) != 401 || w.verifyCode("alice", kids[1]) != 204 || w.verifyCode("alice", kids[maxChildren]) != 204 {
		t.Error("the 9th child did not end just the least recently seen")
	}
}

// TestAChildWithoutItsBoxSessionIsDead: a child on disk whose box session
// is gone (an older file, an edit) opens nothing.
func TestAChildWithoutItsBoxSessionIsDead(t *testing.T) {
	w := newTW(t)
	f := w.family()
	p := filepath.Join(w.dir, "sessions.json")
	var st stateFile
	data, _ := os.ReadFile(p)
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	kept := st.Sessions[:0]
	for _, s := range st.Sessions {
		if s.ID != idOf(f.box) {
			kept = append(kept, s)
		}
	}
	st.Sessions = kept
	data, _ = json.Marshal(st)
	write(t, p, string(data))
	w.restart(testConfig)
	if w.verifyCode("alice", f.alice) != 401 || w.verifyCode("bob", f.bob) != 401 {
		t.Error("an orphaned child is alive")
	}
}
