package jobs

import (
	"context"
	"time"
)

// Job is what a run executes. Run must return when ctx is done; the error it
// returns decides the run's outcome (nil is success).
type Job interface {
	Run(ctx context.Context) error
}

// Func adapts an ordinary function to a Job, as http.HandlerFunc does for
// handlers. A panic inside the function is recovered and returned as a
// *PanicError, so one bad job cannot take its replica down.
type Func func(ctx context.Context) error

// Info is what a run knows about itself. The scheduler puts it in the context
// it passes to Run; jobs read it with FromContext or the accessors below.
type Info struct {
	// Job is the job's name.
	Job string
	// RunID is "<job>@<scheduled instant, UTC, RFC 3339>" or "<job>@manual-<id>".
	RunID string
	// ScheduledAt is the instant the run was scheduled for (UTC). For a manual
	// run it is the time the trigger was accepted.
	ScheduledAt time.Time
	// FencingToken strictly increases per job across runs and attempts. Pass it
	// to any store the job writes to, so that store can refuse a writer whose
	// lease has already passed to someone else.
	FencingToken int64
	// Slot is the concurrency slot the run holds, 1..the job's concurrency
	// (0 outside a run). The fencing token rises per slot too: a store that
	// keeps the highest token per (job, slot) refuses exactly the stale
	// holders of that slot, while the job's other slots write on.
	Slot int
	// Attempt is 1 for the first attempt and rises with each retry.
	Attempt int
	// ReplicaID names the replica running the job.
	ReplicaID string
}

type infoKey struct{}

// NewContext returns a copy of ctx carrying info.
func NewContext(ctx context.Context, info Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// FromContext returns the Info stored in ctx by NewContext (or WithRun).
func FromContext(ctx context.Context) (Info, bool) {
	switch info := ctx.Value(infoKey{}).(type) {
	case Info:
		return info, true
	case *Info: // WithRun's
		return *info, true
	}
	return Info{}, false
}

// RunID returns the run id stored in ctx, or "".
func RunID(ctx context.Context) string { info, _ := FromContext(ctx); return info.RunID }

// ScheduledAt returns the scheduled instant stored in ctx, or the zero Time.
func ScheduledAt(ctx context.Context) time.Time { info, _ := FromContext(ctx); return info.ScheduledAt }

// FencingToken returns the fencing token stored in ctx, or 0.
func FencingToken(ctx context.Context) int64 { info, _ := FromContext(ctx); return info.FencingToken }

// Slot returns the concurrency slot stored in ctx, or 0.
func Slot(ctx context.Context) int { info, _ := FromContext(ctx); return info.Slot }

// Attempt returns the 1-based attempt number stored in ctx, or 0.
func Attempt(ctx context.Context) int { info, _ := FromContext(ctx); return info.Attempt }

// ReplicaID returns the replica id stored in ctx, or "".
func ReplicaID(ctx context.Context) string { info, _ := FromContext(ctx); return info.ReplicaID }
