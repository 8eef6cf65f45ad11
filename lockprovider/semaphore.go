package lockprovider

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Semaphore admits up to a limit of holders at once, each with its own lease.
// A holder that dies frees its slot when its lease expires. Waiting acquirers
// are admitted in the order they started waiting (FIFO), and a TryAcquire
// never jumps ahead of them.
//
// All holders must agree on the limit: while a slot is held under one limit,
// acquiring with another fails with ErrLimitMismatch. The limit may change
// once every holder has left.
type Semaphore struct {
	r     *Redis
	name  string
	limit int
	err   error
	keys  []string
}

var _ Locker = (*Semaphore)(nil)

// Semaphore returns the semaphore named name with the given limit (≥ 1).
func (r *Redis) Semaphore(name string, limit int) *Semaphore {
	err := checkName(name)
	if err == nil && limit < 1 {
		err = fmt.Errorf("lockprovider: semaphore %q: limit %d is below 1", name, limit)
	}
	return &Semaphore{r: r, name: name, limit: limit, err: err, keys: []string{
		r.key(name, "holders"), r.key(name, "fences"), r.key(name, "queue"),
		r.key(name, "waiting"), r.key(name, "meta"), r.key(name, "fence"),
	}}
}

// Limit is the number of slots.
func (s *Semaphore) Limit() int { return s.limit }

// TryAcquire takes a free slot in one round trip, or returns ErrNotAcquired
// when all are taken or others are queued for them.
func (s *Semaphore) TryAcquire(ctx context.Context, ttl time.Duration) (*Lease, error) {
	tok := newToken()
	l, err := s.acquire(ctx, tok, ttl, false)
	if err != nil && !isNotAcquired(err) && s.err == nil && !errors.Is(err, ErrLimitMismatch) {
		cleanup(func(ctx context.Context) error { return s.release(ctx, tok) })
	}
	return l, err
}

// Acquire queues for a slot and polls until admitted, retry gives up, or ctx
// is done; waiters are admitted first come, first served. The poll interval
// is retry's backoff, capped at a third of the waiter TTL so the place in the
// queue is kept. On giving up, the place in the queue is removed.
func (s *Semaphore) Acquire(ctx context.Context, ttl time.Duration, retry RetryStrategy) (*Lease, error) {
	tok := newToken()
	if retry == nil {
		retry = NoRetry()
	}
	limit := s.r.cfg.waiterTTL / 3
	capped := retryFunc(func(n int) (time.Duration, bool) {
		d, ok := retry.Backoff(n)
		return min(d, limit), ok
	})
	l, err := retryLoop(ctx, s.name, capped, func(ctx context.Context) (*Lease, error) {
		return s.acquire(ctx, tok, ttl, true)
	})
	if err != nil && s.err == nil && !errors.Is(err, ErrLimitMismatch) {
		cleanup(func(ctx context.Context) error { return s.release(ctx, tok) })
	}
	return l, err
}

// acquire runs one admission attempt.
func (s *Semaphore) acquire(ctx context.Context, tok string, ttl time.Duration, wait bool) (*Lease, error) {
	if s.err != nil {
		return nil, s.err
	}
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	w := "0"
	if wait {
		w = "1"
	}
	sent := time.Now()
	res, err := ints(semAcquire.Run(ctx, s.r.client, s.keys,
		tok, ms(ttl), s.limit, w, ms(s.r.cfg.waiterTTL), ms(s.r.cfg.fenceRetention)).Result())
	if err != nil {
		return nil, fmt.Errorf("lockprovider: acquire semaphore %q: %w", s.name, err)
	}
	switch res[0] {
	case 1:
		return NewLease(s, s.name, tok, res[1], ttl, sent), nil
	case -1:
		return nil, &LimitError{Name: s.name, Requested: s.limit, Current: int(res[1])}
	}
	return nil, ErrNotAcquired
}

// RefreshLease implements LeaseStore.
func (s *Semaphore) RefreshLease(ctx context.Context, l *Lease) error {
	ok, err := semRefresh.Run(ctx, s.r.client, s.keys, l.token, ms(l.ttl), ms(s.r.cfg.fenceRetention)).Int()
	if err != nil {
		return fmt.Errorf("lockprovider: refresh semaphore %q: %w", s.name, err)
	}
	if ok != 1 {
		return lostf("semaphore %q: slot is no longer held by this lease", s.name)
	}
	return nil
}

// ReleaseLease implements LeaseStore.
func (s *Semaphore) ReleaseLease(ctx context.Context, l *Lease) error { return s.release(ctx, l.token) }

func (s *Semaphore) release(ctx context.Context, tok string) error {
	ok, err := semRelease.Run(ctx, s.r.client, s.keys, tok).Int()
	if err != nil {
		return fmt.Errorf("lockprovider: release semaphore %q: %w", s.name, err)
	}
	if ok != 1 {
		return lostf("semaphore %q: slot was no longer held by this lease", s.name)
	}
	return nil
}
