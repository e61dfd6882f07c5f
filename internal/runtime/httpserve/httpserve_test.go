package httpserve

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// short are limits small enough to pass in a test.
var short = Limits{ReadHeader: 200 * time.Millisecond, Read: 300 * time.Millisecond, Write: 300 * time.Millisecond, Idle: time.Second}

// serve runs Serve with one listener on a unix socket and returns a client
// for it; the cleanup ends Serve and waits for it.
func serve(t *testing.T, l Listener) (*http.Client, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.L = ln
	if l.Name == "" {
		l.Name = "test"
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, 2*time.Second, nil, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	t.Cleanup(c.CloseIdleConnections)
	return c, sock
}

// slowTwoParts writes "one", waits past the write deadline, writes "two".
func slowTwoParts(unbound bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if unbound {
			if err := Unbound(w); err != nil {
				panic(err)
			}
		}
		io.WriteString(w, "one\n")
		http.NewResponseController(w).Flush()
		time.Sleep(2 * short.Write)
		io.WriteString(w, "two\n")
	}
}

func TestEveryAnswerCarriesTheBaselineHeaders(t *testing.T) {
	c, _ := serve(t, Listener{Limits: short, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'none'")
		io.WriteString(w, "ok")
	})})
	for _, path := range []string{"/", "/missing"} {
		res, err := c.Get("http://x" + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		want := http.Header{}
		Baseline(want)
		for k := range want {
			if got := res.Header.Values(k); len(got) != 1 || got[0] != want.Get(k) {
				t.Errorf("%s: %s = %q, want %q", path, k, got, want.Get(k))
			}
		}
	}
}

func TestABoundedAnswerIsCutAtItsWriteDeadline(t *testing.T) {
	c, _ := serve(t, Listener{Limits: short, Handler: slowTwoParts(false)})
	res, err := c.Get("http://x/")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err == nil || strings.Contains(string(body), "two") {
		t.Errorf("the answer went on past its write deadline: %q, %v", body, err)
	}
}

func TestUnboundLiftsTheDeadlinesOfItsRequestOnly(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/long", slowTwoParts(true))
	mux.Handle("/short", slowTwoParts(false))
	c, _ := serve(t, Listener{Limits: short, Handler: mux})
	get := func(path string) (string, error) {
		res, err := c.Get("http://x" + path)
		if err != nil {
			return "", err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return string(b), err
	}
	if body, err := get("/long"); err != nil || body != "one\ntwo\n" {
		t.Fatalf("the unbound answer: %q, %v", body, err)
	}
	// the same kept-alive connection: bounded again
	if body, err := get("/short"); err == nil || strings.Contains(body, "two") {
		t.Errorf("the next request was not bounded: %q, %v", body, err)
	}
}

// net/http clears a connection's deadlines when it is hijacked (a
// WebSocket): the fact the web daemon's terminals rely on, checked here.
func TestAHijackedConnectionOutlivesBothDeadlines(t *testing.T) {
	_, sock := serve(t, Listener{Limits: short, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		rw.Flush()
		for {
			line, err := rw.ReadString('\n')
			if err != nil {
				return
			}
			rw.WriteString(line)
			rw.Flush()
		}
	})})
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", res, err)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	for i := range 3 {
		time.Sleep(short.Read + short.Write) // past both deadlines each time
		io.WriteString(conn, "ping\n")
		if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
			t.Fatalf("echo %d after %s: %q, %v", i, time.Duration(i+1)*(short.Read+short.Write), line, err)
		}
	}
}

// A proxy dials connections ahead and keeps them in its pool: a request
// on a connection older than the limits is bounded from its own headers,
// not from the connection's accept.
func TestARequestOnAnOldConnectionGetsItsWholeTime(t *testing.T) {
	lim := short
	lim.ReadHeader = 10 * time.Second // longer than the proxy holds it
	_, sock := serve(t, Listener{Limits: lim, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		io.WriteString(w, "got "+string(b))
	})})
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	time.Sleep(2 * (short.Read + short.Write)) // held unused, as in a pool
	io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n")
	time.Sleep(50 * time.Millisecond) // the body in a read of its own
	io.WriteString(conn, "hello")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("a request on a connection held %s: %v", 2*(short.Read+short.Write), err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || string(body) != "got hello" {
		t.Errorf("answer %d %q, want 200 \"got hello\"", res.StatusCode, body)
	}
}

func TestAClientThatSendsNoHeadersIsDisconnected(t *testing.T) {
	_, sock := serve(t, Listener{Limits: short, Handler: http.NotFoundHandler()})
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET / HTTP/1.1\r\n") // and nothing more
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server still held the connection after 10s")
	}
}

func TestServeEndsRequestsWithItsContextOnlyWhenAsked(t *testing.T) {
	for _, end := range []bool{true, false} {
		t.Run(map[bool]string{true: "EndWithServe ends a long request", false: "a request in flight finishes"}[end], func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "s")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			started := make(chan struct{})
			ended := make(chan string, 1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(started)
				select {
				case <-r.Context().Done():
					ended <- "cancelled"
				case <-time.After(500 * time.Millisecond):
					ended <- "finished"
				}
			})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- Serve(ctx, 5*time.Second, nil, Listener{Name: "t", L: ln, Handler: h, Limits: Limits{ReadHeader: time.Second}, EndWithServe: end})
			}()
			go func() {
				conn, err := net.Dial("unix", sock)
				if err == nil {
					io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
					io.ReadAll(conn)
					conn.Close()
				}
			}()
			<-started
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			want := map[bool]string{true: "cancelled", false: "finished"}[end]
			if got := <-ended; got != want {
				t.Errorf("the request %s, want %s", got, want)
			}
		})
	}
}

func TestAFailingListenerEndsServeWithItsName(t *testing.T) {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	err = Serve(context.Background(), time.Second, nil, Listener{Name: "pages", L: ln, Handler: http.NotFoundHandler(), Limits: short})
	if err == nil || !strings.Contains(err.Error(), `listener "pages"`) {
		t.Errorf("Serve on a closed listener: %v", err)
	}
}
