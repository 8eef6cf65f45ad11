package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// A backfill runs every instant of a job's schedule in a range once, under
// the instants' own run ids ("<job>@<instant>", recorded with kind
// backfill): an instant that started already (its record still kept) is
// counted and not run again; one decided without starting (missed,
// skipped) runs now. Control.Backfill
// stores the request in the job's keys; the replicas that have the job in
// their table take its instants, oldest first, in their backfill beat
// (every sync interval), each claim moving the backfill's cursor on in the
// same script that claims the run, so two replicas never take the same
// instant. Backfill runs stay within the job's concurrency (an instant
// waits while every slot is busy) and at most parallel of them are in
// flight across the cluster. Instants inside a blackout window are
// recorded skipped_blackout. A paused job's backfill waits until it is
// resumed. One backfill per job at a time.

// MaxBackfillInstants bounds the instants of one backfill.
const MaxBackfillInstants = 100000

// MaxBackfillParallel bounds a backfill's parallel runs.
const MaxBackfillParallel = 100

// backfillKeep is how long a finished backfill's state stays readable
// (status, console).
const backfillKeep = 24 * time.Hour

// backfillChain is how many instants past its free parallel places a
// replica asks for in one beat: instants that ran already take none.
const backfillChain = 256

var (
	// ErrBackfillRange is the error of Control.Backfill for a range it
	// cannot take: from after to, in the future, no instants, too many.
	ErrBackfillRange = errors.New("scheduler: bad backfill range")
	// ErrBackfillBusy is the error of Control.Backfill when the job has a
	// backfill going on already.
	ErrBackfillBusy = errors.New("scheduler: a backfill of the job is going on already")
	// ErrNoBackfill is the error of Control.CancelBackfill when the job has
	// no backfill going on.
	ErrNoBackfill = errors.New("scheduler: the job has no backfill going on")
	// ErrBackfillUnsupported: the store cannot backfill (Redlock).
	ErrBackfillUnsupported = store.ErrBackfillUnsupported
)

// BackfillInstants lists the instants of job's schedule in [from, to],
// oldest first; an error wrapping ErrBackfillRange when there are none, or
// more than MaxBackfillInstants, or the range is not one.
func BackfillInstants(job Job, from, to time.Time) ([]time.Time, error) {
	if err := checkJob(job.Name); err != nil {
		return nil, err
	}
	tm, err := job.Timing()
	if err != nil {
		return nil, fmt.Errorf("scheduler: job %q: %w", job.Name, err)
	}
	switch {
	case from.IsZero() || to.IsZero():
		return nil, fmt.Errorf("%w: from and to are both required", ErrBackfillRange)
	case from.After(to):
		return nil, fmt.Errorf("%w: from (%s) is after to (%s)", ErrBackfillRange, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	case to.After(time.Now()):
		return nil, fmt.Errorf("%w: to (%s) is in the future: a backfill runs past instants only", ErrBackfillRange, to.UTC().Format(time.RFC3339))
	}
	var out []time.Time
	for t := tm.Next(from.Add(-time.Millisecond)); !t.IsZero() && !t.After(to); t = tm.Next(t) {
		if len(out) == MaxBackfillInstants {
			return nil, fmt.Errorf("%w: more than %d instants of %q in the range: backfill a shorter range at a time", ErrBackfillRange, MaxBackfillInstants, job.Name)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no instant of %q's schedule (%s) in the range", ErrBackfillRange, job.Name, job.Schedule)
	}
	return out, nil
}

// Backfill asks the cluster to run every instant of job's schedule in
// [from, to] once (see the package's notes on backfill above), at most
// parallel (1..MaxBackfillParallel; 0 means 1) at a time. job is the job
// as the replicas' table has it (its schedule, time zone and offset say
// which the instants are). It returns the backfill's state as it starts;
// an error wrapping ErrBackfillBusy when the job has one going on,
// ErrBackfillRange for a bad range, ErrBackfillUnsupported on Redlock.
func (c *Control) Backfill(ctx context.Context, job Job, from, to time.Time, parallel int) (*Backfill, error) {
	if parallel == 0 {
		parallel = 1
	}
	if parallel < 1 || parallel > MaxBackfillParallel {
		return nil, fmt.Errorf("%w: parallel %d is not within 1..%d", ErrBackfillRange, parallel, MaxBackfillParallel)
	}
	instants, err := BackfillInstants(job, from, to)
	if err != nil {
		return nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	id := strconv.FormatInt(time.Now().Unix(), 36) + hex.EncodeToString(b[:])
	args := []any{"start", id, from.UnixMilli(), to.UnixMilli(), instants[len(instants)-1].UnixMilli(), parallel,
		len(instants), from.UnixMilli() - 1, backfillKeep.Milliseconds()}
	ans, st, err := c.store.Backfill(ctx, job.Name, args)
	if err != nil {
		return nil, err
	}
	if ans == string(store.BackfillBusy) {
		return st, fmt.Errorf("%w (%q: %d of %d instants decided; cancel it first)", ErrBackfillBusy, job.Name, st.Decided, st.Total)
	}
	return st, nil
}

// CancelBackfill stops the job's backfill: runs it started go on to their
// end, the instants not decided yet are dropped. It returns the state; an
// error wrapping ErrNoBackfill when none is going on.
func (c *Control) CancelBackfill(ctx context.Context, job string) (*Backfill, error) {
	if err := checkJob(job); err != nil {
		return nil, err
	}
	ans, st, err := c.store.Backfill(ctx, job, []any{"cancel"})
	if err != nil {
		return nil, err
	}
	if ans == string(store.BackfillNone) {
		return st, fmt.Errorf("%w (%q)", ErrNoBackfill, job)
	}
	return st, nil
}

// BackfillStatus returns the job's backfill, going on or finished within
// the last day, or nil if it has none.
func (c *Control) BackfillStatus(ctx context.Context, job string) (*Backfill, error) {
	if err := checkJob(job); err != nil {
		return nil, err
	}
	_, st, err := c.store.Backfill(ctx, job, []any{"read"})
	return st, err
}

// backfills is the backfill beat: every sync interval, the replica takes
// instants of the backfills of the jobs in its table.
//
// The beat's phase is drawn anew each time, in [interval/2, 3·interval/2):
// a backfill instant waits for a free slot of its job, and a job whose own
// runs hold that slot at the same point of every second (a job every second
// with runs of a few hundred ms) would otherwise meet a beat in step with
// them forever.
func (s *Scheduler) backfills(ctx context.Context) {
	d := s.cfg.syncInterval
	for sleep(ctx, d/2+s.cfg.jitter("backfill beat", d)) {
		s.backfillBeat(ctx)
	}
}

// backfillBeat is one beat of backfills.
func (s *Scheduler) backfillBeat(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, max(s.cfg.syncInterval, time.Second))
	defer cancel()
	jobs, err := s.store.BackfillJobs(cctx)
	if err != nil {
		s.log.Warn("backfills not read; trying again at the next beat", "err", err)
		return
	}
	if len(jobs) == 0 {
		return
	}
	tab, _ := s.table()
	byName := make(map[string]*jobState, len(tab))
	for _, j := range tab {
		byName[j.Name] = j
	}
	var claims []claimReq
	for _, hint := range jobs {
		name := hint.Job
		j := byName[name]
		if j == nil {
			continue
		}
		_, st, err := s.store.Backfill(cctx, name, []any{"read"})
		if err != nil {
			s.log.Warn("backfill not read; trying again at the next beat", "job", name, "err", err)
			return
		}
		if st == nil || st.Done() {
			if st != nil && st.Done() {
				s.log.Info("backfill finished", "job", name, "total", st.Total, "started", st.Started,
					"skipped", st.Skipped, "already", st.Already, "dropped", st.Dropped())
			}
			_ = s.store.BackfillForget(cctx, hint)
			continue
		}
		j.memo.mu.Lock()
		paused := j.memo.paused
		j.memo.mu.Unlock()
		if st.Cancelled || paused || j.Paused {
			s.log.Debug("backfill waits", "job", name, "cancelled", st.Cancelled, "paused", paused, "paused_in_table", j.Paused)
			continue
		}
		if why := s.backfillPlanDiffers(j, st); why != "" {
			s.abortBackfill(cctx, j, st, why)
			continue
		}
		free := st.Parallel - st.InFlight
		if free <= 0 {
			continue
		}
		// Instants taken back first: the store takes no new one before.
		stCursor, redo, _ := store.BackfillProgress(st)
		for _, t := range redo {
			c := s.newClaim(j, t, store.RunBackfill)
			c.Base, c.Backfill = stCursor, st.ID
			claims = append(claims, c)
		}
		cursor := stCursor
		for k := 0; k < free+backfillChain; k++ {
			t := j.sched.Next(cursor)
			if t.IsZero() || t.After(st.To) {
				break
			}
			c := s.newClaim(j, t, store.RunBackfill)
			c.Base, c.Backfill = cursor, st.ID
			claims = append(claims, c)
			cursor = t
		}
	}
	if len(claims) > 0 {
		s.claim(ctx, claims)
	}
}

// backfillPlanDiffers tells whether j's schedule, as this replica's table
// has it, gives other instants in st's range than the table st was asked
// with (its total and last instant): the schedule, time zone or offset
// changed since. The answer is kept per backfill and job state (a reload
// makes a new one): the instants are listed once, not every beat.
func (s *Scheduler) backfillPlanDiffers(j *jobState, st *Backfill) string {
	_, _, last := store.BackfillProgress(st)
	if last.IsZero() || st.Cancelled {
		return ""
	}
	j.bfPlan.mu.Lock()
	defer j.bfPlan.mu.Unlock()
	if j.bfPlan.id == st.ID {
		return j.bfPlan.why
	}
	why := ""
	ts, err := BackfillInstants(j.Job, st.From, st.To)
	switch {
	case err != nil:
		why = err.Error()
	case len(ts) != st.Total || !ts[len(ts)-1].Equal(last):
		why = fmt.Sprintf("the job's schedule changed since the backfill was asked for: %q (time zone %q, offset %s) gives %d instants in the range, the last at %s; the backfill was asked for %d, the last at %s",
			j.Schedule, j.Timezone, j.Offset, len(ts), ts[len(ts)-1].UTC().Format(time.RFC3339), st.Total, last.UTC().Format(time.RFC3339))
	}
	j.bfPlan.id, j.bfPlan.why = st.ID, why
	return why
}

// abortBackfill stops st, which this replica cannot carry out (why), so
// that it ends with a clear error instead of waiting for instants no
// replica takes.
func (s *Scheduler) abortBackfill(ctx context.Context, j *jobState, st *Backfill, why string) {
	why = "stopped by replica " + s.cfg.replicaID + ": " + why + "; start a backfill again for the job's schedule as it is now"
	ans, _, err := s.store.Backfill(ctx, j.Name, []any{"abort", st.ID, why})
	if err != nil {
		return // the next beat tries again
	}
	if ans == string(store.BackfillCancelled) {
		s.log.Warn("backfill stopped", "job", j.Name, "backfill", st.ID, "reason", why)
	}
}

// backfillRefused logs a backfill claim's refusal: mostly another replica
// took the instant first, or the parallel limit is reached.
func backfillRefused(log *slog.Logger, reason string) {
	log.Debug("backfill instant not taken", "reason", reason)
}
