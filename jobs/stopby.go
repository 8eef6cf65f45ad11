package jobs

import (
	"context"
	"sync"
	"time"
)

// StopBy is the time by which a job's processes must be gone, as it moves:
// the end of the run's lease, less a margin, renewal after renewal. A
// Command run under WithStopBy hands it to its supervisor, which stops the
// program on its own once that time comes — SIGTERM to its process group
// StopGrace (kill_grace) before it, SIGKILL at it — even when the process
// running the scheduler cannot act (frozen by SIGSTOP, a paused VM, a
// stall): the supervisor is a process of its own. So a lost lease leaves no
// process of the job alive by the time Redis could give its slot to another
// holder. Without a supervisor (SupervisorMain not called, or not Linux)
// only the scheduler's own watchdog stops the job.
type StopBy struct {
	mu      sync.Mutex
	t       time.Time
	changed chan struct{} // one token when t changed since it was last read
}

// NewStopBy returns a StopBy at t.
func NewStopBy(t time.Time) *StopBy {
	return &StopBy{t: t, changed: make(chan struct{}, 1)}
}

// Set moves the time to t (a renewed lease), and tells the supervisor at
// once. A zero t changes nothing.
func (s *StopBy) Set(t time.Time) {
	if t.IsZero() {
		return
	}
	s.mu.Lock()
	s.t = t
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// get returns the time, and a channel that receives when it changes.
func (s *StopBy) get() (time.Time, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t, s.changed
}

// stopByKey carries WithStopBy's StopBy.
type stopByKey struct{}

// WithStopBy returns a context under which a Command's supervisor stops its
// program once s's time comes (see StopBy).
func WithStopBy(ctx context.Context, s *StopBy) context.Context {
	return context.WithValue(ctx, stopByKey{}, s)
}

// stopByFrom returns WithStopBy's StopBy, or nil.
func stopByFrom(ctx context.Context) *StopBy {
	s, _ := ctx.Value(stopByKey{}).(*StopBy)
	return s
}
