package store

import (
	"errors"
	"time"
)

// The public types the store's answers are made of (runs, statuses, the
// overview, backfills, replicas, pools), and their constants: one file, so
// that the store can move to a package of its own and leave aliases here.

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

// Run is one run's record.
type Run struct {
	ID           string    `json:"id"`
	Job          string    `json:"job"`
	Kind         Kind      `json:"kind"`
	ScheduledAt  time.Time `json:"scheduled_at"`
	Decision     Outcome   `json:"decision"`
	Outcome      Outcome   `json:"outcome"`
	Replica      string    `json:"replica"`
	FencingToken int64     `json:"fencing_token,omitempty"`
	StartedAt    time.Time `json:"started_at,omitzero"`
	FinishedAt   time.Time `json:"finished_at,omitzero"`
	Attempts     int       `json:"attempts,omitempty"`
	Error        string    `json:"error,omitempty"`
	Output       string    `json:"output,omitempty"`
	// TraceID is the trace of the run's span (32 hex digits) when spans
	// were recorded, for finding the run in a tracing backend.
	TraceID string `json:"trace_id,omitempty"`
	// Slot is the concurrency slot (1..concurrency) a started run held;
	// its fencing token is above every earlier holder's of that slot.
	Slot int `json:"slot,omitempty"`
	// Paused is set on the run whose end paused its job
	// (pause_after_failures), and says why.
	Paused string `json:"paused,omitempty"`
	// CancelledBy says who asked the run to stop (Control.Cancel); its
	// outcome is cancelled unless it ended before it heard.
	CancelledBy string `json:"cancelled_by,omitempty"`
	// RetryOf is, for a manual run asked for by Control.Retry, the run it
	// retries; RetriedAs the latest retry of this run; RetriedBy who asked.
	// Filled in by Control.Get (the job's latest retries are kept).
	RetryOf   string `json:"retry_of,omitempty"`
	RetriedAs string `json:"retried_as,omitempty"`
	RetriedBy string `json:"retried_by,omitempty"`
}

// Duration is how long a finished run ran, or 0.
func (r Run) Duration() time.Duration {
	if r.StartedAt.IsZero() || r.FinishedAt.IsZero() {
		return 0
	}
	return r.FinishedAt.Sub(r.StartedAt)
}

// Status is a job's cluster-wide state.
type Status struct {
	Job    string `json:"job"`
	Paused bool   `json:"paused"`
	// PausedWhy says why the job is paused: why the cluster paused it by
	// itself (pause_after_failures), or the reason an operator gave
	// (PauseWithReason); "" for none.
	PausedWhy string `json:"paused_why,omitempty"`
	// ConsecutiveFailures counts the job's latest runs in a row that ended
	// failed, timed_out or lease_lost (reset by a success and by Resume).
	ConsecutiveFailures int `json:"consecutive_failures"`
	// Running lists the runs in flight, on any replica.
	Running []Run `json:"running"`
	// Waiting counts runs queued for a slot (overlap: wait).
	Waiting int `json:"waiting"`
	// LastScheduled is the latest scheduled instant decided.
	LastScheduled time.Time `json:"last_scheduled,omitzero"`
	// PendingManual counts manual runs requested but not yet claimed.
	PendingManual int `json:"pending_manual"`
	// History holds the latest finished runs, newest first.
	History []Run `json:"history"`
	// Backfill is the job's backfill, going on or finished within the
	// last day; nil if none (Control.Backfill).
	Backfill *Backfill `json:"backfill,omitempty"`
	// Pool is the use of the job's pool (Job.Pool), nil for a job in none.
	Pool *PoolUse `json:"pool,omitempty"`
}

// Overview is a job's cluster-wide state as a page of many jobs shows it.
type Overview struct {
	Status
	// LeaseUntil holds, per run id in Running, when its lease runs out by
	// Redis' clock (unless renewed). Empty on Redlock.
	LeaseUntil map[string]time.Time `json:"lease_until,omitempty"`
	// KeptStarted counts the runs in the job's whole kept history (its
	// history_limit latest records, however few History holds) that
	// started, and KeptSucceeded those of them that succeeded: the success
	// ratio over the kept history. The store keeps the counts as it files
	// and trims records, so reading them costs nothing per record.
	KeptStarted   int `json:"kept_started"`
	KeptSucceeded int `json:"kept_succeeded"`
	// LastEnded holds when the job's latest run with each of the outcomes
	// failed, timed_out, lease_lost and missed ended (or was decided), by
	// Redis' clock: what a summary of "what went wrong lately" counts.
	// Empty on Redlock.
	LastEnded map[Outcome]time.Time `json:"last_ended,omitempty"`
}

// Backfill is the state of a job's backfill.
type Backfill struct {
	ID       string    `json:"id"`
	Job      string    `json:"job"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Parallel int       `json:"parallel"`
	// Total is the number of instants in [From, To].
	Total int `json:"total"`
	// Decided counts the instants decided so far, oldest first: Started +
	// Skipped + Already.
	Decided int `json:"decided"`
	// Started counts the instants the backfill ran.
	Started int `json:"started"`
	// Skipped counts those it recorded without running them
	// (skipped_blackout; missed when Redis lost data after the instant).
	Skipped int `json:"skipped"`
	// Already counts the instants that started before the backfill reached
	// them (running, or ended in any way): not run again. Instants decided
	// before without starting (missed, skipped) are run: Started counts them.
	Already int `json:"already"`
	// Succeeded and Failed count the started runs that ended (Failed: any
	// other way than succeeded); InFlight those still running.
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	InFlight  int `json:"in_flight"`
	// Cancelled: CancelBackfill stopped it, or a replica did (Error says
	// why); the instants not decided by then are dropped.
	Cancelled bool `json:"cancelled,omitempty"`
	// Error says why a replica stopped the backfill: the job's schedule,
	// time zone or offset in its table gives other instants in the range
	// than the table the backfill was asked with.
	Error   string    `json:"error,omitempty"`
	Created time.Time `json:"created"`
	// Finished is when nothing was left to take and nothing it started
	// was in flight any more; zero while it goes on.
	Finished time.Time `json:"finished,omitzero"`
	// cursor is the latest instant taken (before From at first).
	cursor time.Time
	// redo are the instants taken back after the cursor passed them
	// (min_replicas_ack), to take again before any new one.
	redo []time.Time
	// last is the range's last instant as the requester's table has it.
	last time.Time
}

// Done reports whether the backfill has finished (or was cancelled and its
// runs in flight ended).
func (b *Backfill) Done() bool { return !b.Finished.IsZero() }

// Dropped counts the instants a cancel dropped (never decided).
func (b *Backfill) Dropped() int {
	if !b.Cancelled {
		return 0
	}
	return b.Total - b.Decided
}

// AllRan reports whether the backfill finished with every instant run and
// succeeded, or run before.
func (b *Backfill) AllRan() bool {
	return b.Done() && !b.Cancelled && b.Error == "" && b.Skipped == 0 && b.Failed == 0 && b.Decided == b.Total
}

// Replica is one live replica as the registry shows it.
type Replica struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	// Started is when the replica started, by its own clock.
	Started time.Time `json:"started"`
	// LastHeartbeat is when it last wrote its record, by Redis' clock.
	LastHeartbeat time.Time `json:"last_heartbeat"`
	// HeartbeatAge is how long ago that was when the registry was read.
	HeartbeatAge time.Duration `json:"heartbeat_age_ns"`
	// ClockOffset is how far the replica's clock runs ahead of Redis'
	// (negative: behind), by its last reading.
	ClockOffset time.Duration `json:"clock_offset_ns"`
	// Table fingerprints the job table the replica loaded (see
	// TableFingerprint).
	Table string `json:"table"`
	// Parts fingerprints that table by parts: the jobs of each share of
	// job names (see the scheduler's tableParts); empty when the replica
	// did not say (an older version).
	Parts string `json:"-"`
	// Jobs counts the jobs in that table.
	Jobs int `json:"jobs"`
	// Running counts the runs in flight on the replica.
	Running int `json:"running"`
	// TableDiffers is set when the replica's table is not the one most live
	// replicas have (every replica's, on a tie).
	TableDiffers bool `json:"table_differs"`
}

// Overlap says what a run does when all of its job's concurrency slots are
// taken by earlier runs still in flight.
type Overlap string

const (
	// OverlapSkip records the run as skipped_overlap. The default.
	OverlapSkip Overlap = "skip"
	// OverlapWait queues the run (first in, first out across replicas) until a
	// slot frees or MaxWait passes; then it is recorded skipped_overlap. If
	// its replica stops (or dies) while it waits, a scheduled or catch-up
	// run is recorded missed; a manual run goes back to the pending
	// requests, and another replica runs it.
	OverlapWait Overlap = "wait"
	// OverlapReplace starts the run at once and tells the oldest run in flight,
	// wherever it runs, to stop: its next lease renewal answers "replaced", its
	// context is cancelled and its record is closed as replaced. Only a run of
	// an earlier instant that has started is replaced: when every run in
	// flight is of a later instant (this claim came late) or claimed ahead
	// and not started yet, the run is recorded skipped_overlap.
	OverlapReplace Overlap = "replace"
)

// PoolUse is how much of a job's pool is in use (Status.Pool).
type PoolUse struct {
	Name string `json:"name"`
	// Size is the pool's number of slots in the table this Control (or
	// Scheduler) knows.
	Size int `json:"size"`
	// Used counts the slots held by runs whose lease has not run out.
	Used int `json:"used"`
	// Holders are those runs' ids, of any of the pool's jobs.
	Holders []string `json:"holders"`
}

// MaxPendingManual bounds the manual runs of one job that may wait at once,
// pending (not picked up yet) or queued for a slot (picked up, waiting for
// admission): Trigger answers ErrQueueFull beyond it.
const MaxPendingManual = 100

// ErrQueueFull is the error of Trigger when MaxPendingManual manual runs of
// the job wait already: wait for some to run.
var ErrQueueFull = errors.New("scheduler: the job's queue of waiting manual runs is full")
