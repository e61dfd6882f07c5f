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

// TestPerAddressTokenBucket: 5 attempts, then one more every 12 s; a
// refused attempt hashes nothing and logs nothing; other addresses are
// not affected.
func TestPerAddressTokenBucket(t *testing.T) {
	for _, addr := range []string{"198.51.100.1", "127.0.0.1", "2001:db8::1"} {
		t.Run(addr, func(t *testing.T) {
			w := newTW(t)
			for i := 0; i < 5; i++ {
				// unknown logins: no per-login backoff gets in the way
				if r := w.attempt("nobody"+string(rune('a'+i)), "x", addr); r.code != 401 {
					t.Fatalf("attempt %d: %d", i+1, r.code)
				}
			}
			calls, logged := w.calls.Load(), w.log.String()
			r := w.attempt("nobodyf", "x", addr)
			if r.code != http.StatusTooManyRequests || r.retry != "12" {
				t.Errorf("sixth attempt: %d Retry-After %q, want 429 and 12", r.code, r.retry)
			}
			if w.calls.Load() != calls || w.log.String() != logged {
				t.Errorf("the refused attempt hashed (%d) or logged", w.calls.Load()-calls)
			}
			if r := w.attempt("ops", testPasswords["ops"], addr); r.code != 429 {
				t.Errorf("the right password, refused by the bucket: %d", r.code)
			}
			if r := w.attempt("nobodyg", "x", "203.0.113.9"); r.code != 401 {
				t.Errorf("another address: %d", r.code)
			}
			w.clock.Advance(6 * time.Second)
			if r := w.attempt("nobodyh", "x", addr); r.code != 429 || r.retry != "6" {
				t.Errorf("after 6 s: %d Retry-After %q, want 429 and 6", r.code, r.retry)
			}
			w.clock.Advance(6 * time.Second)
			if r := w.attempt("ops", testPasswords["ops"], addr); r.code != 303 {
				t.Errorf("after 12 s: %d, want the one refilled attempt", r.code)
			}
			if r := w.attempt("nobodyi", "x", addr); r.code != 429 {
				t.Errorf("and then: %d", r.code)
			}
		})
	}
}

func TestIPv6AddressesShareTheirSlash64(t *testing.T) {
	w := newTW(t)
	for i := 0; i < 5; i++ {
		w.attempt("nobody", "x", "2001:db8:1:2::"+string(rune('a'+i)))
	}
	if r := w.attempt("nobody", "x", "2001:db8:1:2:ffff::1"); r.code != 429 {
		t.Errorf("a sixth address of the /64: %d", r.code)
	}
	if r := w.attempt("nobody", "x", "2001:db8:1:3::1"); r.code != 401 {
		t.Errorf("another /64: %d", r.code)
	}
}

// TestPerLoginBackoff: 1 s, 2 s, 4 s ... 5 min after each failure of a
// login, from any address, loopback included; reset by a success.
func TestPerLoginBackoff(t *testing.T) {
	w := newTW(t)
	addrs := []string{"127.0.0.1", "::1", "198.51.100.1", "198.51.100.2", "198.51.100.3"}
	n := 0
	addr := func() string { n++; return addrs[n%len(addrs)] } // spread over buckets
	want := []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300}
	for i, secs := range want {
		calls := w.calls.Load()
		if r := w.attempt("ops", "wrong", addr()); r.code != 401 {
			t.Fatalf("failure %d: %d", i+1, r.code)
		}
		if w.calls.Load() != calls+1 {
			t.Fatalf("failure %d hashed %d times", i+1, w.calls.Load()-calls)
		}
		r := w.attempt("ops", testPasswords["ops"], addr())
		if r.code != 429 || r.retry != strconv.Itoa(secs) {
			t.Fatalf("right after failure %d: %d Retry-After %q, want 429 and %d", i+1, r.code, r.retry, secs)
		}
		if w.calls.Load() != calls+1 {
			t.Fatalf("the refused attempt hashed")
		}
		if r := w.attempt("al", "wrong", addr()); r.code != 401 {
			t.Fatalf("another login is not held back: %d", r.code)
		}
		w.clock.Advance(time.Duration(secs)*time.Second - time.Millisecond)
		if r := w.attempt("ops", testPasswords["ops"], addr()); r.code != 429 {
			t.Fatalf("just before the backoff ends: %d", r.code)
		}
		w.clock.Advance(time.Millisecond)
		w.clock.Advance(time.Hour) // refill the buckets and let al's backoff pass
	}
	if r := w.attempt("ops", testPasswords["ops"], addr()); r.code != 303 {
		t.Fatalf("after the backoff: %d", r.code)
	}
	w.attempt("ops", "wrong", addr())
	if r := w.attempt("ops", testPasswords["ops"], addr()); r.retry != "1" {
		t.Errorf("a success did not reset the backoff: Retry-After %q", r.retry)
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
		if got := w.calls.Load() - calls; got != 1 || len(iters) != 1 || iters[0] != MinIterations {
			t.Errorf("%s: %d hashes at %v iterations, want 1 at %d", tc.name, got, iters, MinIterations)
		}
	}
}

func TestTheDummyHashCostsAsMuchAsTheDearestLogin(t *testing.T) {
	h := dummyHash(map[string]Hash{"a": {Iterations: 700_000}, "b": {Iterations: 650_000}})
	if h.Iterations != 700_000 || len(h.Salt) != saltLen || len(h.Key) != keyLen {
		t.Errorf("%d iterations, %d-byte salt, %d-byte key", h.Iterations, len(h.Salt), len(h.Key))
	}
	if dummyHash(nil).Iterations != MinIterations {
		t.Error("without logins")
	}
}

// TestAtMostTwoHashesAtOnce: many logins at once from many addresses.
func TestAtMostTwoHashesAtOnce(t *testing.T) {
	w := newTW(t)
	var active, peak atomic.Int64
	w.s.derive = func(pw string, salt []byte, iter int) []byte {
		n := active.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(5 * time.Millisecond)
		active.Add(-1)
		return fastDerive(pw, salt, iter)
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

var failedLineRE = regexp.MustCompile(`^agent-box-auth: login failed login=([a-z][a-z0-9_-]{0,31}|-) addr=([0-9a-f.:]+|-)\n$`)

// TestFailedLoginLine: exactly one line of the fixed format per failed
// login, whatever the client sends.
func TestFailedLoginLine(t *testing.T) {
	for _, tc := range []struct {
		name, login string
		addr        []string // X-Agent-Box-Client values
		want        string
	}{
		{"a known login", "ops", []string{"198.51.100.1"}, "login=ops addr=198.51.100.1"},
		{"an unknown login", "carol", []string{"198.51.100.1"}, "login=carol addr=198.51.100.1"},
		{"IPv6", "ops", []string{"2001:DB8::1"}, "login=ops addr=2001:db8::1"},
		{"IPv4 in IPv6", "ops", []string{"::ffff:198.51.100.1"}, "login=ops addr=::ffff:198.51.100.1"},
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

func TestTheHTTPErrorLogIsEscaped(t *testing.T) {
	var b syncBuf
	l := &logger{w: &b}
	l.httpLog().Printf("bad request from %s", "x\nagent-box-auth: login failed login=root addr=1.2.3.4")
	if got, want := b.String(), `agent-box-auth: http: bad request from x\nagent-box-auth: login failed login=root addr=1.2.3.4`+"\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
