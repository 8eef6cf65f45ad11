package lockprovider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/solocron/solocron/internal/redlock"
)

// Redlock implements the Redlock algorithm over N independent Redis masters
// (no replication between them): a mutex is held when a majority (N/2+1)
// granted it, and only for the lease's TTL minus the time the grants took
// minus Drift.
//
// What Redlock does not guarantee, plainly:
//   - It relies on bounded clock drift and pauses. A master whose clock jumps
//     forward expires the key early; a holder paused past its lease (GC, VM
//     stall, SIGSTOP) still believes it holds the lock when it wakes. Use the
//     lease deadline (Until, KeepAlive) and fence downstream writes.
//   - Its fencing tokens are not monotonic across the whole cluster: each
//     master keeps its own counter, and the token returned is the highest of
//     the granting majority. They rise in practice (they are anchored to the
//     masters' clocks) but Redlock cannot prove it; when monotonic fencing
//     matters, use a single Redis deployment (standalone, Sentinel, Cluster).
//   - A master that restarts without persistence forgets the locks it
//     granted; run masters with persistence or keep them down for at least
//     one TTL after a crash.
//
// Redlock coordinates mutexes only, not semaphores.
type Redlock struct {
	masters []*Redis
	quorum  int
	cfg     config
}

// NewRedlock returns a Redlock over the given independent masters (at least
// one; three or five in practice). Options as for NewRedis, plus
// WithCallTimeout (default TTL/20, between 10ms and 500ms).
//
// Give the clients MaxRetries: -1 and ContextTimeoutEnabled: Redlock asks
// every master once per attempt and moves on; go-redis's own retries against
// a dead master only spend the attempt's time budget.
func NewRedlock(clients []Client, opts ...Option) (*Redlock, error) {
	if len(clients) == 0 {
		return nil, errors.New("lockprovider: redlock needs at least one master")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	rl := &Redlock{quorum: redlock.Quorum(len(clients)), cfg: cfg}
	for i, c := range clients {
		if c == nil {
			return nil, fmt.Errorf("lockprovider: redlock master %d is nil", i)
		}
		rl.masters = append(rl.masters, &Redis{client: c, cfg: cfg})
	}
	return rl, nil
}

// Quorum is the number of masters that must grant an operation.
func (rl *Redlock) Quorum() int { return rl.quorum }

// Mutex returns the Redlock mutex named name.
func (rl *Redlock) Mutex(name string) *RedlockMutex {
	m := &RedlockMutex{rl: rl, name: name, err: checkName(name)}
	for _, r := range rl.masters {
		m.ms = append(m.ms, r.Mutex(name))
	}
	return m
}

// RedlockMutex is a mutex held on a majority of independent masters.
type RedlockMutex struct {
	rl   *Redlock
	name string
	err  error
	ms   []*Mutex
}

var _ Locker = (*RedlockMutex)(nil)

// TryAcquire asks every master at once. It returns ErrNotAcquired when a
// quorum answered but the lock is held elsewhere (or the grants took longer
// than the lease), and a *QuorumError when too few masters could be reached.
// On failure it releases whatever it was granted, everywhere.
func (m *RedlockMutex) TryAcquire(ctx context.Context, ttl time.Duration) (*Lease, error) {
	return m.acquire(ctx, newToken(), ttl)
}

// Acquire retries TryAcquire as retry says; ExponentialBackoff gives the
// random retry delay Redlock calls for.
func (m *RedlockMutex) Acquire(ctx context.Context, ttl time.Duration, retry RetryStrategy) (*Lease, error) {
	tok := newToken()
	return retryLoop(ctx, m.name, retry, func(ctx context.Context) (*Lease, error) { return m.acquire(ctx, tok, ttl) })
}

type answer struct {
	fence int64
	err   error
}

// each runs op on every master in parallel and returns their answers; a
// master that has not answered within the call timeout counts as failed,
// whether or not its client honours context deadlines. With quorum set, it
// returns as soon as the outcome is settled (a quorum granted, or too many
// refused or failed for one to be possible) instead of waiting for a dead
// master's timeout. Only refreshes may do that: an acquire must hear from
// every master before a failed attempt releases, or a grant still in flight
// could land after the release and strand a hold for a whole TTL.
func (m *RedlockMutex) each(ctx context.Context, ttl time.Duration, quorum bool, op func(ctx context.Context, mu *Mutex) (int64, error)) []answer {
	timeout := m.rl.cfg.callTimeout
	if timeout == 0 {
		timeout = min(max(ttl/20, 10*time.Millisecond), 500*time.Millisecond)
	}
	type indexed struct {
		i int
		answer
	}
	ch := make(chan indexed, len(m.ms))
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for i, mu := range m.ms {
		go func() {
			f, err := op(cctx, mu)
			ch <- indexed{i, answer{f, err}}
		}()
	}
	out := make([]answer, len(m.ms))
	for i := range out {
		out[i].err = fmt.Errorf("lockprovider: redlock master %d: no answer within %s", i, timeout)
	}
	timer := time.NewTimer(timeout + timeout/10)
	defer timer.Stop()
	granted, denied := 0, 0
	for range m.ms {
		select {
		case a := <-ch:
			out[a.i] = a.answer
			if a.err == nil {
				granted++
			} else {
				denied++
			}
		case <-timer.C:
			return out
		}
		if quorum && (granted >= m.rl.quorum || redlock.Hopeless(len(m.ms), denied)) {
			return out
		}
	}
	return out
}

func (m *RedlockMutex) acquire(ctx context.Context, tok string, ttl time.Duration) (*Lease, error) {
	if m.err != nil {
		return nil, m.err
	}
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	sent := time.Now()
	answers := m.each(ctx, ttl, false, func(ctx context.Context, mu *Mutex) (int64, error) {
		l, err := mu.acquire(ctx, tok, ttl)
		if err != nil {
			return 0, err
		}
		return l.fence, nil
	})
	granted, answered, fence, errs := tally(answers)
	if granted >= m.rl.quorum && redlock.Validity(ttl, time.Since(sent)) > 0 {
		return NewLease(m, m.name, tok, fence, ttl, sent), nil
	}
	cleanup(func(ctx context.Context) error { m.releaseAll(ctx, ttl, tok, 0); return nil })
	if answered >= m.rl.quorum {
		return nil, ErrNotAcquired
	}
	return nil, &QuorumError{Op: "acquire", Acquired: granted, Quorum: m.rl.quorum, Masters: len(m.ms), Errs: errs}
}

// tally counts grants, masters that answered at all (a grant or a clear
// refusal), the highest fencing token, and the transport failures.
func tally(answers []answer) (granted, answered int, fence int64, errs []error) {
	for _, a := range answers {
		switch {
		case a.err == nil:
			granted++
			answered++
			fence = max(fence, a.fence)
		case isNotAcquired(a.err) || isLost(a.err):
			answered++
		default:
			errs = append(errs, a.err)
		}
	}
	return granted, answered, fence, errs
}

// releaseAll releases owner token tok on every master; fence is the
// lease's token (0 when unknown).
func (m *RedlockMutex) releaseAll(ctx context.Context, ttl time.Duration, tok string, fence int64) []answer {
	return m.each(ctx, ttl, false, func(ctx context.Context, mu *Mutex) (int64, error) { return 0, mu.release(ctx, tok, fence) })
}

// RefreshLease implements LeaseStore: the lease is extended when a quorum
// extends it. It is lost once so many masters refuse that no quorum is left.
func (m *RedlockMutex) RefreshLease(ctx context.Context, l *Lease) error {
	answers := m.each(ctx, l.ttl, true, func(ctx context.Context, mu *Mutex) (int64, error) {
		return 0, mu.RefreshLease(ctx, &Lease{token: l.token, fence: l.fence, ttl: l.ttl})
	})
	granted, answered, _, errs := tally(answers)
	switch {
	case granted >= m.rl.quorum:
		return nil
	case redlock.Hopeless(len(m.ms), answered-granted):
		return lostf("%q: %d of %d masters no longer hold it", m.name, answered-granted, len(m.ms))
	}
	return &QuorumError{Op: "refresh", Acquired: granted, Quorum: m.rl.quorum, Masters: len(m.ms), Errs: errs}
}

// ReleaseLease implements LeaseStore: it releases on every master.
func (m *RedlockMutex) ReleaseLease(ctx context.Context, l *Lease) error {
	granted, _, _, errs := tally(m.releaseAll(ctx, l.ttl, l.token, l.fence))
	switch {
	case granted > 0:
		return nil
	case len(errs) == 0:
		return lostf("%q was no longer held on any master", m.name)
	}
	return &QuorumError{Op: "release", Acquired: granted, Quorum: m.rl.quorum, Masters: len(m.ms), Errs: errs}
}
