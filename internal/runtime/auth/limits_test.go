package auth

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/loginlimit"
	"github.com/agent-box/agent-box/internal/runtime/pwhash"
)

// attempt posts a login from addr ("" : no X-Agent-Box-Client).
func (w *tw) attempt(login, password, addr string) *httptestResponse {
	w.t.Helper()
	h := map[string]string{clientHeader: addr}
	rec := w.pages(rq{method: "POST", host: "box.test", target: "/auth/login", header: h,
		form: url.Values{"login": {login}, "password": {password}}})
	return &httptestResponse{code: rec.Code, retry: rec.Header().Get("Retry-After")}
}

type httptestResponse struct {
	code  int
	retry string
}

func (r *httptestResponse) String() string { return strconv.Itoa(r.code) + " Retry-After " + r.retry }

// lines is how many failed-login lines the log holds.
func (w *tw) lines() int { return strings.Count(w.log.String(), "agent-box-auth: login failed ") }

// TestPerClientTokenBucket: 5 attempts, then one more every 12 s; a
// refused attempt hashes nothing but is logged like a failure; other
// clients are not affected.
func TestPerClientTokenBucket(t *testing.T) {
	for _, addr := range []string{"198.51.100.1", "127.0.0.1", "2001:db8::1"} {
		t.Run(addr, func(t *testing.T) {
			w := newTW(t)
			for i := 0; i < 5; i++ {
				// other names each time: no pair's backoff gets in the way
				if r := w.attempt("nobody"+string(rune('a'+i)), "x", addr); r.code != 401 {
					t.Fatalf("attempt %d: %v", i+1, r)
				}
			}
			calls, lines := w.calls.Load(), w.lines()
			r := w.attempt("nobodyf", "x", addr)
			if r.code != http.StatusTooManyRequests || r.retry != "12" {
				t.Errorf("sixth attempt: %v, want 429 and 12", r)
			}
			if w.calls.Load() != calls {
				t.Errorf("the refused attempt hashed")
			}
			if w.lines() != lines+1 {
				t.Errorf("the refused attempt wrote %d failed-login lines, want 1", w.lines()-lines)
			}
			if r := w.attempt("ops", testPasswords["ops"], addr); r.code != 429 {
				t.Errorf("the right password, refused by the bucket: %v", r)
			}
			if r := w.attempt("nobodyg", "x", "203.0.113.9"); r.code != 401 {
				t.Errorf("another client: %v", r)
			}
			w.clock.Advance(6 * time.Second)
			if r := w.attempt("nobodyh", "x", addr); r.code != 429 || r.retry != "6" {
				t.Errorf("after 6 s: %v, want 429 and 6", r)
			}
			w.clock.Advance(6 * time.Second)
			if r := w.attempt("ops", testPasswords["ops"], addr); r.code != 303 {
				t.Errorf("after 12 s: %v, want the one refilled attempt", r)
			}
			if r := w.attempt("nobodyi", "x", addr); r.code != 429 {
				t.Errorf("and then: %v", r)
			}
		})
	}
}

// TestClientsAreAddressesSlash64sAndAllOfLoopback: guesses spread over the
// addresses of one client share its bucket.
func TestClientsAreAddressesSlash64sAndAllOfLoopback(t *testing.T) {
	for _, tc := range []struct {
		name  string
		same  []string // five guesses, then a sixth from the last
		other string   // a client of its own
	}{
		{"IPv6 /64", []string{"2001:db8:1:2::a", "2001:db8:1:2::b", "2001:db8:1:2::c", "2001:db8:1:2:ffff::1", "2001:db8:1:2::e", "2001:db8:1:2::f"}, "2001:db8:1:3::1"},
		{"loopback", []string{"127.0.0.1", "127.0.0.2", "127.9.9.9", "::1", "::ffff:127.0.0.3", "127.0.0.17"}, "198.51.100.1"},
		{"IPv4 in IPv6 is the IPv4 address", []string{"198.51.100.5", "::ffff:198.51.100.5", "198.51.100.5", "::ffff:198.51.100.5", "198.51.100.5", "::ffff:198.51.100.5"}, "198.51.100.6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTW(t)
			for i, a := range tc.same[:5] {
				if r := w.attempt("nobody"+strconv.Itoa(i), "x", a); r.code != 401 {
					t.Fatalf("guess %d from %s: %v", i+1, a, r)
				}
			}
			if r := w.attempt("nobody9", "x", tc.same[5]); r.code != 429 {
				t.Errorf("a sixth guess from %s: %v, want 429", tc.same[5], r)
			}
			if r := w.attempt("nobody9", "x", tc.other); r.code != 401 {
				t.Errorf("%s: %v, want 401 (a client of its own)", tc.other, r)
			}
		})
	}
}

// TestBackoffIsPerLoginAndClient: 1 s, 2 s, 4 s ... 5 min after each
// failure of a login from one client; that client's other logins and
// other clients' attempts at that login are not held back; a success
// resets it.
func TestBackoffIsPerLoginAndClient(t *testing.T) {
	w := newTW(t)
	const a, b = "198.51.100.1", "198.51.100.2"
	want := []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300}
	for i, secs := range want {
		calls := w.calls.Load()
		if r := w.attempt("ops", "wrong", a); r.code != 401 {
			t.Fatalf("failure %d: %v", i+1, r)
		}
		if w.calls.Load() != calls+1 {
			t.Fatalf("failure %d hashed %d times", i+1, w.calls.Load()-calls)
		}
		r := w.attempt("ops", testPasswords["ops"], a)
		if r.code != 429 || r.retry != strconv.Itoa(secs) {
			t.Fatalf("right after failure %d: %v, want 429 and %d", i+1, r, secs)
		}
		if w.calls.Load() != calls+1 {
			t.Fatalf("the refused attempt hashed")
		}
		if r := w.attempt("al", "wrong", a); r.code != 401 {
			t.Fatalf("another login from the same client is held back: %v", r)
		}
		w.clock.Advance(time.Duration(secs)*time.Second - time.Millisecond)
		if r := w.attempt("ops", testPasswords["ops"], a); r.code != 429 {
			t.Fatalf("just before the backoff ends: %v", r)
		}
		w.clock.Advance(time.Millisecond)
		w.clock.Advance(time.Minute) // refill the bucket (decay needs 10 quiet minutes)
	}
	if r := w.attempt("ops", testPasswords["ops"], b); r.code != 303 {
		t.Fatalf("the login from another client, at once: %v", r)
	}
	if r := w.attempt("ops", testPasswords["ops"], a); r.code != 303 {
		t.Fatalf("after the backoff: %v", r)
	}
	w.attempt("ops", "wrong", a)
	if r := w.attempt("ops", testPasswords["ops"], a); r.retry != "1" {
		t.Errorf("a success did not reset the backoff: %v", r)
	}
}

// TestBackoffDecays: each quiet 10 minutes forget one failure of the pair.
func TestBackoffDecays(t *testing.T) {
	w := newTW(t)
	const a = "198.51.100.1"
	for i := 0; i < 5; i++ { // 5 failures: the next backoff is 16 s
		w.attempt("ops", "wrong", a)
		w.clock.Advance(time.Minute)
	}
	w.clock.Advance(20*time.Minute + 30*time.Second) // 21 quiet minutes: two forgotten
	w.attempt("ops", "wrong", a)                     // the fourth
	if r := w.attempt("ops", "wrong", a); r.code != 429 || r.retry != "8" {
		t.Errorf("after 21 quiet minutes: %v, want 429 and 8 (the fourth failure)", r)
	}
	w.clock.Advance(2 * time.Hour)
	w.attempt("ops", "wrong", a)
	if r := w.attempt("ops", "wrong", a); r.retry != "1" {
		t.Errorf("after two quiet hours: %v, want a first backoff again", r)
	}
}

// TestALoginIsNeverLockedOutByGuessesFromElsewhere: fault 6 of the attack
// (issue 17): wrong guesses for ops from two clients in turn, each waiting
// out its backoff, then the right password from a third at once.
func TestALoginIsNeverLockedOutByGuessesFromElsewhere(t *testing.T) {
	w := newTW(t)
	for i, a := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.1", "198.51.100.2", "198.51.100.1"} {
		if r := w.attempt("ops", "wrong", a); r.code != 401 {
			t.Fatalf("guess %d from %s: %v", i+1, a, r)
		}
		w.clock.Advance(time.Duration(1<<i) * time.Second)
	}
	if r := w.attempt("ops", testPasswords["ops"], "203.0.113.5"); r.code != 303 {
		t.Errorf("the operator from a third address: %v, want 303", r)
	}
	w.clock.Advance(5 * time.Minute)
	for i := 0; i < 6; i++ { // one guess per 5 minutes from one address
		w.attempt("ops", "wrong", "198.51.100.1")
		if r := w.attempt("ops", testPasswords["ops"], "203.0.113.5"); r.code != 303 {
			t.Fatalf("round %d: the operator: %v", i+1, r)
		}
		w.clock.Advance(5 * time.Minute)
	}
}

// TestKnownAndUnknownLoginsAnswerAlike: the same sequence of statuses and
// Retry-After for a configured login and a name that is none, so a quick
// second guess does not tell them apart.
func TestKnownAndUnknownLoginsAnswerAlike(t *testing.T) {
	seq := func(login, addr string) []string {
		w := newTW(t)
		var out []string
		for _, step := range []time.Duration{0, 0, 500 * time.Millisecond, 600 * time.Millisecond, 0, 2 * time.Second} {
			w.clock.Advance(step)
			out = append(out, w.attempt(login, "wrong", addr).String())
		}
		return out
	}
	known, unknown, bad := seq("ops", "198.51.100.1"), seq("carol", "198.51.100.1"), seq("No Such Name", "198.51.100.1")
	if strings.Join(known, ", ") != strings.Join(unknown, ", ") || strings.Join(known, ", ") != strings.Join(bad, ", ") {
		t.Errorf("a configured login: %v\nan unknown one:     %v\nnot a login name:   %v", known, unknown, bad)
	}
	if known[1] != "429 Retry-After 1" {
		t.Errorf("a second guess at once: %s, want 429 Retry-After 1", known[1])
	}
}

// TestOneAttemptPerLoginAndClientAtATime: while an attempt is hashing, a
// second of the same login from the same client gets 429 Retry-After 1;
// another client's attempt at the same login goes on.
func TestOneAttemptPerLoginAndClientAtATime(t *testing.T) {
	w := newTW(t)
	started, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	w.s.derive = func(pw string, salt []byte, iter int, pause func()) []byte {
		if first.CompareAndSwap(false, true) {
			close(started)
			<-release
		}
		return fastDerive(pw, salt, iter, pause)
	}
	done := make(chan *httptestResponse)
	go func() { done <- w.attempt("ops", testPasswords["ops"], "198.51.100.1") }()
	<-started
	if r := w.attempt("ops", testPasswords["ops"], "198.51.100.1"); r.code != 429 || r.retry != "1" {
		t.Errorf("the same pair meanwhile: %v, want 429 and 1", r)
	}
	if r := w.attempt("ops", testPasswords["ops"], "198.51.100.2"); r.code != 303 {
		t.Errorf("another client meanwhile: %v, want 303", r)
	}
	close(release)
	if r := <-done; r.code != 303 {
		t.Errorf("the first attempt: %v", r)
	}
}

// TestEveryRefusedAttemptIsLogged: a refusal by the bucket, a backoff, an
// attempt in flight and a full hashing queue each write the one
// failed-login line, so fail2ban counts them.
func TestEveryRefusedAttemptIsLogged(t *testing.T) {
	w := newTW(t)
	w.attempt("ops", "wrong", "198.51.100.1")
	n := w.lines()
	if r := w.attempt("ops", "wrong", "198.51.100.1"); r.code != 429 || w.lines() != n+1 {
		t.Errorf("backoff: %v, %d lines", r, w.lines()-n)
	}
	for i := 0; i < 5; i++ {
		w.attempt("nobody"+strconv.Itoa(i), "x", "198.51.100.2")
	}
	n = w.lines()
	if r := w.attempt("nobody9", "x", "198.51.100.2"); r.code != 429 || w.lines() != n+1 {
		t.Errorf("bucket: %v, %d lines", r, w.lines()-n)
	}
	w.s.queue = loginlimit.NewQueueSized(0, 0, 0, time.Second) // every slot taken, no room to wait
	n = w.lines()
	if r := w.attempt("al", testPasswords["al"], "198.51.100.3"); r.code != 503 || r.retry != "5" || w.lines() != n+1 {
		t.Errorf("a full hashing queue: %v, %d lines; want 503 Retry-After 5 and one line", r, w.lines()-n)
	}
	if !strings.HasSuffix(w.log.String(), "agent-box-auth: login failed login=al addr=198.51.100.3\n") {
		t.Errorf("the last line: %q", w.log.String())
	}
}

// TestUnknownLoginCostsOneDummyHash: an unknown login hashes exactly as
// often, and at the same cost, as a known one with a wrong password.
func TestUnknownLoginCostsOneDummyHash(t *testing.T) {
	w := newTW(t)
	for _, tc := range []struct{ name, login, password string }{
		{"known, wrong password", "ops", "wrong"},
		{"known, right password", "al", testPasswords["al"]},
		{"unknown", "carol", "x"},
		{"not even a login name", "Carol\nx", "x"},
		{"empty", "", ""},
	} {
		w.clock.Advance(time.Hour)
		calls := w.calls.Load()
		w.mu.Lock()
		w.iters = nil
		w.mu.Unlock()
		w.attempt(tc.login, tc.password, "198.51.100.1")
		w.mu.Lock()
		iters := append([]int{}, w.iters...)
		w.mu.Unlock()
		if got := w.calls.Load() - calls; got != 1 || len(iters) != 1 || iters[0] != pwhash.MinIterations {
			t.Errorf("%s: %d hashes at %v iterations, want 1 at %d", tc.name, got, iters, pwhash.MinIterations)
		}
	}
}

func TestTheDummyHashCostsAsMuchAsTheDearestLogin(t *testing.T) {
	h := pwhash.Dummy(map[string]pwhash.Hash{"a": {Iterations: 700_000}, "b": {Iterations: 650_000}})
	if h.Iterations != 700_000 || len(h.Salt) != pwhash.SaltLen || len(h.Key) != pwhash.KeyLen {
		t.Errorf("%d iterations, %d-byte salt, %d-byte key", h.Iterations, len(h.Salt), len(h.Key))
	}
	if pwhash.Dummy(nil).Iterations != pwhash.MinIterations {
		t.Error("without logins")
	}
}

// TestAtMostTwoHashesAtOnce: many logins at once from many addresses.
func TestAtMostTwoHashesAtOnce(t *testing.T) {
	w := newTW(t)
	var active, peak atomic.Int64
	w.s.derive = func(pw string, salt []byte, iter int, pause func()) []byte {
		n := active.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(5 * time.Millisecond)
		active.Add(-1)
		return fastDerive(pw, salt, iter, pause)
	}
	var wg sync.WaitGroup
	for i := 0; i < 24; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.attempt("nobody", "x", "198.51.100."+strconv.Itoa(i+1))
		}()
	}
	wg.Wait()
	if peak.Load() != 2 {
		t.Errorf("at most %d hashes ran at once, want 2", peak.Load())
	}
}

// gate is a derive that blocks every hash until released, in order of
// arrival, and records the password of each hash as it starts.
type gate struct {
	mu      sync.Mutex
	started []string
	cond    *sync.Cond
	allowed int
}

func newGate() *gate { g := &gate{}; g.cond = sync.NewCond(&g.mu); return g }

func (g *gate) derive(pw string, salt []byte, iter int, pause func()) []byte {
	g.mu.Lock()
	g.started = append(g.started, pw)
	n := len(g.started)
	g.cond.Broadcast()
	for n > g.allowed {
		g.cond.Wait()
	}
	g.mu.Unlock()
	return fastDerive(pw, salt, iter, pause)
}

// waitStarted waits until n hashes have started.
func (g *gate) waitStarted(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(g.started) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d hashes started: %v", len(g.started), n, g.started)
		}
		g.mu.Unlock()
		time.Sleep(time.Millisecond)
		g.mu.Lock()
	}
	return append([]string{}, g.started...)
}

// let lets the next n hashes finish.
func (g *gate) let(n int) { g.mu.Lock(); g.allowed += n; g.cond.Broadcast(); g.mu.Unlock() }

// TestAGuessingFloodCannotQueueALoginBehindIt: fault 7 of the attack. While
// clients with failures fill the hash slots and the queue, a login from a
// client without failures gets the next free slot, ahead of every guess
// waiting, and every refusal is at once (no request waits unbounded).
func TestAGuessingFloodCannotQueueALoginBehindIt(t *testing.T) {
	w := newTW(t)
	g := newGate()
	g.allowed = 1 << 30
	w.s.derive = g.derive
	// 16 guessers, each with one failure already: suspects
	for i := 0; i < 16; i++ {
		w.attempt("flood"+strconv.Itoa(i), "first", "198.51.100."+strconv.Itoa(10+i))
	}
	g.mu.Lock()
	g.started, g.allowed = nil, 0
	g.mu.Unlock()
	w.s.queue = loginlimit.NewQueueSized(loginlimit.HashSlots, loginlimit.QueueClean, loginlimit.QueueSuspect, time.Minute)
	var wg sync.WaitGroup
	var answered atomic.Int64
	results := make([]*httptestResponse, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = w.attempt("flood"+strconv.Itoa(i)+"x", "guess"+strconv.Itoa(i), "198.51.100."+strconv.Itoa(10+i))
			answered.Add(1)
		}()
	}
	// suspects hold at most one slot, four wait, the rest are refused at once
	deadline := time.Now().Add(10 * time.Second)
	for answered.Load() < 11 {
		if time.Now().After(deadline) {
			t.Fatalf("%d guesses answered, want 11 refused at once", answered.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if s := g.waitStarted(t, 1); len(s) != 1 {
		t.Fatalf("started %v", s)
	}
	op := make(chan *httptestResponse)
	go func() { op <- w.attempt("ops", testPasswords["ops"], "203.0.113.5") }()
	if s := g.waitStarted(t, 2); s[1] != testPasswords["ops"] {
		t.Fatalf("the second slot went to %q, want the operator's login", s[1])
	}
	g.let(2)
	if r := <-op; r.code != 303 {
		t.Errorf("the operator: %v", r)
	}
	g.let(100)
	wg.Wait()
	counts := map[int]int{}
	for _, r := range results {
		counts[r.code]++
	}
	if counts[503] != 11 || counts[401] != 5 {
		t.Errorf("the guesses: %v, want 11 refused (503) and 5 checked (401)", counts)
	}
}

var failedLineRE = regexp.MustCompile(`^agent-box-auth: login failed login=([a-z][a-z0-9_-]{0,31}|-) addr=([0-9.]+|[0-9a-f:]+/64|::1|-)\n$`)

// TestFailedLoginLine: exactly one line of the fixed format per failed
// login, whatever the client sends; the address is the client the limits
// count (an IPv6 address's /64) so that fail2ban bans the same.
func TestFailedLoginLine(t *testing.T) {
	for _, tc := range []struct {
		name, login string
		addr        []string // X-Agent-Box-Client values
		want        string
	}{
		{"a known login", "ops", []string{"198.51.100.1"}, "login=ops addr=198.51.100.1"},
		{"an unknown login", "carol", []string{"198.51.100.1"}, "login=carol addr=198.51.100.1"},
		{"IPv6: its /64", "ops", []string{"2001:DB8::1"}, "login=ops addr=2001:db8::/64"},
		{"IPv4 in IPv6: the IPv4 address", "ops", []string{"::ffff:198.51.100.1"}, "login=ops addr=198.51.100.1"},
		{"loopback: the address", "ops", []string{"127.0.0.9"}, "login=ops addr=127.0.0.9"},
		{"IPv6 loopback", "ops", []string{"::1"}, "login=ops addr=::1"},
		{"a newline in the login", "ops\nagent-box-auth: login failed login=root addr=1.2.3.4", []string{"198.51.100.1"}, "login=- addr=198.51.100.1"},
		{"a carriage return", "ops\r", []string{"198.51.100.1"}, "login=- addr=198.51.100.1"},
		{"addr= in the login", "ops addr=1.2.3.4", []string{"198.51.100.1"}, "login=- addr=198.51.100.1"},
		{"a space", "o ps", []string{"198.51.100.1"}, "login=- addr=198.51.100.1"},
		{"capitals", "Ops", []string{"198.51.100.1"}, "login=- addr=198.51.100.1"},
		{"33 characters", "a" + strings.Repeat("b", 32), []string{"198.51.100.1"}, "login=- addr=198.51.100.1"},
		{"32 characters", "a" + strings.Repeat("b", 31), []string{"198.51.100.1"}, "login=a" + strings.Repeat("b", 31) + " addr=198.51.100.1"},
		{"empty", "", []string{"198.51.100.1"}, "login=- addr=198.51.100.1"},
		{"unicode", "öps", []string{"198.51.100.1"}, "login=- addr=198.51.100.1"},
		{"no client header", "ops", nil, "login=ops addr=-"},
		{"two client headers", "ops", []string{"198.51.100.1", "198.51.100.2"}, "login=ops addr=-"},
		{"a client header with a newline", "ops", []string{"1.2.3.4\nagent-box-auth: login failed login=x addr=5.6.7.8"}, "login=ops addr=-"},
		{"a client header with a space", "ops", []string{"1.2.3.4 addr=5.6.7.8"}, "login=ops addr=-"},
		{"a client header with a zone", "ops", []string{"fe80::1%eth0 addr=5.6.7.8"}, "login=ops addr=-"},
		{"a client header with a port", "ops", []string{"1.2.3.4:5"}, "login=ops addr=-"},
		{"a host name", "ops", []string{"evil.example"}, "login=ops addr=-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTW(t)
			req := rq{method: "POST", host: "box.test", target: "/auth/login",
				form: url.Values{"login": {tc.login}, "password": {"wrong"}}, header: map[string]string{clientHeader: ""}}
			rec := w.doWith(w.s.Pages(), req, func(r *http.Request) {
				r.Header.Del(clientHeader)
				for _, a := range tc.addr {
					r.Header.Add(clientHeader, a)
				}
				r.Header.Set("X-Forwarded-For", "6.6.6.6")
			})
			if rec.Code != 401 {
				t.Fatalf("%d", rec.Code)
			}
			got := w.log.String()
			if !failedLineRE.MatchString(got) || got != "agent-box-auth: login failed "+tc.want+"\n" {
				t.Errorf("logged %q, want %q", got, "agent-box-auth: login failed "+tc.want+"\n")
			}
		})
	}
}

func TestASuccessfulLoginLogsNothing(t *testing.T) {
	w := newTW(t)
	w.login("ops")
	if got := w.log.String(); got != "" {
		t.Errorf("logged %q", got)
	}
}
