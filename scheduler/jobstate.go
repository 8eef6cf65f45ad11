package scheduler

import (
	"errors"
	"hash/fnv"
	"sync"
	"time"

	"github.com/solocron/solocron/internal/schedule"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// jobState is one job of the loaded table, with defaults applied and its
// schedule parsed. It never changes after load; what a replica learns about
// the job at run time lives in its memo, which survives reloads.
type jobState struct {
	Job
	sched   *schedule.Schedule
	metaKey string
	// spec is the job's settings as the store takes them, built with the
	// job state and never changed.
	spec *store.JobSpec
	memo *memo
	skew time.Duration // the table's max clock skew

	periodOnce sync.Once     // see period
	periodVal  time.Duration // the schedule's nominal period
	// blackouts are the job's Blackouts, parsed.
	blackouts blackouts
	// bfPlan is whether this table's schedule gives the instants of the
	// job's backfill id (backfillPlanDiffers): why not, or "".
	bfPlan struct {
		mu      sync.Mutex
		id, why string
	}
}

// newJobState parses spec's schedules; spec has its defaults applied.
func newJobState(spec Job, metaKey string, m *memo, skew time.Duration) (*jobState, error) {
	p, errs := spec.parse()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p.jobState(spec, metaKey, m, skew), nil
}

// jobState is spec (defaults applied) with its schedules as validation
// parsed them.
func (p parsed) jobState(spec Job, metaKey string, m *memo, skew time.Duration) *jobState {
	j := &jobState{Job: spec, sched: p.sched, metaKey: metaKey, memo: m, skew: skew, blackouts: p.blackouts}
	j.spec = &store.JobSpec{Name: spec.Name, MetaKey: metaKey, Lease: spec.Lease, Concurrency: spec.Concurrency,
		Pool: spec.Pool, PoolSize: spec.PoolSize, StartingDeadline: spec.StartingDeadline,
		CatchupWindow: spec.CatchupWindow, ManualRetention: j.manualRetention(), HistoryLimit: spec.HistoryLimit,
		Paused: spec.Paused, PauseAfterFailures: spec.PauseAfterFailures}
	return j
}

// memo is what this replica remembers about a job across table reloads.
type memo struct {
	mu       sync.Mutex
	epoch    string    // the job's store epoch last seen; "" before the first answer
	fence    int64     // highest fencing token seen for the job
	paused   bool      // cluster-wide pause flag, as of the last heartbeat
	last     time.Time // latest decided scheduled instant, as of the last heartbeat
	touched  time.Time // last heartbeat or claim answer for the job
	caughtUp bool      // catch-up done for the current epoch
	sets     attrSets  // the job's metric attribute sets (own lock)
	// stats is what the store keeps about the job's runs, as of the last
	// answer that told it (statsRead: one has): statsRaw as the scripts
	// pack it, statsAt the server time (µs) it held then, 0 when unknown (a
	// Redlock replica merges its masters' answers).
	stats     store.JobStats
	statsRead bool
	statsRaw  string
	statsAt   int64
}

// setStats takes the job's statistics as the store held them at server
// time at (µs; 0: unknown), unless the memo holds a later reading. It
// reports whether they differ from what the memo held.
func (m *memo) setStats(raw string, st store.JobStats, at int64) (changed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// A reading at the same server time is taken: Redis' µs clock gives
	// two scripts one time only where it does not move (miniredis in a
	// synctest bubble), and there the later answer is the later reading.
	if m.statsRead && at > 0 && at < m.statsAt {
		return false
	}
	changed = m.statsRead && m.stats != st
	m.stats, m.statsRaw, m.statsAt, m.statsRead = st, raw, at, true
	return changed
}

// statsValue is the memo's statistics as published to the other replicas
// (jobmetrics.go's statsEntry), or "" when the server time of their reading
// is unknown.
func (m *memo) statsValue() (raw string, at int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.statsRead || m.statsAt <= 0 {
		return "", 0
	}
	return m.statsRaw, m.statsAt
}

func (m *memo) snapshot() (epoch string, fence int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch, m.fence
}

// touch notes that the store answered about the job at t.
func (m *memo) touch(t time.Time) {
	m.mu.Lock()
	if t.After(m.touched) {
		m.touched = t
	}
	m.mu.Unlock()
}

// touchedAfter reports whether the store answered about the job after t.
func (m *memo) touchedAfter(t time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.touched.After(t)
}

// observe records an epoch and fencing token seen in a store answer. It
// returns the previous epoch when the store's differs from one already
// known: Redis lost the job's data.
func (m *memo) observe(epoch string, fence int64) (lost string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if epoch != "" && epoch != m.epoch {
		if m.epoch != "" {
			lost = m.epoch
		}
		m.epoch = epoch
		m.caughtUp = false
	}
	m.fence = max(m.fence, fence)
	return lost
}

// fire is when a run scheduled at sched is claimed: the scheduled instant
// plus the job's jitter for that run.
func (j *jobState) fire(sched time.Time) time.Time {
	if j.Jitter <= 0 {
		return sched
	}
	return sched.Add(j.jitter(runID(j.Name, sched)))
}

// jitter is a delay in [0, Jitter) derived from the run id alone, so every
// replica delays a run by the same amount and still races for the same
// instant.
func (j *jobState) jitter(id string) time.Duration {
	if j.Jitter <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	ms := j.Jitter.Milliseconds()
	if ms <= 0 {
		return 0
	}
	return time.Duration(h.Sum64()%uint64(ms)) * time.Millisecond
}

// retention is how long a decided run's record is kept after it finishes.
// It must outlive every moment some replica could still try to claim the
// run — a replica whose clock lags by the max skew, at the very end of the
// starting deadline (plus the jitter and a wait for a slot) — or that
// replica would find nothing and run it again. It also covers two intervals
// of the schedule, so the previous run is always visible.
func (j *jobState) retention(sched time.Time) time.Duration {
	window := 2*j.skew + j.Jitter + j.StartingDeadline + j.MaxWait + time.Second
	if next := j.sched.Next(sched); !next.IsZero() {
		window = max(window, 2*next.Sub(sched))
	}
	return window
}

// manualRetention is the retention of manual run records.
func (j *jobState) manualRetention() time.Duration {
	return 2*j.skew + j.StartingDeadline + j.MaxWait + time.Minute
}

// runID is "<job>@<scheduled instant, UTC, RFC 3339, seconds>".
func runID(job string, sched time.Time) string {
	var buf [96]byte
	b := append(append(buf[:0], job...), '@')
	return string(sched.UTC().AppendFormat(b, time.RFC3339))
}
