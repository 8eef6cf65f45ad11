package lockprovider

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryStrategy paces a blocking Acquire. Strategies are stateless values,
// safe to share between goroutines and calls.
type RetryStrategy interface {
	// Backoff returns the wait before retry n (n = 1 is the first retry), or
	// false to give up.
	Backoff(n int) (time.Duration, bool)
}

type retryFunc func(n int) (time.Duration, bool)

func (f retryFunc) Backoff(n int) (time.Duration, bool) { return f(n) }

// NoRetry tries once.
func NoRetry() RetryStrategy {
	return retryFunc(func(int) (time.Duration, bool) { return 0, false })
}

// LinearBackoff retries every interval.
func LinearBackoff(interval time.Duration) RetryStrategy {
	return retryFunc(func(int) (time.Duration, bool) { return interval, true })
}

// ExponentialBackoff retries after waits that double from min up to max,
// each drawn at random from its upper half ("equal jitter"), so that
// contenders that failed together do not retry together.
func ExponentialBackoff(min, max time.Duration) RetryStrategy {
	if min <= 0 {
		min = time.Millisecond
	}
	if max < min {
		max = min
	}
	return retryFunc(func(n int) (time.Duration, bool) {
		d := max
		if n < 62 {
			if s := min << (n - 1); s > 0 && s < max {
				d = s
			}
		}
		half := d / 2
		return half + rand.N(d-half+1), true
	})
}

// LimitRetry stops s after max retries.
func LimitRetry(s RetryStrategy, max int) RetryStrategy {
	return retryFunc(func(n int) (time.Duration, bool) {
		if n > max {
			return 0, false
		}
		return s.Backoff(n)
	})
}

// Locker hands out leases on one named resource: a mutex, a semaphore, one
// side of a read-write lock, a reentrant mutex for one owner, or a Redlock.
type Locker interface {
	// TryAcquire tries once. It returns ErrNotAcquired when the resource is
	// taken, or the store's error.
	TryAcquire(ctx context.Context, ttl time.Duration) (*Lease, error)
	// Acquire tries until it succeeds, retry gives up, or ctx is done. It
	// returns an error wrapping ErrNotAcquired (and the context's error, if
	// that is what ended it), or the store's error when retry gave up after one.
	Acquire(ctx context.Context, ttl time.Duration, retry RetryStrategy) (*Lease, error)
}

// retryLoop calls try until it returns a lease or a non-retryable error,
// sleeping between attempts as retry says and stopping when ctx is done.
// ErrNotAcquired and store errors are retried; others end the loop.
func retryLoop(ctx context.Context, name string, retry RetryStrategy, try func(ctx context.Context) (*Lease, error)) (*Lease, error) {
	if retry == nil {
		retry = NoRetry()
	}
	var timer *time.Timer
	for n := 1; ; n++ {
		l, err := try(ctx)
		switch {
		case err == nil:
			return l, nil
		case ctx.Err() != nil:
			return nil, giveUp(ctx, name, err)
		case !retryable(err):
			return nil, err
		}
		wait, again := retry.Backoff(n)
		if !again {
			return nil, err
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return nil, giveUp(ctx, name, err)
		case <-timer.C:
		}
	}
}

// giveUp reports an Acquire ended by its context. The last attempt's error
// stays in the chain unless it was only that same context ending mid-call:
// then the answer is simply "not acquired".
func giveUp(ctx context.Context, name string, last error) error {
	if errors.Is(last, context.Canceled) || errors.Is(last, context.DeadlineExceeded) {
		last = ErrNotAcquired
	}
	return fmt.Errorf("lockprovider: %q: gave up: %w", name, errors.Join(context.Cause(ctx), last))
}

// retryable: contention and store failures are worth another try; invalid
// arguments and limit mismatches are not, and neither is a done context.
func retryable(err error) bool {
	switch {
	case errors.Is(err, ErrInvalidName), errors.Is(err, ErrLimitMismatch),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return true
}
