package scheduler

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// maxCatchup bounds the runs one catch-up makes up for.
const maxCatchup = 1000

// catchupInstants lists the instants of j that every replica missed: after
// the last decided one, inside the catch-up window, and already past their
// own starting deadline (the dispatcher owns the others). A job that has
// never run has nothing to catch up.
func catchupInstants(j *jobState, last, now time.Time) []time.Time {
	if last.IsZero() {
		return nil
	}
	from := now.Add(-j.CatchupWindow)
	if last.After(from) {
		from = last
	}
	limit := maxCatchup
	if j.Catchup == CatchupLatest {
		limit = 1
	}
	// Only the latest limit instants are kept: the walk begins where they
	// do, not at the last decided instant. A job every second whose state
	// was a month old (a cluster down that long, catchup_window 720h)
	// walked 2.6 million instants at the first heartbeat, which every
	// replica makes before it claims anything: ~1 s of CPU per job, every
	// job of the table held up, and catch-up claims sent so late after
	// the gap was read that Redis refused them (and the outage's records).
	if due := now.Add(-(j.StartingDeadline + j.Jitter + time.Nanosecond)); due.Before(now) {
		from = lookBack(j, from, due, limit)
	}
	var out []time.Time
	for t := j.sched.Next(from); !t.IsZero() && j.fire(t).Add(j.StartingDeadline).Before(now); t = j.sched.Next(t) {
		if len(out) == 2*limit {
			// Trimmed in one copy every limit instants, not one
			// copy of limit instants at each.
			out = append(out[:0], out[limit:]...)
		}
		out = append(out, t)
	}
	if len(out) > limit {
		out = append(out[:0], out[len(out)-limit:]...)
	}
	return out
}

// outageInstants lists the instants of j due while no replica claimed
// them: after the last decided one, and before until, the instant this
// replica's dispatcher began with (it claims that one and the later ones;
// zero: every instant due by started), at most limit of them (the latest).
// Catch-up runs (runs, the instants it will run) are left out. A job that
// has never run has none: its state is new, and what came before it was
// never its to run.
//
// They were due while every replica was down (or none could reach Redis:
// those replicas would have recorded them missed themselves, and find
// them decided). The replica records them missed with that reason, and
// never runs them: catch-up (catchup_window) is what runs such runs.
func outageInstants(j *jobState, last, until, started time.Time, limit int, runs []time.Time) []time.Time {
	if last.IsZero() || limit <= 0 {
		return nil
	}
	// Most gaps are short (a replica restarted, the last decided instant
	// is seconds old): walked from last within a few times limit instants,
	// they need no period, which costs a cron job up to periodCap instants
	// of its schedule (at a restart of 3 replicas × 3,000 jobs every
	// second, ~11 s of CPU before any job ran).
	if out, ok := outageWalk(j, last, until, started, limit, runs, 4*limit+64); ok {
		return out
	}
	// Only the latest limit instants are kept: the scan starts no earlier
	// than limit periods back (a job put back in the table after weeks
	// away would otherwise walk every instant since).
	from := last
	if p := j.period(started); p > 0 && p < math.MaxInt64/time.Duration(limit+1) {
		if h := started.Add(-time.Duration(limit+1) * p); h.After(from) {
			from = h
		}
	}
	out, _ := outageWalk(j, from, until, started, limit, runs, -1)
	return out
}

// outageWalk is outageInstants' walk from from, of at most budget instants
// (-1: no bound); false when the budget ran out first.
func outageWalk(j *jobState, from, until, started time.Time, limit int, runs []time.Time, budget int) ([]time.Time, bool) {
	var out []time.Time
	for t := j.sched.Next(from); !t.IsZero() && (until.IsZero() && !j.fire(t).After(started) || t.Before(until)); t = j.sched.Next(t) {
		if budget == 0 {
			return nil, false
		}
		budget--
		if slices.ContainsFunc(runs, t.Equal) {
			continue
		}
		if len(out) == limit {
			out = append(out[:0], out[1:]...)
		}
		out = append(out, t)
	}
	return out, true
}

// queueMiss queues r to be recorded missed by recordMisses: a scheduled
// run whose starting deadline passed (RunMiss), or one an outage left
// (RunOutage, which keeps its kind: the record says why).
func (s *Scheduler) queueMiss(r claimReq) {
	if r.Kind != store.RunOutage {
		r.Kind = store.RunMiss
		r.setJob(r.j) // the terms follow the kind
	}
	s.missedMu.Lock()
	s.missed = append(s.missed, r)
	s.missedMu.Unlock()
}

// recordMisses records, once Redis answers again, the runs this replica
// could not claim before their starting deadline — unless another replica
// decided them meanwhile.
func (s *Scheduler) recordMisses(ctx context.Context) {
	// A round's call finishes whatever happens to ctx, as a claim's does: a
	// stop that cut it short (go-redis answers a cancelled call with the
	// context's error, even between two dials that failed) left a failure
	// that may have lost an answer, and the miss was asked about through
	// the whole shutdown grace though nothing had gone out.
	every(ctx, time.Second, func() { s.recordMissed(ctx, context.WithoutCancel(ctx)) })
	// Stopping: a miss whose claim may have been granted to this replica
	// (its answer lost) is asked about until Redis answers or the shutdown
	// grace ends: only this replica's owner token can say that run never
	// started — left alone, its lease runs out and the cluster records
	// lease_lost a run nobody ran. Other misses are left to the replicas
	// that stay up.
	pause := 100 * time.Millisecond
	for {
		s.missedMu.Lock()
		s.missed = slices.DeleteFunc(s.missed, func(r claimReq) bool { return !r.uncertain })
		left := len(s.missed)
		s.missedMu.Unlock()
		if left == 0 || !time.Now().Before(s.stoppingUntil()) {
			return
		}
		dctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), s.stoppingUntil())
		s.recordMissed(ctx, dctx)
		cancel()
		if !sleep(context.WithoutCancel(ctx), pause) {
			return
		}
		pause = min(2*pause, time.Second)
	}
}

// recordMissed is one round of recordMisses; its claim is sent with cctx,
// one that outlives ctx (while stopping, until the shutdown grace ends).
func (s *Scheduler) recordMissed(ctx, cctx context.Context) {
	s.missedMu.Lock()
	reqs := s.missed
	s.missed = nil
	s.missedMu.Unlock()
	if len(reqs) == 0 {
		return
	}
	sent := time.Now()
	for i := range reqs {
		reqs[i].Known, reqs[i].FenceFloor = reqs[i].j.memo.snapshot()
		if reqs[i].Sent.IsZero() {
			// This call may grant the run (a job that catches up starts
			// a missed run): its answer lost, only this owner token can
			// settle it, for as long as its record lives (seed 70430).
			reqs[i].Sent = sent
		}
	}
	cctx, cancel := context.WithTimeout(cctx, claimTimeout)
	res, err := s.store.Claim(cctx, s.cfg.replicaID, s.cfg.skew, s.cfg.waiterTTL, storeClaims(reqs...))
	cancel()
	if err != nil {
		if !store.SentNothing(err) {
			for i := range reqs {
				reqs[i].uncertain = true
			}
		}
		now := s.now()
		s.missedMu.Lock()
		for _, r := range reqs {
			until := r.Sched.Add(r.j.retention(r.Sched))
			if !r.Sent.IsZero() {
				// A claim of ours may have been granted, its answer
				// lost: its record outlives the retention by the
				// lease, and only our owner token can say the run
				// never started. Asking too late is harmless: Redis
				// refuses a claim too old to decide.
				until = until.Add(r.j.Lease + 2*claimTimeout)
			}
			if r.Kind == store.RunOutage {
				// Redis refuses it once the reading of the gap is older
				// than the record retention (claim.lua).
				until = r.ReadAt.Add(r.j.retention(r.Sched))
			}
			if now.Before(until) {
				s.missed = append(s.missed, r)
			}
		}
		s.missedMu.Unlock()
		return
	}
	later := claimsAgain{}
	for i, r := range res {
		s.handle(ctx, reqs[i], r, time.Now(), time.Now(), later)
	}
	later.send(s, ctx)
}
