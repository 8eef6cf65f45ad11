package lockprovider

import (
	"context"
	"fmt"
	"time"
)

// ReentrantMutex is an exclusive lock that its owner may take again while
// holding it, as Redisson's RLock. Go has no thread identity, so the owner is
// a string the caller chooses (a request id, a worker id). Each acquisition
// returns its own Lease; the lock is free once every one of them has been
// released (or the lock expired). Only the owner can release.
type ReentrantMutex struct {
	r          *Redis
	name       string
	err        error
	lock, cntr string
}

// ReentrantMutex returns the reentrant mutex named name.
func (r *Redis) ReentrantMutex(name string) *ReentrantMutex {
	return &ReentrantMutex{r: r, name: name, err: checkName(name), lock: r.key(name, "rlock"), cntr: r.key(name, "fence")}
}

// Owner returns the Locker through which owner takes the mutex. The owner
// string is the lease token; it must be non-empty.
func (m *ReentrantMutex) Owner(owner string) Locker {
	return &reentrantOwner{m: m, owner: owner}
}

type reentrantOwner struct {
	m     *ReentrantMutex
	owner string
}

func (o *reentrantOwner) TryAcquire(ctx context.Context, ttl time.Duration) (*Lease, error) {
	return o.acquire(ctx, ttl, newToken())
}

// Acquire retries with one request id, so a retried attempt that had already
// succeeded is not counted twice.
func (o *reentrantOwner) Acquire(ctx context.Context, ttl time.Duration, retry RetryStrategy) (*Lease, error) {
	req := newToken()
	return retryLoop(ctx, o.m.name, retry, func(ctx context.Context) (*Lease, error) { return o.acquire(ctx, ttl, req) })
}

func (o *reentrantOwner) acquire(ctx context.Context, ttl time.Duration, req string) (*Lease, error) {
	if o.m.err != nil {
		return nil, o.m.err
	}
	if o.owner == "" {
		return nil, fmt.Errorf("%w: empty owner", ErrInvalidName)
	}
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	sent := time.Now()
	res, err := ints(reentrantAcquire.Run(ctx, o.m.r.client, []string{o.m.lock, o.m.cntr},
		o.owner, ms(ttl), req, ms(o.m.r.cfg.fenceRetention)).Result())
	if err != nil {
		return nil, fmt.Errorf("lockprovider: acquire %q: %w", o.m.name, err)
	}
	if res[0] != 1 {
		return nil, ErrNotAcquired
	}
	return NewLease(o.m, o.m.name, o.owner, res[1], ttl, sent), nil
}

// RefreshLease implements LeaseStore: it extends the whole hold of the owner.
func (m *ReentrantMutex) RefreshLease(ctx context.Context, l *Lease) error {
	ok, err := reentrantRefresh.Run(ctx, m.r.client, []string{m.lock}, l.token, ms(l.ttl)).Int()
	if err != nil {
		return fmt.Errorf("lockprovider: refresh %q: %w", m.name, err)
	}
	if ok != 1 {
		return lostf("%q is no longer held by owner %q", m.name, l.token)
	}
	return nil
}

// ReleaseLease implements LeaseStore: it leaves one level of the hold.
func (m *ReentrantMutex) ReleaseLease(ctx context.Context, l *Lease) error {
	n, err := reentrantRelease.Run(ctx, m.r.client, []string{m.lock}, l.token, newToken()).Int()
	if err != nil {
		return fmt.Errorf("lockprovider: release %q: %w", m.name, err)
	}
	if n < 0 {
		return lostf("%q was no longer held by owner %q", m.name, l.token)
	}
	return nil
}
