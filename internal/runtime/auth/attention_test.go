package auth

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-box/agent-box/internal/runtime/attention"
	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// report PUTs body as uid's report on the status listener.
func (w *tw) report(uid int, body string) int {
	w.t.Helper()
	r := rq{method: "PUT", host: "status", target: contract.Attention.Report.Path, uid: &uid}
	return w.doWith(w.s.Status(), r, func(req *http.Request) {
		req.Body = io.NopCloser(strings.NewReader(body))
		req.ContentLength = int64(len(body))
	}).Code
}

// TestAttentionReportsReplaceTheUsersStates: a configured user's report
// replaces that user's states and no one else's; a report that is not one
// changes nothing; others than configured users, and other methods, are
// refused.
func TestAttentionReportsReplaceTheUsersStates(t *testing.T) {
	w := newTW(t)
	w.fakeUsers()
	if got := w.report(1001, "main needs-you permission\nside working\n"); got != 204 {
		t.Fatalf("alice's report: %d", got)
	}
	if got := w.report(1002, "main finished turn\n"); got != 204 {
		t.Fatalf("bob's report: %d", got)
	}
	want := []attention.Entry{{Session: "main", State: attention.NeedsYou, Reason: "permission"}, {Session: "side", State: attention.Working}}
	if diff := cmp.Diff(want, w.s.board.States("alice")); diff != "" {
		t.Errorf("alice's states (-want +got):\n%s", diff)
	}
	for name, c := range map[string]struct {
		uid  int
		body string
		want int
	}{
		"a hook's text as a reason": {1001, "main needs-you Claude needs your permission\n", 400},
		"an unknown state":          {1001, "main sleeping\n", 400},
		"over the byte limit":       {1001, strings.Repeat("a", contract.Attention.Report.MaxBytes+1), 400},
		"carol, no configured user": {1003, "main working\n", 403},
		"root, no configured user":  {0, "main working\n", 403},
		"no peer credentials":       {-1, "main working\n", 403},
		"an unknown uid":            {4242, "main working\n", 403},
	} {
		if got := w.report(c.uid, c.body); got != c.want {
			t.Errorf("%s: %d, want %d", name, got, c.want)
		}
	}
	if diff := cmp.Diff(want, w.s.board.States("alice")); diff != "" {
		t.Errorf("a refused report changed alice's states (-want +got):\n%s", diff)
	}
	if got := w.s.board.States("bob"); len(got) != 1 || got[0].State != attention.Finished {
		t.Errorf("bob's states: %+v", got)
	}
	if got := w.report(1001, ""); got != 204 || len(w.s.board.States("alice")) != 0 {
		t.Errorf("an empty report: %d, states %+v; want 204 and none", got, w.s.board.States("alice"))
	}
	if r := w.do(w.s.Status(), rq{method: "POST", host: "status", target: contract.Attention.Report.Path, uid: intp(1001)}); r.Code != 405 {
		t.Errorf("POST of a report: %d, want 405", r.Code)
	}
	if r := w.do(w.s.Status(), rq{method: "PUT", host: "status", target: "/alive", uid: intp(1001)}); r.Code != 405 {
		t.Errorf("PUT /alive: %d, want 405", r.Code)
	}
}

// TestAttentionReportsAreRateLimitedPerUser: burst reports at once, then
// 429 with Retry-After; perSecond more a second later; one user's flood
// leaves another's reports alone.
func TestAttentionReportsAreRateLimitedPerUser(t *testing.T) {
	w := newTW(t)
	w.fakeUsers()
	lim := contract.Attention.Report
	for i := range lim.Burst {
		if got := w.report(1001, "main working\n"); got != 204 {
			t.Fatalf("report %d of the burst: %d", i+1, got)
		}
	}
	uid := 1001
	r := w.doWith(w.s.Status(), rq{method: "PUT", host: "status", target: lim.Path, uid: &uid}, func(req *http.Request) {
		req.Body = io.NopCloser(strings.NewReader("main finished turn\n"))
	})
	if r.Code != 429 || r.Header().Get("Retry-After") != "1" {
		t.Fatalf("a report beyond the burst: %d, Retry-After %q; want 429 and 1", r.Code, r.Header().Get("Retry-After"))
	}
	if got := w.s.board.States("alice"); got[0].State != attention.Working {
		t.Errorf("a refused report was taken: %+v", got)
	}
	if got := w.report(1002, "main working\n"); got != 204 {
		t.Errorf("bob's report while alice is held back: %d", got)
	}
	w.clock.Advance(time.Second)
	for i := range lim.PerSecond {
		if got := w.report(1001, "main working\n"); got != 204 {
			t.Fatalf("report %d a second later: %d", i+1, got)
		}
	}
	if got := w.report(1001, "main working\n"); got != 429 {
		t.Errorf("one more than perSecond: %d, want 429", got)
	}
}
