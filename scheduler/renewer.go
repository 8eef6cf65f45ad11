package scheduler

import (
	"context"
	"sync"
	"time"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// renewLinger is how long the renewer waits, after a renewal arrives, for
// others to join its call. Runs that started at the same instant renew at
// the same moment, each on its own watchdog; this gathers them.
const renewLinger = time.Millisecond

// renewCall is one run's renewal, queued for the renewer.
type renewCall struct {
	ctx  context.Context
	req  store.RenewReq
	done chan renewDone // buffered: the renewer never waits for the caller
}

type renewDone struct {
	res store.LeaseAnswer
	err error
}

// renewer sends the renewals of this replica's runs to the store, those
// that arrive together in one call: a thousand runs started at the top of
// a second renew with one script call per renewal tick, not a thousand.
// Each call runs on its own goroutine, so an answer Redis is slow to give
// never holds up the next renewals (those of other runs, or the retries of
// the same ones): each renewal still has its own deadline.
func (s *Scheduler) renewer(in <-chan renewCall) {
	var calls sync.WaitGroup
	defer calls.Wait()
	linger := time.NewTimer(time.Hour)
	defer linger.Stop()
	for first := range in {
		linger.Reset(renewLinger)
		batch := gather(first, in, 4*store.MaxBatch, linger.C)
		calls.Go(func() { s.renewBatch(batch) })
	}
}

// renewBatch renews a batch in one store call, with the earliest deadline
// among its renewals.
func (s *Scheduler) renewBatch(batch []renewCall) {
	live := batch[:0]
	var deadline time.Time
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.done <- renewDone{err: err}
			continue
		}
		if d, ok := c.ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
			deadline = d
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	if deadline.IsZero() {
		deadline = time.Now().Add(claimTimeout)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	reqs := make([]store.RenewReq, len(live))
	for i, c := range live {
		reqs[i] = c.req
	}
	res, err := s.store.Renew(ctx, reqs)
	for i, c := range live {
		if err != nil {
			c.done <- renewDone{err: err}
		} else {
			c.done <- renewDone{res: res[i]}
		}
	}
}

// renew queues one run's renewal and waits for its answer, or for ctx.
func (s *Scheduler) renew(ctx context.Context, r store.RenewReq) (store.LeaseAnswer, error) {
	done := make(chan renewDone, 1)
	select {
	case s.renewals <- renewCall{ctx: ctx, req: r, done: done}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case d := <-done:
		return d.res, d.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
