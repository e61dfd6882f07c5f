package loginlimit

import (
	"context"
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestAClientIsASuspectWhileItHasAnAttemptInFlightOrRecentlyFailed: a
// person types one password at a time; a client's second attempt at once
// is a suspect, and so is any attempt within 10 minutes of a failure or a
// refusal; a success clears it.
func TestAClientIsASuspectWhileItHasAnAttemptInFlightOrRecentlyFailed(t *testing.T) {
	l := NewLimiter()
	now := t0
	if a := l.Admit("A", "x", now); !a.OK || a.Suspect {
		t.Fatalf("a first attempt: %+v", a)
	}
	if a := l.Admit("A", "y", now); !a.OK || !a.Suspect {
		t.Errorf("a second attempt while the first is checked: %+v, want a suspect", a)
	}
	l.Done("A", "y", false, now)
	l.Done("A", "x", false, now)
	now = now.Add(9 * time.Minute)
	if a := l.Admit("A", "z", now); !a.OK || !a.Suspect {
		t.Errorf("9 minutes after a failure: %+v, want a suspect", a)
	}
	l.Cancel("A", "z", false, now)
	now = now.Add(time.Minute + time.Second)
	if a := l.Admit("A", "z", now); !a.OK || a.Suspect {
		t.Errorf("10 minutes after: %+v, want no suspect", a)
	}
	l.Done("A", "z", true, now)
	if a := l.Admit("A", "w", now); !a.OK || a.Suspect {
		t.Errorf("after a success: %+v", a)
	}
}

// TestASuspectsHashPausesWhileAnotherLoginHashes: the pause a suspect's
// hash takes every PauseEvery rounds of pwhash.Derive returns only when no other attempt's
// hash runs.
func TestASuspectsHashPausesWhileAnotherLoginHashes(t *testing.T) {
	q := NewQueue()
	if err := q.Acquire(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { q.Yield(); close(done) }()
	select {
	case <-done:
		t.Fatal("the pause returned while another login hashes")
	case <-time.After(20 * time.Millisecond):
	}
	q.Release(false)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the pause did not return once the other hash was done")
	}
	q.Yield() // nothing hashes: no wait
}

// TestHashQueue: the queue's rules, directly.
func TestHashQueue(t *testing.T) {
	ctx := context.Background()
	newQ := func() *Queue {
		return NewQueueSized(2, 2, 1, time.Minute)
	}
	// waitFor acquires in the background and reports the result.
	waitFor := func(q *Queue, suspect bool) chan error {
		ch := make(chan error, 1)
		go func() { ch <- q.Acquire(ctx, suspect) }()
		return ch
	}
	queued := func(t *testing.T, q *Queue, clean, suspect int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			q.mu.Lock()
			c, s := len(q.clean), len(q.suspect)
			q.mu.Unlock()
			if c == clean && s == suspect {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("queued %d clean and %d suspects, want %d and %d", c, s, clean, suspect)
			}
			time.Sleep(time.Millisecond)
		}
	}
	t.Run("suspects never hold the last slot", func(t *testing.T) {
		q := newQ()
		if err := q.Acquire(ctx, true); err != nil {
			t.Fatal(err)
		}
		s2 := waitFor(q, true)
		queued(t, q, 0, 1)
		if err := q.Acquire(ctx, false); err != nil {
			t.Fatalf("a clean attempt beside a suspect: %v", err)
		}
		q.Release(false) // the clean slot frees; the suspect may not take it
		select {
		case err := <-s2:
			t.Fatalf("the second suspect got the last slot: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		q.Release(true)
		if err := <-s2; err != nil {
			t.Errorf("the second suspect after the first: %v", err)
		}
	})
	t.Run("clean waiters go first, the newest first", func(t *testing.T) {
		q := newQ()
		q.Acquire(ctx, false)
		q.Acquire(ctx, false)
		s := waitFor(q, true)
		queued(t, q, 0, 1)
		c1 := waitFor(q, false)
		queued(t, q, 1, 1)
		c2 := waitFor(q, false)
		queued(t, q, 2, 1)
		q.Release(false)
		if err := <-c2; err != nil {
			t.Fatalf("the newest clean waiter: %v", err)
		}
		q.Release(false)
		if err := <-c1; err != nil {
			t.Fatalf("the older clean waiter: %v", err)
		}
		q.Release(false)
		select {
		case err := <-s:
			t.Fatalf("the suspect got a slot while another attempt holds one: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		q.Release(false)
		if err := <-s; err != nil {
			t.Fatalf("the suspect, last: %v", err)
		}
	})
	t.Run("a suspect hashes only on capacity no one else wants", func(t *testing.T) {
		q := newQ()
		q.Acquire(ctx, false)
		s := waitFor(q, true)
		queued(t, q, 0, 1) // a slot is free, but another attempt holds one
		q.Release(false)
		if err := <-s; err != nil {
			t.Fatalf("the suspect once the slots are idle: %v", err)
		}
		if err := q.Acquire(ctx, false); err != nil {
			t.Fatalf("a clean attempt beside it, at once: %v", err)
		}
	})
	t.Run("a full clean queue evicts its oldest waiter", func(t *testing.T) {
		q := newQ()
		q.Acquire(ctx, false)
		q.Acquire(ctx, false)
		c1 := waitFor(q, false)
		queued(t, q, 1, 0)
		waitFor(q, false)
		queued(t, q, 2, 0)
		waitFor(q, false)
		if err := <-c1; !errors.Is(err, ErrBusy) {
			t.Errorf("the oldest waiter: %v, want ErrBusy", err)
		}
		queued(t, q, 2, 0)
	})
	t.Run("a full suspect queue refuses the newcomer", func(t *testing.T) {
		q := newQ()
		q.Acquire(ctx, true)
		waitFor(q, true)
		queued(t, q, 0, 1)
		if err := q.Acquire(ctx, true); !errors.Is(err, ErrBusy) {
			t.Errorf("a second waiting suspect: %v, want ErrBusy", err)
		}
	})
	t.Run("a wait past the limit is refused and frees its place", func(t *testing.T) {
		q := newQ()
		q.wait = 10 * time.Millisecond
		q.Acquire(ctx, false)
		q.Acquire(ctx, false)
		if err := q.Acquire(ctx, false); !errors.Is(err, ErrBusy) {
			t.Errorf("%v, want ErrBusy", err)
		}
		queued(t, q, 0, 0)
	})
	t.Run("a client gone leaves no slot taken", func(t *testing.T) {
		q := newQ()
		q.Acquire(ctx, false)
		q.Acquire(ctx, false)
		cctx, cancel := context.WithCancel(ctx)
		ch := make(chan error, 1)
		go func() { ch <- q.Acquire(cctx, false) }()
		queued(t, q, 1, 0)
		cancel()
		if err := <-ch; !errors.Is(err, context.Canceled) {
			t.Errorf("%v", err)
		}
		q.Release(false)
		q.Release(false)
		if q.free != 2 || q.suspects != 0 {
			t.Errorf("free %d, suspects %d after all released", q.free, q.suspects)
		}
	})
}
