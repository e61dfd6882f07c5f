package apprun

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The test binary is also the program the launcher runs: with
// APPRUN_HELPER set it serves HTTP on 127.0.0.1:$PORT ("serve") or exits
// with status 3 ("crash").
func TestMain(m *testing.M) {
	switch os.Getenv("APPRUN_HELPER") {
	case "serve":
		l, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, body)
		}))
		os.Exit(1)
	case "crash":
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// statuses records the status texts a run sets.
type statuses struct {
	mu   sync.Mutex
	list []string
	ch   chan string
}

func newStatuses() *statuses { return &statuses{ch: make(chan string, 1024)} }

func (s *statuses) set(t string) {
	s.mu.Lock()
	s.list = append(s.list, t)
	s.mu.Unlock()
	s.ch <- t
}

// await returns the first status (from now on) with prefix, failing after
// 10 s.
func (s *statuses) await(t *testing.T, prefix string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-s.ch:
			if strings.HasPrefix(got, prefix) {
				return got
			}
		case <-deadline:
			s.mu.Lock()
			defer s.mu.Unlock()
			t.Fatalf("no status %q within 10 s; statuses: %q", prefix, s.list)
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// launch runs the launcher in the background until the test ends.
func launch(t *testing.T, cfg Config) *statuses {
	t.Helper()
	st := newStatuses()
	cfg.Status = st.set
	cfg.Logf = t.Logf
	if cfg.Backoff == (Backoff{}) {
		cfg.Backoff = Backoff{Min: 20 * time.Millisecond, Max: 80 * time.Millisecond}
	}
	if cfg.Settle == 0 {
		cfg.Settle = 20 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-ended:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not end within 10 s of its context")
		}
	})
	return st
}

func helperEnv(mode string, port int) []string {
	return []string{"APPRUN_HELPER=" + mode, "PORT=" + strconv.Itoa(port), "PATH=/usr/bin:/bin"}
}

// get sends one HTTP request over the unix socket sock.
func get(t *testing.T, sock, method, path, body string) (int, string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	// A failed send fails the test: curl gives up on one (a reset while it
	// still sends, "Send failure: Broken pipe"), and so would a browser.
	if _, err := fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: app\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", method, path, len(body), body); err != nil {
		t.Fatalf("sending %s %s: %v", method, path, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestBackoffDoublesWhileExitsAreQuickAndStartsOverAfterALongRun(t *testing.T) {
	b := Backoff{Min: time.Second, Max: 8 * time.Second}
	for _, tc := range []struct {
		prev, uptime, want time.Duration
	}{
		{0, 0, time.Second},
		{time.Second, 0, 2 * time.Second},
		{2 * time.Second, time.Second, 4 * time.Second},
		{4 * time.Second, 7 * time.Second, 8 * time.Second},
		{8 * time.Second, 0, 8 * time.Second},
		{8 * time.Second, 8 * time.Second, time.Second},
	} {
		if got := b.Next(tc.prev, tc.uptime); got != tc.want {
			t.Errorf("Next(%v, %v) = %v, want %v", tc.prev, tc.uptime, got, tc.want)
		}
	}
}

func TestAWaitingAppStartsItsProgramWhenItAppearsAndServes(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "app.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	prog := filepath.Join(dir, "bin", "server")
	st := launch(t, Config{Dir: dir, WaitFor: prog, Argv: []string{"bin/server"}, Env: helperEnv("serve", port), Port: port, Listener: l})
	st.await(t, "waiting for "+prog)

	t.Run("a request while it waits says so", func(t *testing.T) {
		code, body := get(t, sock, "GET", "/", "")
		if code != 503 || !strings.Contains(body, "waiting for "+prog) {
			t.Errorf("got %d %q, want 503 saying it waits for %s", code, body, prog)
		}
	})
	t.Run("a request with a body while it waits gets the answer, not a reset", func(t *testing.T) {
		code, body := get(t, sock, "PUT", "/records/big", strings.Repeat("x", 512<<10))
		if code != 503 || !strings.Contains(body, "waiting for") {
			t.Errorf("got %d %q, want 503 saying it waits", code, body)
		}
	})
	t.Run("the program starts once its file appears in a new directory", func(t *testing.T) {
		if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		appeared := time.Now()
		if err := os.WriteFile(prog, data, 0o755); err != nil {
			t.Fatal(err)
		}
		st.await(t, "running bin/server")
		t.Logf("started %v after the file was written", time.Since(appeared).Round(time.Millisecond))
	})
	t.Run("a request reaches it through the socket", func(t *testing.T) {
		code, body := get(t, sock, "PUT", "/records/a", "hello")
		if code != 200 || body != "PUT /records/a hello" {
			t.Errorf("got %d %q, want 200 %q", code, body, "PUT /records/a hello")
		}
	})
}

func TestACrashingProgramIsRetriedWithGrowingDelays(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Max far above the helper's run (70 to 500 ms under -race on a busy
	// machine): each exit is a quick one.
	st := launch(t, Config{Dir: t.TempDir(), Argv: []string{self}, Env: helperEnv("crash", 0),
		Backoff: Backoff{Min: 20 * time.Millisecond, Max: 10 * time.Second}})
	var delays []string
	for i := 0; i < 4; i++ {
		got := st.await(t, "backing off ")
		if !strings.Contains(got, "exited with status 3") || !strings.Contains(got, fmt.Sprintf("(restarts %d)", i)) {
			t.Errorf("status %q: want the exit status 3 and restarts %d", got, i)
		}
		delays = append(delays, strings.Fields(got)[2])
	}
	want := []string{"20ms:", "40ms:", "80ms:", "160ms:"}
	if strings.Join(delays, " ") != strings.Join(want, " ") {
		t.Errorf("delays %q, want %q", delays, want)
	}
}

// TestTheRunningStatusSaysHowTheProgramLastEnded: once it has exited, the
// status while it runs again keeps the last exit (the settings page and
// `agent-box app status` show it).
func TestTheRunningStatusSaysHowTheProgramLastEnded(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	st := launch(t, Config{Dir: t.TempDir(), Argv: []string{self}, Env: helperEnv("crash", 0),
		Backoff: Backoff{Min: 20 * time.Millisecond, Max: 10 * time.Second}})
	first := st.await(t, "running ")
	if strings.Contains(first, "last exit") {
		t.Errorf("first start %q: no exit yet", first)
	}
	st.await(t, "backing off ")
	again := st.await(t, "running ")
	if !strings.Contains(again, " restarts 1), last exit: exited with status 3 after ") {
		t.Errorf("status %q: want restarts 1 and the last exit", again)
	}
}

func TestAProgramThatCannotBeFoundIsRetriedNotFatal(t *testing.T) {
	st := launch(t, Config{Dir: t.TempDir(), Argv: []string{"no-such-program-here"}, Env: []string{"PATH=/nonexistent"}})
	got := st.await(t, "backing off ")
	if !strings.Contains(got, "not found in PATH") {
		t.Errorf("status %q: want it to say the program is not found", got)
	}
	st.await(t, "backing off ") // and again
}

// TestALauncherEndsWhenItsDirectoryIsRemovedOrMovedAway: the unit's bind
// mount would keep showing the old directory; systemd starts the unit
// again with the new one.
func TestALauncherEndsWhenItsDirectoryIsRemovedOrMovedAway(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(dir string) error
	}{
		{"removed", os.RemoveAll},
		{"moved away", func(dir string) error { return os.Rename(dir, dir+".old") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "app")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			st := newStatuses()
			ended := make(chan error, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				ended <- Run(ctx, Config{Dir: dir, Argv: []string{self}, Env: helperEnv("serve", freePort(t)),
					Backoff: Backoff{Min: 20 * time.Millisecond, Max: 80 * time.Millisecond}, Settle: 20 * time.Millisecond,
					Status: st.set, Logf: t.Logf})
			}()
			st.await(t, "running ")
			if err := tc.change(dir); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-ended:
				if err != ErrDirReplaced {
					t.Errorf("Run = %v, want ErrDirReplaced", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not end within 10 s of its directory being " + tc.name)
			}
		})
	}
}

func TestALauncherWithItsDirectoryInPlaceEndsOnlyWithItsContext(t *testing.T) {
	st := launch(t, Config{Dir: t.TempDir(), Argv: []string{"/bin/sleep", "60"}, Env: []string{"PATH=/bin"}})
	st.await(t, "running /bin/sleep")
	// launch's cleanup cancels the context and checks that Run returns nil.
}
