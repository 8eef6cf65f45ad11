package lockprovider

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeStore is a LeaseStore whose answers the test scripts. Its refresh may
// hang, ignoring its context, as a go-redis client without
// ContextTimeoutEnabled does on a black-holed connection.
type fakeStore struct {
	mu       sync.Mutex
	calls    []time.Time // when each refresh was sent
	answer   func(n int) (delay time.Duration, err error)
	hang     chan struct{} // refreshes told to hang block until this closes
	released int
}

var errHang = errors.New("hang")

func (s *fakeStore) RefreshLease(ctx context.Context, l *Lease) error {
	s.mu.Lock()
	s.calls = append(s.calls, time.Now())
	n := len(s.calls)
	s.mu.Unlock()
	delay, err := s.answer(n)
	if errors.Is(err, errHang) {
		<-s.hang
		return errors.New("connection reset")
	}
	time.Sleep(delay)
	return err
}

func (s *fakeStore) ReleaseLease(ctx context.Context, l *Lease) error {
	s.mu.Lock()
	s.released++
	s.mu.Unlock()
	return nil
}

func (s *fakeStore) sent() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.calls...)
}

const ttl = 30 * time.Second

func TestKeepAliveRenewsEveryThirdOfTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{answer: func(int) (time.Duration, error) { return 0, nil }}
		start := time.Now()
		l := NewLease(store, "job", "tok", 1, ttl, start)
		ctx, stop := KeepAlive(t.Context(), l)
		// Stopped between two renewals: at 100s itself, stop and the
		// renewal due then would tie, and either may go first.
		time.Sleep(105 * time.Second)
		stop()
		if ctx.Err() == nil {
			t.Fatal("context alive after stop")
		}
		sent := store.sent()
		if len(sent) != 10 { // at 10s, 20s, ... 100s
			t.Fatalf("%d renewals in 105s, want 10", len(sent))
		}
		for i, s := range sent {
			if want := start.Add(time.Duration(i+1) * ttl / 3); !s.Equal(want) {
				t.Errorf("renewal %d sent at +%s, want +%s", i+1, s.Sub(start), want.Sub(start))
			}
		}
		if store.released != 0 {
			t.Error("stop released the lease; it must only stop renewing")
		}
	})
}

// The deadline counts from when the last good renewal was sent, not from
// when its answer arrived: Redis started the new TTL somewhere in between.
func TestKeepAliveDeadlineCountsFromSendTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{hang: make(chan struct{})}
		store.answer = func(n int) (time.Duration, error) {
			if n == 1 {
				return 5 * time.Second, nil // a slow but successful renewal
			}
			return 0, errHang // then the network black-holes
		}
		start := time.Now()
		l := NewLease(store, "job", "tok", 1, ttl, start)
		ctx, stop := KeepAlive(t.Context(), l)
		defer func() { close(store.hang); stop() }()
		<-ctx.Done()
		lostAt := time.Since(start)
		// First renewal sent at +10s, answered at +15s: the lease runs to
		// +10s + TTL − drift, not +15s + TTL.
		if want := 10*time.Second + ttl - Drift(ttl); lostAt != want {
			t.Fatalf("lost at +%s, want +%s", lostAt, want)
		}
		if cause := context.Cause(ctx); !errors.Is(cause, ErrLeaseLost) {
			t.Fatalf("cause = %v, want ErrLeaseLost", cause)
		}
	})
}

// A renewal that hangs and ignores its context must not delay the loss.
func TestKeepAliveLosesLeaseWhileRenewalHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{hang: make(chan struct{}), answer: func(int) (time.Duration, error) { return 0, errHang }}
		start := time.Now()
		l := NewLease(store, "job", "tok", 1, ttl, start)
		ctx, stop := KeepAlive(t.Context(), l)
		<-ctx.Done()
		if got, want := time.Since(start), ttl-Drift(ttl); got != want {
			t.Fatalf("lost at +%s, want +%s (the grant's deadline)", got, want)
		}
		if !errors.Is(context.Cause(ctx), ErrLeaseLost) {
			t.Fatalf("cause = %v", context.Cause(ctx))
		}
		close(store.hang) // let the hung call return so stop can finish
		stop()
	})
}

func TestKeepAliveRetriesTransientErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{answer: func(n int) (time.Duration, error) {
			if n <= 5 {
				return 0, errors.New("i/o timeout")
			}
			return 0, nil
		}}
		l := NewLease(store, "job", "tok", 1, ttl, time.Now())
		ctx, stop := KeepAlive(t.Context(), l)
		time.Sleep(2 * ttl)
		if ctx.Err() != nil {
			t.Fatalf("lost after transient errors: %v", context.Cause(ctx))
		}
		stop()
		if n := len(store.sent()); n < 8 {
			t.Fatalf("%d refresh calls; failed ones must be retried quickly", n)
		}
	})
}

func TestKeepAliveStopsAtOnceWhenStoreSaysLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stolen := lostf("taken over")
		store := &fakeStore{answer: func(int) (time.Duration, error) { return 0, stolen }}
		start := time.Now()
		l := NewLease(store, "job", "tok", 1, ttl, start)
		ctx, stop := KeepAlive(t.Context(), l)
		defer stop()
		<-ctx.Done()
		if got := time.Since(start); got != ttl/3 {
			t.Fatalf("lost at +%s, want at the first renewal (+%s)", got, ttl/3)
		}
		if context.Cause(ctx) != stolen {
			t.Fatalf("cause = %v, want the store's answer", context.Cause(ctx))
		}
		if !l.Until().IsZero() {
			t.Fatal("a lost lease still reports a deadline")
		}
	})
}

func TestKeepAliveEndsWithParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{answer: func(int) (time.Duration, error) { return 0, nil }}
		parent, cancel := context.WithCancelCause(t.Context())
		l := NewLease(store, "job", "tok", 1, ttl, time.Now())
		ctx, stop := KeepAlive(parent, l)
		shutdown := errors.New("shutdown")
		cancel(shutdown)
		stop()
		if context.Cause(ctx) != shutdown {
			t.Fatalf("cause = %v, want the parent's", context.Cause(ctx))
		}
		if errors.Is(context.Cause(ctx), ErrLeaseLost) {
			t.Fatal("shutdown reported as a lost lease")
		}
	})
}

// WithStopGrace declares the lease lost its grace before the deadline, so a
// holder that needs that long to stop has stopped before Redis can give the
// lease away; renewals come every (TTL − grace)/3.
func TestStopGraceDeclaresTheLossEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{answer: func(int) (time.Duration, error) { return 0, errors.New("unreachable") }}
		start := time.Now()
		l := NewLease(store, "job", "tok", 1, ttl, start)
		ctx, stop := KeepAlive(t.Context(), l, WithStopGrace(12*time.Second))
		defer stop()
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), ErrLeaseLost) {
			t.Fatalf("cause %v, want ErrLeaseLost", context.Cause(ctx))
		}
		want := l.TTL() - Drift(l.TTL()) - 12*time.Second
		if got := time.Since(start); got != want {
			t.Errorf("lease declared lost after %s, want %s (its deadline less the stop grace)", got, want)
		}
		if calls := store.sent(); len(calls) == 0 || calls[0].Sub(start) != 6*time.Second {
			t.Errorf("first renewal at %v, want (TTL − grace)/3 = 6s", calls)
		}
	})
}

// A KeepAlive started at KeepAliveDue renews when one started with the
// lease would: nothing happens before that time, and its timers count from
// the lease's grant. With a stop grace that leaves less than a renewal
// interval, the due time is the lease's deadline less the grace.
func TestKeepAliveStartedWhenDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{answer: func(int) (time.Duration, error) { return 0, nil }}
		start := time.Now()
		l := NewLease(store, "job", "tok", 1, ttl, start)
		due := KeepAliveDue(l, 0)
		if want := start.Add(ttl / 3); !due.Equal(want) {
			t.Fatalf("due at +%s, want +%s (the first renewal)", due.Sub(start), want.Sub(start))
		}
		time.Sleep(time.Until(due))
		ctx, stop := KeepAlive(t.Context(), l)
		time.Sleep(time.Until(start.Add(105 * time.Second)))
		stop()
		if ctx.Err() == nil {
			t.Fatal("context alive after stop")
		}
		sent := store.sent()
		if len(sent) != 10 {
			t.Fatalf("%d renewals in 105s, want 10", len(sent))
		}
		for i, s := range sent {
			if want := start.Add(time.Duration(i+1) * ttl / 3); !s.Equal(want) {
				t.Errorf("renewal %d sent at +%s, want +%s", i+1, s.Sub(start), want.Sub(start))
			}
		}
		l2 := NewLease(store, "job", "tok", 1, ttl, start)
		grace := ttl - Drift(ttl) // the deadline less the grace is the grant itself
		if got, want := KeepAliveDue(l2, grace), l2.Until().Add(-grace); !got.Equal(want) {
			t.Errorf("with a grace of %s: due at +%s, want +%s (the deadline less the grace)", grace, got.Sub(start), want.Sub(start))
		}
	})
}
