package lockprovider

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrNotAcquired means someone else holds the lock (or every slot of the
	// semaphore). Losing a race is an outcome, not a failure.
	ErrNotAcquired = errors.New("lockprovider: not acquired")

	// ErrLeaseLost means a lease is no longer held: it expired, was released,
	// was taken over, or could not be renewed in time. A keep-alive context is
	// cancelled with a cause that errors.Is(cause, ErrLeaseLost).
	ErrLeaseLost = errors.New("lockprovider: lease lost")

	// ErrLimitMismatch means a semaphore's current holders agreed on a
	// different limit than the caller asked for.
	ErrLimitMismatch = errors.New("lockprovider: semaphore limit mismatch")

	// ErrInvalidName means a lock name or key prefix would break its keys'
	// Redis Cluster hash tag: empty, or containing '{' or '}'.
	ErrInvalidName = errors.New("lockprovider: invalid name")
)

// QuorumError is returned by Redlock when fewer than a quorum of masters
// could be reached. It says the service is degraded, unlike ErrNotAcquired,
// which only says someone else holds the lock.
type QuorumError struct {
	Op       string  // "acquire", "refresh" or "release"
	Acquired int     // masters that granted the operation
	Quorum   int     // masters needed
	Masters  int     // masters in all
	Errs     []error // the failures, one per master that failed
}

func (e *QuorumError) Error() string {
	return fmt.Sprintf("lockprovider: redlock %s: %d of %d masters granted, %d needed: %v",
		e.Op, e.Acquired, e.Masters, e.Quorum, errors.Join(e.Errs...))
}

// Unwrap returns the per-master failures.
func (e *QuorumError) Unwrap() []error { return e.Errs }

// LimitError details ErrLimitMismatch.
type LimitError struct {
	Name      string
	Requested int
	Current   int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("lockprovider: semaphore %q: holders use limit %d, not %d", e.Name, e.Current, e.Requested)
}

// FrozenError is the cause KeepAlive gives a lease lost because this
// process did not run when the lease's deadline came: its timers fired Late
// past it, as they do once a process frozen by SIGSTOP, a VM pause or a
// stall runs again. Redis did nothing wrong; the lease ran out meanwhile, and
// another holder may have taken it.
type FrozenError struct {
	Name string        // the lease's name
	Late time.Duration // how long past the deadline the process ran again
}

func (e *FrozenError) Error() string {
	return fmt.Sprintf("lockprovider: lease lost: %q: this process was frozen (SIGSTOP, a VM pause, a stall) and ran again %s past the lease's deadline",
		e.Name, e.Late.Round(time.Millisecond))
}

// Unwrap makes errors.Is(err, ErrLeaseLost) true.
func (e *FrozenError) Unwrap() error { return ErrLeaseLost }

// Is makes errors.Is(err, ErrLimitMismatch) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimitMismatch }
