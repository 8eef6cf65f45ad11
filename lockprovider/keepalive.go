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
// waits for the background goroutine to exit. It may be called more than once.
//
// Options and defaults: WithInterval(TTL/3), WithRefreshTimeout(interval),
// OnRefresh(nil).
func KeepAlive(ctx context.Context, l *Lease, opts ...KeepAliveOption) (context.Context, func()) {
	k := keepAlive{interval: l.TTL() / 3}
	for _, o := range opts {
		if o != nil {
			o(&k)
		}
	}
	if k.interval <= 0 {
		k.interval = l.TTL() / 3
	}
	if k.callTimeout <= 0 {
		k.callTimeout = k.interval
	}
	kctx, cancel := context.WithCancelCause(ctx)

	var mu sync.Mutex
	var lastErr error
	lose := func() {
		mu.Lock()
		err := lastErr
		mu.Unlock()
		if err != nil {
			cancel(lostf("%q: no renewal succeeded before the lease ran out (last error: %v)", l.Name(), err))
		} else {
			cancel(lostf("%q: no renewal succeeded before the lease ran out", l.Name()))
		}
	}
	lossTimer := time.AfterFunc(time.Until(l.Until()), lose)

	stopCh := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer lossTimer.Stop()
		granted := l.Until().Add(-(l.TTL() - Drift(l.TTL())))
		timer := time.NewTimer(time.Until(granted.Add(k.interval)))
		defer timer.Stop()
		retryDelay := min(max(k.interval/5, 10*time.Millisecond), time.Second)
		for {
			select {
			case <-kctx.Done():
				return
			case <-stopCh:
				return
			case <-timer.C:
			}
			sent := time.Now()
			callCtx, callCancel := context.WithTimeout(kctx, k.callTimeout)
			err := l.Refresh(callCtx)
			callCancel()
			if k.onRefresh != nil {
				k.onRefresh(err)
			}
			switch {
			case kctx.Err() != nil:
				return
			case err == nil:
				lossTimer.Reset(time.Until(l.Until()))
				timer.Reset(time.Until(sent.Add(k.interval)))
			case isLost(err):
				cancel(err)
				return
			default:
				mu.Lock()
				lastErr = err
				mu.Unlock()
				timer.Reset(retryDelay)
			}
		}
	}()

	var once sync.Once
	stop := func() {
		once.Do(func() {
			close(stopCh)
			cancel(context.Canceled)
		})
		<-done
	}
	return kctx, stop
}
