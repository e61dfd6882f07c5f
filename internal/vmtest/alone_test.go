package vmtest

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeQMP listens like a QEMU's QMP socket and records the commands it is
// given after the capabilities negotiation (an event comes before each
// answer, as QEMU sends "STOP" and "RESUME").
type fakeQMP struct {
	mu   sync.Mutex
	cmds []string
}

func (f *fakeQMP) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cmds...)
}

func newFakeQMP(t *testing.T, path string) *fakeQMP {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f := &fakeQMP{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write([]byte(`{"QMP": {"version": {}, "capabilities": []}}` + "\n"))
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					var req struct {
						Execute string `json:"execute"`
					}
					if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
						c.Write([]byte(`{"error": {"class": "GenericError", "desc": "bad json"}}` + "\n"))
						continue
					}
					if req.Execute != "qmp_capabilities" {
						f.mu.Lock()
						f.cmds = append(f.cmds, req.Execute)
						f.mu.Unlock()
						c.Write([]byte(`{"event": "STOP", "data": {}}` + "\n"))
					}
					c.Write([]byte(`{"return": {}}` + "\n"))
				}
			}()
		}
	}()
	return f
}

func TestASectionPausesTheOtherGuestsAndResumesThem(t *testing.T) {
	dir := t.TempDir()
	a := NewAlone()
	qa, qb, qc := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	newFakeQMP(t, qa)
	fb, fc := newFakeQMP(t, qb), newFakeQMP(t, qc)
	ra, rb, rc := a.join("a", qa), a.join("b", qb), a.join("c", qc)
	ctx := context.Background()
	if err := a.begin(ctx, ra); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*fakeQMP{fb, fc} {
		if diff := cmp.Diff([]string{"stop"}, f.got()); diff != "" {
			t.Errorf("commands during the section (-want +got):\n%s", diff)
		}
	}
	if err := a.end(ra); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*fakeQMP{fb, fc} {
		if diff := cmp.Diff([]string{"stop", "cont"}, f.got()); diff != "" {
			t.Errorf("commands after the section (-want +got):\n%s", diff)
		}
	}
	if rb.Paused() <= 0 || rc.Paused() <= 0 || ra.Paused() != 0 {
		t.Errorf("paused: a %v, b %v, c %v; want only b and c", ra.Paused(), rb.Paused(), rc.Paused())
	}
}

func TestNoGuestStartsDuringASection(t *testing.T) {
	dir := t.TempDir()
	a := NewAlone()
	qa := filepath.Join(dir, "a")
	newFakeQMP(t, qa)
	ra := a.join("a", qa)
	if err := a.begin(context.Background(), ra); err != nil {
		t.Fatal(err)
	}
	joined := make(chan *Running)
	go func() { joined <- a.join("late", filepath.Join(dir, "late")) }()
	select {
	case <-joined:
		t.Fatal("a guest joined while a section ran")
	case <-time.After(100 * time.Millisecond):
	}
	if err := a.end(ra); err != nil {
		t.Fatal(err)
	}
	select {
	case <-joined:
	case <-time.After(5 * time.Second):
		t.Fatal("the guest did not join after the section ended")
	}
}

func TestAGuestThatStopsInItsSectionResumesTheOthers(t *testing.T) {
	dir := t.TempDir()
	a := NewAlone()
	qa, qb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	newFakeQMP(t, qa)
	fb := newFakeQMP(t, qb)
	ra := a.join("a", qa)
	a.join("b", qb)
	if err := a.begin(context.Background(), ra); err != nil {
		t.Fatal(err)
	}
	a.leave(ra)
	if diff := cmp.Diff([]string{"stop", "cont"}, fb.got()); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	joined := make(chan struct{})
	go func() { a.join("next", filepath.Join(dir, "next")); close(joined) }()
	select {
	case <-joined:
	case <-time.After(5 * time.Second):
		t.Fatal("the host stayed held after the section's guest stopped")
	}
}

func TestAGuestWhoseQEMUExitedIsNotWaitedFor(t *testing.T) {
	dir := t.TempDir()
	a := NewAlone()
	qa := filepath.Join(dir, "a")
	newFakeQMP(t, qa)
	ra := a.join("a", qa)
	gone := a.join("gone", filepath.Join(dir, "never-listened"))
	go func() { time.Sleep(200 * time.Millisecond); a.leave(gone) }()
	start := time.Now()
	if err := a.begin(context.Background(), ra); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("begin waited %v for a guest that had exited", took)
	}
	if err := a.end(ra); err != nil {
		t.Fatal(err)
	}
}

func TestAFailedPauseFailsTheSection(t *testing.T) {
	dir := t.TempDir()
	a := NewAlone()
	qa, bad := filepath.Join(dir, "a"), filepath.Join(dir, "bad")
	newFakeQMP(t, qa)
	// a socket that answers nothing QMP would
	l, err := net.Listen("unix", bad)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("not json\n"))
			c.Close()
		}
	}()
	ra := a.join("a", qa)
	a.join("bad", bad)
	if err := a.begin(context.Background(), ra); err == nil {
		t.Fatal("begin succeeded though a guest could not be paused")
	}
	a.end(ra)
	_ = os.Remove(bad)
}
