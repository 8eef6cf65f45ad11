package store

import (
	"context"
	"time"
)

// Backend is everything the engine and Control need from the store. Two
// implementations: store, one Redis deployment (standalone, Sentinel or
// Cluster), where every operation is one atomic script; and redlock, N
// independent masters, which runs the same scripts on every master and
// combines their answers by majority. A new kind of store implements it,
// and Store (stores.go) gets a constructor that opens it.
type Backend interface {
	MetaKey(job string) string
	// PlacePools places the keys of the table's pooled jobs under their
	// pool's hash tag (storepool.go); MetaKey follows.
	PlacePools(jobs []PoolJob)

	// Preload loads every script, so the first claim is one round trip.
	Preload(ctx context.Context) error
	// Claim decides runs; see claim.lua for the answers. It may also answer
	// AnswerRetry: the run was claimed, then taken back (too few replicas
	// acknowledged it, or no Redlock quorum) — nothing started, try again.
	Claim(ctx context.Context, replica string, skew, waiterTTL time.Duration, reqs []StoreClaim) ([]ClaimRes, error)
	// Admit polls rs, runs of one job queued for a slot, in one call; per
	// run: AnswerStarted (n is the fencing token; its slot is set to the
	// run's slot), AnswerWaiting (n is the place), AnswerSkippedOverlap,
	// AnswerSkippedPaused (a scheduled or catch-up run of a job paused
	// while it waited), AnswerMissed, AnswerExpired or AnswerLost.
	Admit(ctx context.Context, rs []*StoreClaim, waiterTTL time.Duration, fenceFloor int64) ([]AdmitRes, error)
	// HandBack gives a manual run this replica claimed but has not started
	// (queued, or won while shutting down) back to the pending requests, so
	// that another replica runs it. It reports whether it did (false: the
	// run is no longer this replica's to give back).
	HandBack(ctx context.Context, r *StoreClaim, waiterTTL time.Duration) (bool, error)
	// Renew renews leases; see LeaseAnswer.
	Renew(ctx context.Context, reqs []RenewReq) ([]LeaseAnswer, error)
	// Attempt issues the fencing token of a run's next attempt; 0 means the
	// run is no longer held.
	Attempt(ctx context.Context, j *JobSpec, id, owner string, n int, fenceFloor int64) (int64, error)
	// Complete closes runs; see CloseAnswer.
	Complete(ctx context.Context, reqs []CompleteReq) ([]CloseAnswer, error)
	// Sync is the heartbeat of the replica's jobs.
	Sync(ctx context.Context, replica string, skew, manualTTL time.Duration, reqs []SyncReq) ([]SyncRes, error)

	// What Control needs.
	// SetPaused sets or clears the pause flag; why is kept as paused_why.
	SetPaused(ctx context.Context, job string, paused bool, why string) error
	Trigger(ctx context.Context, job, id string) error
	// Cancel asks run id to stop (cancel.lua); retry queues newID as a
	// manual run retrying id (retry.lua); retries lists the job's latest
	// retries, oldest first.
	Cancel(ctx context.Context, job, id, who string) (cancelAnswer, Outcome, error)
	Retry(ctx context.Context, job, id, newID, who string, ended bool) (retryAnswer, error)
	Retries(ctx context.Context, job string) ([]RetryLink, error)
	// ManualHints returns the jobs with manual requests made since
	// h.since, and those whose run statistics changed since h.changedSince
	// (a hint: the heartbeat then syncs those jobs to find the requests, and
	// reads the statistics); it first publishes h.changed. It also returns
	// Redis' clock as it answered: the replica checks its own clock against
	// it (one round trip for all).
	ManualHints(ctx context.Context, h HintReq) (Hints, time.Time, error)
	History(ctx context.Context, job string, limit int) ([]Run, error)
	Status(ctx context.Context, job string, limit int) (*Status, error)
	// Get returns a run's record, or nil if the store has none.
	Get(ctx context.Context, job, suffix string) (*Run, error)
	Statuses(ctx context.Context, jobs []string, limit int) ([]*Status, error)
	Overview(ctx context.Context, jobs []string, recent int) ([]Overview, error)
	HistoryPage(ctx context.Context, job string, offset, limit int) ([]Run, error)
	// Backfill runs backfill.lua (args: its ARGV) and answers its answer
	// and the job's backfill state; BackfillJobs lists the jobs with a
	// backfill, BackfillForget drops one from that list if its entry is
	// still the one listed (storebackfill.go).
	Backfill(ctx context.Context, job string, args []any) (string, *Backfill, error)
	BackfillJobs(ctx context.Context) ([]BackfillHint, error)
	BackfillForget(ctx context.Context, h BackfillHint) error
	Registrar

	// Caps says what the store can do beyond coordinating runs.
	Caps() Capabilities
}

// Capabilities are what a store can do beyond coordinating runs.
type Capabilities struct {
	// MutexOnly: every job must have concurrency 1, and there are no
	// notifications (Redlock).
	MutexOnly bool
	// Registry: it keeps the replica registry (see Control.Replicas).
	Registry bool
	// Notify is where notifications are queued; nil: nowhere.
	Notify *Redis
}

func (s *Redis) Caps() Capabilities { return Capabilities{Registry: true, Notify: s} }

func (rl *redlock) Caps() Capabilities { return Capabilities{MutexOnly: true, Registry: true} }

var (
	_ Backend = (*Redis)(nil)
	_ Backend = (*redlock)(nil)
)
