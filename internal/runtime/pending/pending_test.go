package pending

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/approval"
	"github.com/agent-box/agent-box/internal/runtime/contract"
)

var t0 = time.Date(2026, 12, 5, 15, 0, 0, 0, time.UTC)

func req(n int) approval.Request {
	return approval.Request{ID: fmt.Sprintf("%032x", n), Session: "main", Agent: "claude", Tool: "Bash", Input: "ls -l", Rules: `"ls *"`}
}

func open(t *testing.T, path string, now time.Time) *Store {
	t.Helper()
	st, warn, err := Open(path, now, func() {})
	if err != nil || warn != nil {
		t.Fatalf("open: %v, %v", err, warn)
	}
	return st
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestADecisionIsTakenOnceAndReachesTheWaitingHook: the first decision
// closes the request's Done with its answer; a second, another user's
// and one on an unknown id are refused.
func TestADecisionIsTakenOnceAndReachesTheWaitingHook(t *testing.T) {
	st := open(t, filepath.Join(t.TempDir(), "a.json"), t0)
	asked, err := st.Ask("alice", req(1), t0, time.Minute, time.Minute, nil)
	if err != nil || !asked.Fresh {
		t.Fatalf("ask: %+v, %v", asked, err)
	}
	if closed(asked.Done) {
		t.Fatal("done before a decision")
	}
	if err := st.Decide("bob", req(1).ID, approval.Allow, "ops", t0); !errors.Is(err, ErrNoRequest) {
		t.Errorf("bob's decision on alice's request: %v", err)
	}
	if err := st.Decide("alice", req(1).ID, approval.Deny, "ops", t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if !closed(asked.Done) {
		t.Fatal("the decision did not reach the hook")
	}
	if a := asked.Answer(); a != (approval.Answer{Decision: approval.Deny, By: "ops"}) {
		t.Errorf("answer %+v", a)
	}
	if err := st.Decide("alice", req(1).ID, approval.Allow, "ops", t0.Add(2*time.Second)); !errors.Is(err, ErrAnswered) {
		t.Errorf("a second decision: %v", err)
	}
	st.Leave(req(1).ID, true, t0.Add(2*time.Second))
	if err := st.Decide("alice", req(1).ID, approval.Allow, "ops", t0.Add(3*time.Second)); !errors.Is(err, ErrAnswered) {
		t.Errorf("a decision after delivery: %v", err)
	}
	if _, err := st.Ask("alice", req(1), t0.Add(3*time.Second), time.Minute, time.Minute, nil); !errors.Is(err, ErrSpent) {
		t.Errorf("the delivered request asked again: %v", err)
	}
}

// TestARequestPastItsWaitOrWithoutItsHookTakesNoDecision: at the
// deadline, and once the hook has been away for the reattach grace, the
// request is gone from the inbox and refuses decisions.
func TestARequestPastItsWaitOrWithoutItsHookTakesNoDecision(t *testing.T) {
	st := open(t, filepath.Join(t.TempDir(), "a.json"), t0)
	st.Ask("alice", req(1), t0, time.Minute, time.Minute, nil)
	st.Ask("alice", req(2), t0, time.Minute, time.Minute, nil)
	if n := len(st.Waiting("alice", t0)); n != 2 {
		t.Fatalf("%d waiting, want 2", n)
	}
	if err := st.Decide("alice", req(1).ID, approval.Allow, "ops", t0.Add(time.Minute)); !errors.Is(err, ErrNoRequest) {
		t.Errorf("a decision at the deadline: %v", err)
	}
	if n := len(st.Waiting("alice", t0.Add(time.Minute))); n != 0 {
		t.Errorf("%d waiting at the deadline", n)
	}
	st.Leave(req(2).ID, false, t0.Add(time.Second))
	grace := contract.Duration(contract.Approvals.ReattachGrace)
	if w := st.Waiting("alice", t0.Add(2*time.Second)); len(w) != 2 {
		t.Errorf("within the grace after request 2's hook left, both wait: %+v", w)
	}
	gone := t0.Add(time.Second + grace)
	if err := st.Decide("alice", req(2).ID, approval.Allow, "ops", gone); err == nil {
		t.Error("a decision on a request whose hook went away for good was taken")
	}
	if w := st.Waiting("alice", gone); len(w) != 1 || w[0].ID != req(1).ID {
		t.Errorf("past the grace after request 2's hook went away: %+v", w)
	}
}

// TestAUserHasAtMostMaxPendingRequests: one more is refused; another
// user's are counted apart; an id is one user's.
func TestAUserHasAtMostMaxPendingRequests(t *testing.T) {
	st := open(t, filepath.Join(t.TempDir(), "a.json"), t0)
	max := contract.Approvals.MaxPending
	for i := range max {
		if _, err := st.Ask("alice", req(i+1), t0, time.Minute, time.Minute, nil); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	if _, err := st.Ask("alice", req(max+1), t0, time.Minute, time.Minute, nil); !errors.Is(err, ErrFull) {
		t.Errorf("request %d: %v, want ErrFull", max+1, err)
	}
	if _, err := st.Ask("bob", req(max+1), t0, time.Minute, time.Minute, nil); err != nil {
		t.Errorf("bob's first: %v", err)
	}
	if _, err := st.Ask("bob", req(1), t0, time.Minute, time.Minute, nil); !errors.Is(err, ErrNotYours) {
		t.Errorf("alice's id asked by bob: %v", err)
	}
	changed := req(2)
	changed.Input = "rm -rf /"
	if _, err := st.Ask("alice", changed, t0, time.Minute, time.Minute, nil); !errors.Is(err, ErrChanged) {
		t.Errorf("the same id with other content: %v", err)
	}
}

// TestARestartKeepsRequestsAndDecisionsForTheirHooks: a new store on the
// same file has the waiting request (its hook has the grace to come back,
// then it is gone) and a decision not yet delivered, which the hook that
// asks again gets at once.
func TestARestartKeepsRequestsAndDecisionsForTheirHooks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.json")
	st := open(t, path, t0)
	st.Ask("alice", req(1), t0, time.Hour, time.Minute, nil)
	st.Ask("alice", req(2), t0, time.Hour, time.Minute, nil)
	st.Ask("alice", req(3), t0, time.Hour, time.Minute, nil)
	if err := st.Decide("alice", req(2).ID, approval.AllowSession, "ops", t0); err != nil {
		t.Fatal(err)
	}
	// the service stops while request 1's hook waits: nothing is called

	later := t0.Add(time.Second)
	st2 := open(t, path, later)
	if w := st2.Waiting("alice", later); len(w) != 2 || w[0].ID != req(1).ID || w[1].ID != req(3).ID {
		t.Fatalf("after the restart: %+v", w)
	}
	again, err := st2.Ask("alice", req(2), later, time.Hour, time.Minute, nil)
	if err != nil || again.Fresh || !closed(again.Done) {
		t.Fatalf("the decided request asked again: %+v, %v", again, err)
	}
	if a := again.Answer(); a.Decision != approval.AllowSession {
		t.Errorf("answer after the restart: %+v", a)
	}
	back, err := st2.Ask("alice", req(1), later, time.Hour, time.Minute, nil)
	if err != nil || back.Fresh || !back.Deadline.Equal(t0.Add(time.Hour)) {
		t.Fatalf("the waiting request asked again: %+v, %v (its deadline stays)", back, err)
	}
	grace := contract.Duration(contract.Approvals.ReattachGrace)
	if w := st2.Waiting("alice", later.Add(grace)); len(w) != 1 || w[0].ID != req(1).ID {
		t.Errorf("past the grace, only the request whose hook came back waits: %+v", w)
	}
}

// TestAnActionTokenDecidesItsOneRequestOnceBeforeItExpires: the secrets
// are stored as hashes only; each names its login and decision; an
// expired one and one of an ended request (a replay) are refused.
func TestAnActionTokenDecidesItsOneRequestOnceBeforeItExpires(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.json")
	st := open(t, path, t0)
	r := req(1)
	r.Rules = ""
	asked, err := st.Ask("alice", r, t0, time.Hour, 10*time.Minute, []string{"ops", "pager"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(asked.Secrets["ops"]); n != 2 {
		t.Fatalf("ops has %d actions, want allow and deny (no allow-session: the agent offers none)", n)
	}
	data, _ := os.ReadFile(path)
	for _, m := range asked.Secrets {
		for _, secret := range m {
			if !ValidSecret(secret) || strings.Contains(string(data), secret) {
				t.Fatalf("secret %q is not a secret, or it is in the file", secret)
			}
		}
	}
	a, err := st.ByToken(asked.Secrets["pager"][approval.Deny], t0.Add(time.Minute))
	if err != nil || a != (Action{User: "alice", ID: r.ID, Login: "pager", Decision: approval.Deny}) {
		t.Fatalf("the pager's deny: %+v, %v", a, err)
	}
	if _, err := st.ByToken(asked.Secrets["ops"][approval.Allow], t0.Add(10*time.Minute)); !errors.Is(err, ErrExpired) {
		t.Errorf("at its lifetime: %v", err)
	}
	if _, err := st.ByToken(newSecret(), t0); !errors.Is(err, ErrNoToken) {
		t.Errorf("a secret never given: %v", err)
	}
	if err := st.Decide(a.User, a.ID, a.Decision, a.Login, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ByToken(asked.Secrets["pager"][approval.Deny], t0.Add(time.Minute)); !errors.Is(err, ErrNoToken) {
		t.Errorf("the same action again (a replay): %v", err)
	}
	if _, err := st.ByToken(asked.Secrets["ops"][approval.Allow], t0.Add(time.Minute)); !errors.Is(err, ErrNoToken) {
		t.Errorf("the other login's allow after the decision: %v", err)
	}
}

// TestAStoreFileThatIsNotOneStartsEmpty: a warning, no requests.
func TestAStoreFileThatIsNotOneStartsEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.json")
	os.WriteFile(path, []byte(`{"requests":[{"user":"alice","id":"x"}]`), 0o600)
	st, warn, err := Open(path, t0, func() {})
	if err != nil || warn == nil {
		t.Fatalf("open: %v, warning %v", err, warn)
	}
	if w := st.Waiting("alice", t0); len(w) != 0 {
		t.Errorf("waiting: %+v", w)
	}
	os.WriteFile(path, []byte(`{"requests":[{"user":"alice","id":"x","session":"main","agent":"claude","tool":"Bash","input":"","deadline":"2030-01-01T00:00:00Z"}],"spent":{}}`), 0o600)
	if _, warn, _ := Open(path, t0, func() {}); warn == nil || !strings.Contains(warn.Error(), "dropped 1") {
		t.Errorf("a request of a bad id: warning %v", warn)
	}
}

// TestAbandonedRequestsDoNotLockAUserOut: requests whose hooks left past
// the grace, and ones past their deadline, do not count against the
// user's bound (a new request is taken without any other change first).
func TestAbandonedRequestsDoNotLockAUserOut(t *testing.T) {
	st := open(t, filepath.Join(t.TempDir(), "a.json"), t0)
	max := contract.Approvals.MaxPending
	for i := range max {
		if _, err := st.Ask("alice", req(i+1), t0, time.Hour, time.Minute, nil); err != nil {
			t.Fatal(err)
		}
		st.Leave(req(i+1).ID, false, t0) // every hook went away
	}
	later := t0.Add(contract.Duration(contract.Approvals.ReattachGrace))
	if _, err := st.Ask("alice", req(max+1), later, time.Hour, time.Minute, nil); err != nil {
		t.Errorf("a new request after %d abandoned ones: %v", max, err)
	}
}

// TestARequestTakesAtMostTwoWaitingConnections: its hook's and one more
// (a retry while the broken one is not yet noticed); a third is refused.
func TestARequestTakesAtMostTwoWaitingConnections(t *testing.T) {
	st := open(t, filepath.Join(t.TempDir(), "a.json"), t0)
	if _, err := st.Ask("alice", req(1), t0, time.Hour, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Ask("alice", req(1), t0, time.Hour, time.Minute, nil); err != nil {
		t.Fatalf("the second connection: %v", err)
	}
	if _, err := st.Ask("alice", req(1), t0, time.Hour, time.Minute, nil); !errors.Is(err, ErrBusy) {
		t.Errorf("a third connection: %v, want ErrBusy", err)
	}
}

// TestACutRequestCanOnlyBeDenied: a person cannot allow what was not
// shown whole; no allow token is made for it.
func TestACutRequestCanOnlyBeDenied(t *testing.T) {
	st := open(t, filepath.Join(t.TempDir(), "a.json"), t0)
	r := req(1)
	r.Cut = true
	asked, err := st.Ask("alice", r, t0, time.Hour, time.Minute, []string{"ops"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := asked.Secrets["ops"][approval.Allow]; ok || len(asked.Secrets["ops"]) != 1 {
		t.Errorf("the actions of a cut request: %v, want Deny only", asked.Secrets["ops"])
	}
	for _, d := range []string{approval.Allow, approval.AllowSession} {
		if err := st.Decide("alice", r.ID, d, "ops", t0); err == nil {
			t.Errorf("%s of a cut request was taken", d)
		}
	}
	if err := st.Decide("alice", r.ID, approval.Deny, "ops", t0); err != nil {
		t.Errorf("deny: %v", err)
	}
}
