package lockprovider

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/solocron/solocron/internal/redlock"
)

// LeaseStore refreshes and releases the leases of one kind of primitive. The
// primitives of this package implement it; so can a caller's own primitive
// (the scheduler's run claims do), to reuse Lease and KeepAlive.
type LeaseStore interface {
	// RefreshLease extends l by l.TTL(). It returns an error wrapping
	// ErrLeaseLost when l is no longer held, and never re-creates it.
	RefreshLease(ctx context.Context, l *Lease) error
	// ReleaseLease gives l up. It returns an error wrapping ErrLeaseLost when
	// l was no longer held.
	ReleaseLease(ctx context.Context, l *Lease) error
}

// Lease is one holder's time-limited claim on a lock or semaphore slot.
//
// A lease can be lost at any moment: Redis may expire it while this process
// is paused, partitioned or slow. Until tells how long the holder may assume
// it still holds the lease; the fencing token lets a downstream store reject
// the writes of a holder that has lost it.
type Lease struct {
	store LeaseStore
	name  string
	token string
	fence int64
	ttl   time.Duration

	mu    sync.Mutex
	until time.Time
}

// NewLease returns a lease acquired by a request sent at sent. It is for
// implementers of LeaseStore; users get leases from TryAcquire and Acquire.
func NewLease(store LeaseStore, name, token string, fence int64, ttl time.Duration, sent time.Time) *Lease {
	return &Lease{store: store, name: name, token: token, fence: fence, ttl: ttl, until: deadline(sent, ttl)}
}

// Drift is the margin a lease's holder gives up at the end of each lease to
// cover clock-rate differences between it and Redis: 1% of the TTL plus 2 ms,
// as in the Redlock algorithm.
func Drift(ttl time.Duration) time.Duration { return redlock.Drift(ttl) }

// deadline is when a holder must stop assuming a lease whose grant or
// renewal was sent at sent. Redis starts the TTL when it receives the
// request, which is after it was sent, so this is never later than the
// moment Redis could hand the lease to someone else.
func deadline(sent time.Time, ttl time.Duration) time.Time { return sent.Add(redlock.Validity(ttl, 0)) }

// Name is the lock's name.
func (l *Lease) Name() string { return l.name }

// Token is the holder's secret owner token.
func (l *Lease) Token() string { return l.token }

// FencingToken strictly increases with each acquisition of the same name.
// Send it with every write the lease protects, and have the store refuse a
// write whose token is lower than one it has already seen.
func (l *Lease) FencingToken() int64 { return l.fence }

// TTL is the lease's time to live, renewed by Refresh.
func (l *Lease) TTL() time.Duration { return l.ttl }

// Until is the local time (on the monotonic clock) after which the holder
// must assume the lease is gone, unless a refresh succeeds first. It is the
// send time of the last successful grant or refresh, plus TTL, minus Drift.
// After a failed refresh or a release it is the zero Time.
func (l *Lease) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Refresh extends the lease by TTL. It returns an error wrapping ErrLeaseLost
// when the lease is no longer held (then Until becomes the zero Time), or the
// store's error when Redis could not be asked; the lease may still be held
// then, until Until.
func (l *Lease) Refresh(ctx context.Context) error {
	sent := time.Now()
	err := l.store.RefreshLease(ctx, l)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		if u := deadline(sent, l.ttl); u.After(l.until) {
			l.until = u
		}
	case isLost(err):
		l.until = time.Time{}
	}
	return err
}

// Release gives the lease up. It returns an error wrapping ErrLeaseLost when
// the lease was no longer held. Use a context that is not already cancelled:
// a release is cleanup and often runs after the work's context has ended.
func (l *Lease) Release(ctx context.Context) error {
	err := l.store.ReleaseLease(ctx, l)
	if err == nil || isLost(err) {
		l.mu.Lock()
		l.until = time.Time{}
		l.mu.Unlock()
	}
	return err
}

func (l *Lease) String() string {
	return fmt.Sprintf("lease %q (fencing token %d, ttl %s)", l.name, l.fence, l.ttl)
}

func lostf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrLeaseLost}, args...)...)
}
