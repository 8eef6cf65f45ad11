package scheduler

import "github.com/solocron/solocron/scheduler/internal/store"

// The public types of the store's answers are the store's
// (scheduler/internal/store/types.go); these are their names here.

// Outcome is how a run was decided or how it ended. The values are stored
// in run records and used as the "outcome" attribute of metrics.
type Outcome = store.Outcome

// Decisions: what the cluster decided for a run, once, on one replica.
const (
	// Started: a replica claimed the run and started it.
	Started = store.Started
	// SkippedOverlap: every concurrency slot was busy (overlap: skip), or
	// none freed within max_wait (overlap: wait).
	SkippedOverlap = store.SkippedOverlap
	// SkippedPaused: the job was paused.
	SkippedPaused = store.SkippedPaused
	// SkippedBlackout: the instant fell in one of the job's blackout
	// windows.
	SkippedBlackout = store.SkippedBlackout
	// Missed: no replica could claim the run before its starting deadline
	// (e.g. Redis was unreachable), or its replica stopped while it waited;
	// or Redis lost its data after the run could have started (a job state
	// created afresh, a failover to a copy that missed writes), so it is
	// not started again. As an end, under decision started: the run never
	// ran (its claim's answer came after its lease, which could not be
	// taken back); its error starts with "never started".
	Missed = store.Missed
)

// Ends of a started run.
const (
	Succeeded = store.Succeeded
	Failed    = store.Failed
	TimedOut  = store.TimedOut
	// LeaseLost: the run's lease could not be renewed (or expired because its
	// replica died), so another run could have taken its slot.
	LeaseLost = store.LeaseLost
	// Interrupted: its replica shut down and the run did not finish within
	// the shutdown grace period.
	Interrupted = store.Interrupted
	// Replaced: a newer run of the job took its slot (overlap: replace).
	Replaced = store.Replaced
	// Cancelled: an operator asked it to stop (Control.Cancel); the record
	// says who (CancelledBy).
	Cancelled = store.Cancelled
)

// States of a run that has not ended.
const (
	Running = store.Running
	Waiting = store.Waiting
)

// Kind says how a run came about.
type Kind = store.Kind

const (
	// KindScheduled: a run at one of the job's scheduled instants.
	KindScheduled = store.KindScheduled
	// KindManual: a run asked for with Control.Trigger.
	KindManual = store.KindManual
	// KindCatchup: a missed instant made up for after every replica was down.
	KindCatchup = store.KindCatchup
	// KindBackfill: an instant run by a backfill (Control.Backfill).
	KindBackfill = store.KindBackfill
)

// Run is one run's record. Its fields and methods are documented with the store's
// type: go doc github.com/solocron/solocron/scheduler/internal/store.Run
type Run = store.Run

// Status is a job's cluster-wide state. Its fields and methods are documented with the store's
// type: go doc github.com/solocron/solocron/scheduler/internal/store.Status
type Status = store.Status

// Overview is a job's cluster-wide state as a page of many jobs shows it. Its fields and methods are documented with the store's
// type: go doc github.com/solocron/solocron/scheduler/internal/store.Overview
type Overview = store.Overview

// Backfill is the state of a job's backfill. Its fields and methods are documented with the store's
// type: go doc github.com/solocron/solocron/scheduler/internal/store.Backfill
type Backfill = store.Backfill

// Replica is one live replica as the registry shows it. Its fields and methods are documented with the store's
// type: go doc github.com/solocron/solocron/scheduler/internal/store.Replica
type Replica = store.Replica

// Overlap says what a run does when all of its job's concurrency slots are
// taken by earlier runs still in flight.
type Overlap = store.Overlap

const (
	// OverlapSkip records the run as skipped_overlap. The default.
	OverlapSkip = store.OverlapSkip
	// OverlapWait queues the run (first in, first out across replicas) until a
	// slot frees or MaxWait passes; then it is recorded skipped_overlap. If
	// its replica stops (or dies) while it waits, a scheduled or catch-up
	// run is recorded missed; a manual run goes back to the pending
	// requests, and another replica runs it.
	OverlapWait = store.OverlapWait
	// OverlapReplace starts the run at once and tells the oldest run in flight,
	// wherever it runs, to stop: its next lease renewal answers "replaced", its
	// context is cancelled and its record is closed as replaced. Only a run of
	// an earlier instant that has started is replaced: when every run in
	// flight is of a later instant (this claim came late) or claimed ahead
	// and not started yet, the run is recorded skipped_overlap.
	OverlapReplace = store.OverlapReplace
)

// PoolUse is how much of a job's pool is in use (Status.Pool). Its fields
// are documented with the store's type: go doc
// github.com/solocron/solocron/scheduler/internal/store.PoolUse
type PoolUse = store.PoolUse

// MaxPendingManual bounds the manual runs of one job that may wait at once,
// pending (not picked up yet) or queued for a slot (picked up, waiting for
// admission): Trigger answers ErrQueueFull beyond it.
const MaxPendingManual = store.MaxPendingManual

// ErrQueueFull is the error of Trigger when MaxPendingManual manual runs of
// the job wait already: wait for some to run.
var ErrQueueFull = store.ErrQueueFull
