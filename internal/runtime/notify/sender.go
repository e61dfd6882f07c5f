package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/journal"
)

// Limits bound a Sender (the contract's, in production; tests shorten
// them).
type Limits struct {
	Queue        int           // events waiting per login and user; one more drops that user's oldest
	Attempts     int           // tries per event
	Timeout      time.Duration // per try: connecting, sending, the answer's headers and body
	BackoffFirst time.Duration // the wait after the first failure, doubled after each
	BackoffMax   time.Duration
}

// DefaultLimits are the contract's.
func DefaultLimits() Limits {
	n := contract.Attention.Notify
	return Limits{
		Queue: n.Queue, Attempts: n.Attempts, Timeout: contract.Duration(n.Timeout),
		BackoffFirst: contract.Duration(n.BackoffFirst), BackoffMax: contract.Duration(n.BackoffMax),
	}
}

// Sender delivers events to the logins' URLs: one queue and one worker per
// login, so a slow or dead endpoint holds back only its own login's
// notifications. Inside a login's queue each agent user has a queue of
// its own, taken in turn: one user's burst drops only that user's oldest,
// and another user's first notification waits behind at most one
// notification of each other user with some waiting (and the one being
// delivered). A user's notifications go in order.
type Sender struct {
	urls   map[string]string
	lim    Limits
	client *http.Client
	log    *journal.Logger

	mu     sync.Mutex
	queues map[string]*queue
	wg     sync.WaitGroup
	ctx    context.Context
}

type queue struct {
	byUser  map[string][]Event // each user's waiting events, oldest first
	turn    []string           // the users with events waiting, whose turn comes first first
	wake    chan struct{}      // one token: the worker has events to send
	dropped map[string]int     // per user, since the last log line about it
}

func newQueue() *queue {
	return &queue{byUser: map[string][]Event{}, wake: make(chan struct{}, 1), dropped: map[string]int{}}
}

// NewSender sends to urls (login -> URL) under lim through client (nil:
// a client that uses no proxy and follows no redirect), logging to log.
func NewSender(urls map[string]string, lim Limits, client *http.Client, log *journal.Logger) *Sender {
	if client == nil {
		client = &http.Client{
			Transport:     &http.Transport{Proxy: nil, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 1, IdleConnTimeout: time.Minute},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return &Sender{urls: urls, lim: lim, client: client, log: log, queues: map[string]*queue{}}
}

// Run starts the workers; they stop when ctx ends (events still queued are
// lost: the log says how many). Wait waits for them.
func (s *Sender) Run(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctx = ctx
	for login := range s.urls {
		q := newQueue()
		s.queues[login] = q
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.work(ctx, login, q) }()
	}
}

// Wait returns when every worker has stopped.
func (s *Sender) Wait() { s.wg.Wait() }

// Enqueue queues e for its login; false when the login has no URL.
// Beyond the bound of its user's queue that user's oldest waiting event
// is dropped (and counted in the log).
func (s *Sender) Enqueue(e Event) bool {
	s.mu.Lock()
	q := s.queues[e.Login]
	if q == nil {
		s.mu.Unlock()
		return false
	}
	waiting := q.byUser[e.User]
	if len(waiting) == 0 {
		q.turn = append(q.turn, e.User)
	}
	waiting = append(waiting, e)
	if len(waiting) > s.lim.Queue {
		waiting = waiting[1:]
		q.dropped[e.User]++
	}
	q.byUser[e.User] = waiting
	s.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// next takes the oldest event of the user whose turn it is (that user's
// turn then comes again after every other user's), and how many of each
// user's were dropped since the last call.
func (s *Sender) next(q *queue) (Event, map[string]int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := q.dropped
	if len(d) > 0 {
		q.dropped = map[string]int{}
	}
	if len(q.turn) == 0 {
		return Event{}, d, false
	}
	u := q.turn[0]
	q.turn = q.turn[1:]
	waiting := q.byUser[u]
	e := waiting[0]
	if len(waiting) > 1 {
		q.byUser[u] = waiting[1:]
		q.turn = append(q.turn, u)
	} else {
		delete(q.byUser, u)
	}
	return e, d, true
}

// waiting is how many events q holds.
func (q *queue) waiting() int {
	n := 0
	for _, es := range q.byUser {
		n += len(es)
	}
	return n
}

func (s *Sender) work(ctx context.Context, login string, q *queue) {
	for {
		e, dropped, ok := s.next(q)
		for _, u := range sortedKeys(dropped) {
			s.log.Printf("login %s: dropped %d notifications of %s: more than %d were waiting", login, dropped[u], u, s.lim.Queue)
		}
		if !ok {
			select {
			case <-q.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		if !s.deliver(ctx, login, e) && ctx.Err() != nil {
			s.mu.Lock()
			n := q.waiting() + 1
			s.mu.Unlock()
			s.log.Printf("login %s: stopping with %d notifications not sent", login, n)
			return
		}
	}
}

// deliver tries e up to Attempts times with backoff; it reports whether
// the endpoint took it. A 4xx answer other than 408 and 429 is final (the
// endpoint refuses this request; sending it again cannot help).
func (s *Sender) deliver(ctx context.Context, login string, e Event) bool {
	wait := s.lim.BackoffFirst
	for attempt := 1; ; attempt++ {
		start := time.Now()
		err, final := s.post(ctx, s.urls[login], e)
		if err == nil {
			s.log.Printf("login %s: sent %s %s (try %d, %d ms)", login, e.User, e.State, attempt, time.Since(start).Milliseconds())
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if final || attempt >= s.lim.Attempts {
			s.log.Printf("login %s: gave up on %s %s after try %d: %v", login, e.User, e.State, attempt, err)
			return false
		}
		s.log.Printf("login %s: try %d of %d failed: %v; again in %s", login, attempt, s.lim.Attempts, err, wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return false
		}
		wait = min(2*wait, s.lim.BackoffMax)
	}
}

// post sends one try. Errors name the status or the failure, never the URL
// (it holds a token).
func (s *Sender) post(ctx context.Context, target string, e Event) (err error, final bool) {
	ctx, cancel := context.WithTimeout(ctx, s.lim.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(e.Payload()))
	if err != nil {
		return fmt.Errorf("the request: %w", stripURL(err)), true
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agent-box-notify")
	// ntfy's headers (others ignore them): its title and where a tap goes
	req.Header.Set("Title", e.Title())
	req.Header.Set("Click", e.Link)
	if h := e.NtfyActions(); h != "" {
		req.Header.Set("Actions", h)
	}
	res, err := s.client.Do(req)
	if err != nil {
		return stripURL(err), false
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	switch c := res.StatusCode; {
	case c >= 200 && c < 300:
		return nil, false
	case c >= 400 && c < 500 && c != http.StatusRequestTimeout && c != http.StatusTooManyRequests:
		return fmt.Errorf("the endpoint answered %s", res.Status), true
	default:
		return fmt.Errorf("the endpoint answered %s", res.Status), false
	}
}

// stripURL is err without the URL a *url.Error carries.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return errors.New("no answer within the timeout")
		}
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// sortedKeys is m's keys, sorted.
func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
