package lockprovider

import (
	"context"
	"fmt"
	"time"
)

// RWMutex is a read-write lock kept in a single hash key (plus the name's
// fencing counter, under the same hash tag), so it works on Redis Cluster.
// Any number of readers may hold it at once, each with its own lease; a
// writer holds it alone. A reader can only release or refresh its own hold.
// A writer blocked in Acquire holds back new readers for a moment each time
// it polls, so a steady stream of readers cannot starve it.
type RWMutex struct {
	r          *Redis
	name       string
	err        error
	lock, cntr string
}

// RWMutex returns the read-write lock named name.
func (r *Redis) RWMutex(name string) *RWMutex {
	return &RWMutex{r: r, name: name, err: checkName(name), lock: r.key(name, "rw"), cntr: r.key(name, "fence")}
}

// Reader returns the Locker for shared (read) holds.
func (m *RWMutex) Reader() Locker { return &rwSide{m: m, mode: "r"} }

// Writer returns the Locker for the exclusive (write) hold.
func (m *RWMutex) Writer() Locker { return &rwSide{m: m, mode: "w"} }

type rwSide struct {
	m    *RWMutex
	mode string // "r" or "w"
}

func (s *rwSide) TryAcquire(ctx context.Context, ttl time.Duration) (*Lease, error) {
	tok := newToken()
	l, err := s.acquire(ctx, tok, ttl, false)
	if err != nil && !isNotAcquired(err) && s.m.err == nil {
		cleanup(func(ctx context.Context) error { return s.release(ctx, tok) })
	}
	return l, err
}

func (s *rwSide) Acquire(ctx context.Context, ttl time.Duration, retry RetryStrategy) (*Lease, error) {
	tok := newToken()
	l, err := retryLoop(ctx, s.m.name, retry, func(ctx context.Context) (*Lease, error) { return s.acquire(ctx, tok, ttl, true) })
	if err != nil && s.m.err == nil {
		cleanup(func(ctx context.Context) error { return s.release(ctx, tok) })
	}
	return l, err
}

func (s *rwSide) acquire(ctx context.Context, tok string, ttl time.Duration, waiting bool) (*Lease, error) {
	if s.m.err != nil {
		return nil, s.m.err
	}
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	intent := "0"
	if waiting {
		intent = "1"
	}
	sent := time.Now()
	res, err := ints(rwAcquire.Run(ctx, s.m.r.client, []string{s.m.lock, s.m.cntr},
		s.mode, tok, ms(ttl), ms(s.m.r.cfg.fenceRetention), intent, ms(s.m.r.cfg.waiterTTL)).Result())
	if err != nil {
		return nil, fmt.Errorf("lockprovider: acquire %q (%s): %w", s.m.name, s.kind(), err)
	}
	if res[0] != 1 {
		return nil, ErrNotAcquired
	}
	return NewLease(s, s.m.name, tok, res[1], ttl, sent), nil
}

func (s *rwSide) kind() string {
	if s.mode == "r" {
		return "read"
	}
	return "write"
}

func (s *rwSide) RefreshLease(ctx context.Context, l *Lease) error {
	ok, err := rwRefresh.Run(ctx, s.m.r.client, []string{s.m.lock, s.m.cntr}, s.mode, l.token, ms(l.ttl)).Int()
	if err != nil {
		return fmt.Errorf("lockprovider: refresh %q (%s): %w", s.m.name, s.kind(), err)
	}
	if ok != 1 {
		return lostf("%q: %s hold is gone", s.m.name, s.kind())
	}
	return nil
}

func (s *rwSide) ReleaseLease(ctx context.Context, l *Lease) error { return s.release(ctx, l.token) }

func (s *rwSide) release(ctx context.Context, tok string) error {
	ok, err := rwRelease.Run(ctx, s.m.r.client, []string{s.m.lock, s.m.cntr}, s.mode, tok).Int()
	if err != nil {
		return fmt.Errorf("lockprovider: release %q (%s): %w", s.m.name, s.kind(), err)
	}
	if ok != 1 {
		return lostf("%q: %s hold was already gone", s.m.name, s.kind())
	}
	return nil
}
