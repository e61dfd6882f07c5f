package supervisor

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/registry"
)

// TestTheRelayTakesAtMostMaxRelaysAtOnce: a process of the user cannot
// hold the auth service's connections without bound: beyond the relays
// in flight (here 2 for the test), a request is 429 at once.
func TestTheRelayTakesAtMostMaxRelaysAtOnce(t *testing.T) {
	s, _ := testSup(t)
	defer func(n int) { maxRelays = n }(maxRelays)
	maxRelays = 2
	if err := registry.Update(context.Background(), s.cfg.Env.Registry(), func(r *registry.Registry) error {
		return r.Add(registry.Session{Name: "main", Agent: "a", Cwd: "/"})
	}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// the auth service holds every request until the test ends
	auth, err := net.Listen("unix", filepath.Join(dir, "status.sock"))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var held sync.WaitGroup
	go http.Serve(auth, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held.Done()
		<-release
	}))
	defer close(release)
	s.cfg.AuthStatus = filepath.Join(dir, "status.sock")
	l, err := net.Listen("unix", filepath.Join(dir, "approval.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go s.serveApprovals(l, s.done)
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", filepath.Join(dir, "approval.sock"))
	}}}
	body := func(n int) string {
		return `{"id":"` + strings.Repeat(string(rune('a'+n)), 32) + `","session":"main","agent":"claude","tool":"Bash","input":"ls"}`
	}
	held.Add(2)
	for i := range 2 {
		go client.Post("http://supervisor"+contract.Approvals.Path, "application/json", strings.NewReader(body(i)))
	}
	held.Wait() // both relayed, both held by the auth service
	resp, err := client.Post("http://supervisor"+contract.Approvals.Path, "application/json", strings.NewReader(body(2)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a third request at once: %d, want 429", resp.StatusCode)
	}
}
