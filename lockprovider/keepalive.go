package lockprovider

import (
	"context"
	"sync"
	"time"
)

// KeepAliveOption configures KeepAlive.
type KeepAliveOption func(*keepAlive)

type keepAlive struct {
	interval    time.Duration
	callTimeout time.Duration
	onRefresh   func(error)
	stopGrace   time.Duration
}

// WithStopGrace declares the lease lost d before its deadline instead of at
// it: a holder whose work needs time to stop once told (a process group
// sent SIGTERM, then SIGKILL after a grace) has stopped it before Redis can
// give the lease to anyone else. Default 0. d must leave room for renewals
// inside the TTL; the default renewal interval becomes (TTL − d)/3.
func WithStopGrace(d time.Duration) KeepAliveOption {
	return func(k *keepAlive) { k.stopGrace = max(d, 0) }
}

// WithInterval sets the time between renewals. Default TTL/3: a renewal can
// fail twice and the third attempt still lands inside the lease.
func WithInterval(d time.Duration) KeepAliveOption {
	return func(k *keepAlive) { k.interval = d }
}

// WithRefreshTimeout sets the hard deadline of each renewal call. Default:
// the renewal interval.
func WithRefreshTimeout(d time.Duration) KeepAliveOption {
	return func(k *keepAlive) { k.callTimeout = d }
}

// OnRefresh registers a function called after every renewal attempt with its
// result (nil on success), e.g. to count renewals. It must not block.
func OnRefresh(f func(err error)) KeepAliveOption {
	return func(k *keepAlive) { k.onRefresh = f }
}

// KeepAlive renews l in the background until the returned stop function is
// called, ctx is done, or the lease is lost. It returns a context derived
// from ctx that is cancelled when the lease is lost, with a cause for which
// errors.Is(cause, ErrLeaseLost) holds; read it with context.Cause.
//
// The lease is lost when a renewal finds it no longer held (taken over,
// expired, deleted — renewal never re-creates it), or when no renewal has
// succeeded by l.Until(): the send time of the last good renewal plus the
// TTL, minus Drift. That deadline runs on the local monotonic clock, on its
// own timer, so a renewal call that hangs — a black-holed network, a client
// that ignores context deadlines — cannot delay it; the holder stops before
// Redis can give the lease to anyone else.
//
// Failed renewals are retried quickly until the deadline. stop stops
// renewing (it does not release the lease), cancels the derived context and
// waits for a renewal in progress to end. It may be called more than once.
//
// No goroutine waits between renewals: each one runs on a timer of its own
// (time.AfterFunc), so a lease held for less than one interval — most of a
// scheduler's runs — costs two timers and nothing more.
//
// Options and defaults: WithInterval(TTL/3), WithRefreshTimeout(interval),
// OnRefresh(nil), WithStopGrace(0).
func KeepAlive(ctx context.Context, l *Lease, opts ...KeepAliveOption) (context.Context, func()) {
	k := &keeper{l: l}
	for _, o := range opts {
		if o != nil {
			o(&k.keepAlive)
		}
	}
	if k.interval <= 0 {
		k.interval = defaultInterval(l.TTL(), k.stopGrace)
	}
	if k.callTimeout <= 0 {
		k.callTimeout = k.interval
	}
	k.retryDelay = min(max(k.interval/5, 10*time.Millisecond), time.Second)
	k.ctx, k.cancel = context.WithCancelCause(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lossDue = time.Now().Add(k.untilLost())
	k.lossTimer = time.AfterFunc(time.Until(k.lossDue), k.lose)
	k.timer = time.AfterFunc(time.Until(granted(l).Add(k.interval)), k.renew)
	return k.ctx, k.stop
}

// defaultInterval is KeepAlive's renewal interval without WithInterval.
func defaultInterval(ttl, stopGrace time.Duration) time.Duration {
	return max((ttl-stopGrace)/3, time.Millisecond)
}

// granted is when l was last granted or renewed, as Until counts it.
func granted(l *Lease) time.Time { return l.Until().Add(-(l.TTL() - Drift(l.TTL()))) }

// KeepAliveDue is the latest time KeepAlive(ctx, l, WithStopGrace(stopGrace))
// can be started for l and keep it exactly as if started now: its first
// renewal (one default interval after l was granted or last renewed) or,
// if sooner, l's deadline less stopGrace. Until then a keepalive only waits
// on its timers, which it sets from the lease, not from its own start (one
// overdue fires at once: a process frozen past the deadline is told so). A
// holder whose work is usually shorter than a renewal interval can start
// KeepAlive at this time, and never when its work ends first.
func KeepAliveDue(l *Lease, stopGrace time.Duration) time.Time {
	stopGrace = max(stopGrace, 0)
	first := granted(l).Add(defaultInterval(l.TTL(), stopGrace))
	if lost := l.Until().Add(-stopGrace); lost.Before(first) {
		return lost
	}
	return first
}

// keeper is one KeepAlive: a renewal timer and a loss timer.
type keeper struct {
	keepAlive
	l          *Lease
	retryDelay time.Duration
	ctx        context.Context
	cancel     context.CancelCauseFunc

	mu        sync.Mutex
	stopped   bool
	lastErr   error
	timer     *time.Timer // the next renewal
	lossTimer *time.Timer // the lease's deadline
	lossDue   time.Time   // when lossTimer is due
	inflight  sync.WaitGroup
}

// untilLost is how long until the lease is declared lost: its deadline,
// less the stop grace.
func (k *keeper) untilLost() time.Duration {
	return time.Until(k.l.Until()) - k.stopGrace
}

// frozenAfter is how late past the lease's deadline a timer of this
// process must run for the process to be called frozen: far more than a
// busy scheduler delays a timer, far less than any stop an operator sees.
const frozenAfter = time.Second

// lose ends the lease at its deadline: no renewal succeeded in time.
func (k *keeper) lose() {
	k.mu.Lock()
	err, late := k.lastErr, time.Since(k.lossDue)
	k.mu.Unlock()
	if late >= frozenAfter {
		k.cancel(&FrozenError{Name: k.l.Name(), Late: late})
		return
	}
	if err != nil {
		k.cancel(lostf("%q: no renewal succeeded before the lease ran out (last error: %v)", k.l.Name(), err))
	} else {
		k.cancel(lostf("%q: no renewal succeeded before the lease ran out", k.l.Name()))
	}
}

// renew makes one renewal and sets the timer for the next.
func (k *keeper) renew() {
	k.mu.Lock()
	if k.stopped || k.ctx.Err() != nil {
		k.lossTimer.Stop()
		k.mu.Unlock()
		return
	}
	if !time.Now().Before(k.lossDue) {
		// Past the lease's deadline already (a process frozen past it runs
		// its overdue timers now, in any order): a renewal sent now cannot
		// count. Lost, whatever Redis would answer; lose says why.
		k.lossTimer.Stop()
		k.mu.Unlock()
		k.lose()
		return
	}
	k.inflight.Add(1)
	k.mu.Unlock()
	defer k.inflight.Done()

	sent := time.Now()
	callCtx, callCancel := context.WithTimeout(k.ctx, k.callTimeout)
	err := k.l.Refresh(callCtx)
	callCancel()
	if k.onRefresh != nil {
		k.onRefresh(err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.stopped || k.ctx.Err() != nil:
		k.lossTimer.Stop()
	case err == nil:
		k.lossDue = time.Now().Add(k.untilLost())
		k.lossTimer.Reset(time.Until(k.lossDue))
		k.timer.Reset(time.Until(sent.Add(k.interval)))
	case isLost(err):
		k.lossTimer.Stop()
		k.cancel(err)
	default:
		k.lastErr = err
		k.timer.Reset(k.retryDelay)
	}
}

// stop ends the keepalive: no renewal starts after it, and one in progress
// is waited for.
func (k *keeper) stop() {
	k.mu.Lock()
	if !k.stopped {
		k.stopped = true
		k.timer.Stop()
		k.lossTimer.Stop()
	}
	k.mu.Unlock()
	k.cancel(context.Canceled)
	k.inflight.Wait()
}
