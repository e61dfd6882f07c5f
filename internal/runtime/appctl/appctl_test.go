package appctl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeSystemd answers systemctl and journalctl like a box where units are
// loaded (their show output) and records every command.
type fakeSystemd struct {
	units map[string]string // unit -> systemctl show output
	calls []string
	fail  map[string]error // a command line -> its error
}

func (f *fakeSystemd) run(_ context.Context, name string, args ...string) ([]byte, error) {
	line := name + " " + strings.Join(args, " ")
	f.calls = append(f.calls, line)
	if err := f.fail[line]; err != nil {
		return nil, err
	}
	switch {
	case name == "systemctl" && args[0] == "show":
		if out, ok := f.units[args[len(args)-1]]; ok {
			return []byte(out), nil
		}
		return []byte("LoadState=not-found\nActiveState=inactive\nSubState=dead\nNRestarts=0\n"), nil
	case name == "systemctl" && args[0] == "list-units":
		var b strings.Builder
		for u := range f.units {
			fmt.Fprintf(&b, "%s loaded active running x\n", u)
		}
		return []byte(b.String()), nil
	case name == "journalctl":
		return []byte("2026-12-03T22:00:00+0000 agent-box[1]: records: GET /\n"), nil
	}
	return nil, nil
}

func show(active, sub, status string) string {
	return "LoadState=loaded\nActiveState=" + active + "\nSubState=" + sub + "\nStatusText=" + status + "\nActiveEnterTimestamp=@1764800000\nNRestarts=2\n"
}

func newFake() (*fakeSystemd, *Ctl) {
	f := &fakeSystemd{units: map[string]string{
		"agent-box-app@records--alice.service":   show("active", "running", "running python3 (pid 7, restarts 1)"),
		"agent-box-app@site--alice.service":      show("failed", "failed", ""),
		"agent-box-app@records--bob.service":     show("active", "running", "bob's"),
		"agent-box-app@x--carol--alice.service":  show("active", "running", "carol--alice's"),
		"agent-box-app@records--alice-x.service": show("active", "running", "alice-x's"),
	}}
	return f, &Ctl{User: "alice", Run: f.run}
}

func TestStatusReadsTheUnit(t *testing.T) {
	_, c := newFake()
	s, err := c.Status(context.Background(), "records")
	if err != nil {
		t.Fatal(err)
	}
	want := State{Name: "records", Unit: "agent-box-app@records--alice.service", Active: "active (running)",
		Status: "running python3 (pid 7, restarts 1)", Since: time.Unix(1764800000, 0), Restarts: 2}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

func TestListHasOnlyTheUsersOwnApps(t *testing.T) {
	_, c := newFake()
	states, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range states {
		names = append(names, s.Name)
	}
	// not bob's, not those of users "carol--alice" or "alice-x"
	if diff := cmp.Diff([]string{"records", "site"}, names); diff != "" {
		t.Errorf("apps (-want +got):\n%s", diff)
	}
}

func TestAnotherUsersAppCannotBeNamed(t *testing.T) {
	f, c := newFake()
	for _, name := range []string{"records--bob", "x--carol", "../records", "Records", ""} {
		if err := c.Do(context.Background(), "restart", name); !errors.Is(err, ErrName) {
			t.Errorf("restart %q: %v, want ErrName", name, err)
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("commands ran for names that are no app's: %q", f.calls)
	}
}

func TestUnknownApp(t *testing.T) {
	f, c := newFake()
	err := c.Do(context.Background(), "restart", "nothere")
	if !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), `alice has no app "nothere"`) {
		t.Errorf("restart of an app alice lacks: %v", err)
	}
	for _, l := range f.calls {
		if strings.Contains(l, "restart") {
			t.Errorf("a restart ran: %q", l)
		}
	}
}

func TestActionsRunTheVerbWithoutAPrompt(t *testing.T) {
	for _, tc := range []struct {
		verb, app string
		want      []string
	}{
		{"restart", "records", []string{"systemctl --no-ask-password restart -- agent-box-app@records--alice.service"}},
		{"stop", "records", []string{"systemctl --no-ask-password stop -- agent-box-app@records--alice.service"}},
		{"start", "site", []string{
			"systemctl --no-ask-password reset-failed -- agent-box-app@site--alice.service",
			"systemctl --no-ask-password start -- agent-box-app@site--alice.service",
		}},
	} {
		t.Run(tc.verb+" "+tc.app, func(t *testing.T) {
			f, c := newFake()
			if err := c.Do(context.Background(), tc.verb, tc.app); err != nil {
				t.Fatal(err)
			}
			var acts []string
			for _, l := range f.calls {
				if !strings.HasPrefix(l, "systemctl show") {
					acts = append(acts, l)
				}
			}
			if diff := cmp.Diff(tc.want, acts); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
		})
	}
	_, c := newFake()
	for _, verb := range []string{"reset-failed", "kill", "enable", "mask"} {
		if err := c.Do(context.Background(), verb, "records"); err == nil || !strings.Contains(err.Error(), "unknown action") {
			t.Errorf("%s: %v, want unknown action", verb, err)
		}
	}
}

func TestARefusalIsReported(t *testing.T) {
	f, c := newFake()
	line := "systemctl --no-ask-password restart -- agent-box-app@records--alice.service"
	f.fail = map[string]error{line: errors.New("Failed to restart agent-box-app@records--alice.service: Access denied")}
	if err := c.Do(context.Background(), "restart", "records"); err == nil || !strings.Contains(err.Error(), "Access denied") {
		t.Errorf("a refused restart: %v", err)
	}
}

func TestLogsReadTheUnitsLinesFromTheJournal(t *testing.T) {
	f, c := newFake()
	out, err := c.Logs(context.Background(), "records", 20)
	if err != nil || !strings.Contains(string(out), "records: GET /") {
		t.Fatalf("logs: %q %v", out, err)
	}
	want := "journalctl --no-pager --quiet --output=short-iso --lines=20 --unit=agent-box-app@records--alice.service"
	if got := f.calls[len(f.calls)-1]; got != want {
		t.Errorf("ran %q, want %q", got, want)
	}
}
