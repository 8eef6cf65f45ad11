package scheduler

// Outcome is how a run was decided or how it ended. The values are stored
// in run records and used as the "outcome" attribute of metrics.
type Outcome string

// Decisions: what the cluster decided for a run, once, on one replica.
const (
	// Started: a replica claimed the run and started it.
	Started Outcome = "started"
	// SkippedOverlap: every concurrency slot was busy (overlap: skip), or
	// none freed within max_wait (overlap: wait).
	SkippedOverlap Outcome = "skipped_overlap"
	// SkippedPaused: the job was paused.
	SkippedPaused Outcome = "skipped_paused"
	// SkippedBlackout: the instant fell in one of the job's blackout
	// windows.
	SkippedBlackout Outcome = "skipped_blackout"
	// Missed: no replica could claim the run before its starting deadline
	// (e.g. Redis was unreachable), or its replica stopped while it waited;
	// or Redis lost its data after the run could have started (a job state
	// created afresh, a failover to a copy that missed writes), so it is
	// not started again. As an end, under decision started: the run never
	// ran (its claim's answer came after its lease, which could not be
	// taken back); its error starts with "never started".
	Missed Outcome = "missed"
)

// Ends of a started run.
const (
	Succeeded Outcome = "succeeded"
	Failed    Outcome = "failed"
	TimedOut  Outcome = "timed_out"
	// LeaseLost: the run's lease could not be renewed (or expired because its
	// replica died), so another run could have taken its slot.
	LeaseLost Outcome = "lease_lost"
	// Interrupted: its replica shut down and the run did not finish within
	// the shutdown grace period.
	Interrupted Outcome = "interrupted"
	// Replaced: a newer run of the job took its slot (overlap: replace).
	Replaced Outcome = "replaced"
	// Cancelled: an operator asked it to stop (Control.Cancel); the record
	// says who (CancelledBy).
	Cancelled Outcome = "cancelled"
)

// States of a run that has not ended.
const (
	Running Outcome = "running"
	Waiting Outcome = "waiting"
)

// Kind says how a run came about.
type Kind string

const (
	// KindScheduled: a run at one of the job's scheduled instants.
	KindScheduled Kind = "scheduled"
	// KindManual: a run asked for with Control.Trigger.
	KindManual Kind = "manual"
	// KindCatchup: a missed instant made up for after every replica was down.
	KindCatchup Kind = "catchup"
	// KindBackfill: an instant run by a backfill (Control.Backfill).
	KindBackfill Kind = "backfill"
)

func kindOf(code string) Kind {
	switch code {
	case "m":
		return KindManual
	case "c":
		return KindCatchup
	case "b":
		return KindBackfill
	}
	return KindScheduled
}
