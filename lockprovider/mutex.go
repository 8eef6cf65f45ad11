package lockprovider

import (
	"context"
	"fmt"
	"time"
)

// Mutex is an exclusive lock on one name. At most one lease on it is live
// at a time (as long as Redis keeps its data).
//
// It is kept in the name's fencing counter (one key), so an acquire and a
// release each run one script that reads and writes that key once: an
// acquire+release, fencing token included, costs Redis no more calls than
// a plain SET NX lock such as bsm/redislock (5). A lease that ran out while
// no one took the mutex is still its holder's to release (without error);
// it cannot be refreshed.
type Mutex struct {
	r    *Redis
	name string
	err  error
	keys [1]string // the name's fencing counter: an array, one allocation less per Mutex
}

var _ Locker = (*Mutex)(nil)

// Mutex returns the mutex named name. An invalid name makes every call
// return an error wrapping ErrInvalidName.
func (r *Redis) Mutex(name string) *Mutex {
	return &Mutex{r: r, name: name, err: checkName(name), keys: [1]string{r.key(name, "fence")}}
}

// TryAcquire takes the mutex if it is free, in one round trip. It returns
// ErrNotAcquired when someone else holds it. If the call fails without an
// answer, the lock may have been taken with our token; TryAcquire then
// releases it before returning the error.
func (m *Mutex) TryAcquire(ctx context.Context, ttl time.Duration) (*Lease, error) {
	tok := newToken()
	l, err := m.acquire(ctx, tok, ttl)
	if err != nil && !isNotAcquired(err) && m.err == nil {
		cleanup(func(ctx context.Context) error { return m.release(ctx, tok, 0) })
	}
	return l, err
}

// Acquire takes the mutex, retrying as retry says until ctx is done. All
// attempts use one owner token, so an attempt that timed out after taking the
// lock is recognised by the next one instead of locking us out.
func (m *Mutex) Acquire(ctx context.Context, ttl time.Duration, retry RetryStrategy) (*Lease, error) {
	tok := newToken()
	uncertain := false // an attempt failed without a clear answer
	l, err := retryLoop(ctx, m.name, retry, func(ctx context.Context) (*Lease, error) {
		l, err := m.acquire(ctx, tok, ttl)
		uncertain = uncertain || (err != nil && !isNotAcquired(err))
		return l, err
	})
	if err != nil && uncertain && m.err == nil {
		cleanup(func(ctx context.Context) error { return m.release(ctx, tok, 0) })
	}
	return l, err
}

func (m *Mutex) acquire(ctx context.Context, tok string, ttl time.Duration) (*Lease, error) {
	if m.err != nil {
		return nil, m.err
	}
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	sent := time.Now()
	fence, err := mutexAcquire.Run(ctx, m.r.client, m.keys[:], tok, ms(ttl), ms(max(ttl, m.r.cfg.fenceRetention))).Int64()
	if err != nil {
		return nil, fmt.Errorf("lockprovider: acquire %q: %w", m.name, err)
	}
	if fence <= 0 {
		return nil, ErrNotAcquired
	}
	return NewLease(m, m.name, tok, fence, ttl, sent), nil
}

// RefreshLease implements LeaseStore.
func (m *Mutex) RefreshLease(ctx context.Context, l *Lease) error {
	ok, err := mutexRefresh.Run(ctx, m.r.client, m.keys[:], l.token, ms(l.ttl), ms(max(l.ttl, m.r.cfg.fenceRetention)), l.fence).Int()
	if err != nil {
		return fmt.Errorf("lockprovider: refresh %q: %w", m.name, err)
	}
	if ok != 1 {
		return lostf("%q is no longer held by this lease", m.name)
	}
	return nil
}

// ReleaseLease implements LeaseStore.
func (m *Mutex) ReleaseLease(ctx context.Context, l *Lease) error {
	return m.release(ctx, l.token, l.fence)
}

// release gives up the hold of owner token tok, whose fencing token is
// fence (0 when unknown: it then costs one more call inside the script).
func (m *Mutex) release(ctx context.Context, tok string, fence int64) error {
	ok, err := mutexRelease.Run(ctx, m.r.client, m.keys[:], tok, fence).Int()
	if err != nil {
		return fmt.Errorf("lockprovider: release %q: %w", m.name, err)
	}
	if ok != 1 {
		return lostf("%q was no longer held by this lease", m.name)
	}
	return nil
}

func isNotAcquired(err error) bool { return err == ErrNotAcquired }
