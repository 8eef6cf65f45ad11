package scheduler

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// claimReq is one run the engine claims: the store's request, and the job
// state it was made under (a queued run's is the table's in force: see
// pollQueued). The request's job settings and terms follow the job state:
// set it with setJob.
type claimReq struct {
	store.StoreClaim
	j *jobState
	// uncertain: a call of this claim may have reached Redis and lost its
	// answer, so it may have granted the run to this replica; only this
	// owner token can then say the run never started (recordMisses' last
	// rounds, while stopping).
	uncertain bool
}

// newClaimReq makes the claim of run c of job j.
func newClaimReq(j *jobState, c store.StoreClaim) claimReq {
	r := claimReq{StoreClaim: c}
	r.setJob(j)
	return r
}

// setJob makes j the run's job state, and gives the store's request the
// job's settings and the terms they make for this run: the record's
// retention and whether the instant is in a blackout window.
func (r *claimReq) setJob(j *jobState) {
	r.j, r.Job = j, j.spec
	r.Retention = j.retention(r.Sched)
	r.Blackout = false
	if r.Kind != store.RunManual && len(j.blackouts) > 0 {
		_, r.Blackout = j.blackouts.at(r.Sched)
	}
}

// storeClaims is the store's requests of reqs.
func storeClaims(reqs ...claimReq) []store.StoreClaim {
	out := make([]store.StoreClaim, len(reqs))
	for i := range reqs {
		out[i] = reqs[i].StoreClaim
	}
	return out
}

func (s *Scheduler) newClaim(j *jobState, sched time.Time, kind store.RunKind) claimReq {
	return s.claimFor(j, runID(j.Name, sched), sched, j.fire(sched), kind)
}

// claimFor builds the claim of one run. Scheduled runs follow the job's
// overlap policy. Manual and catch-up runs were asked for — by a person, or
// by the catch-up policy — so when every slot is busy they queue for one,
// first come first served, within their own window (the manual request's
// lifetime, the catch-up window) instead of being skipped.
func (s *Scheduler) claimFor(j *jobState, id string, sched, fire time.Time, kind store.RunKind) claimReq {
	r := store.StoreClaim{ID: id, Suffix: id[len(j.Name)+1:], Kind: kind, Sched: sched, Fire: fire,
		Owner: s.owners.next(), Overlap: j.Overlap, MaxWait: j.MaxWait}
	switch kind {
	case store.RunManual:
		r.Overlap, r.MaxWait = OverlapWait, s.cfg.manualTTL
	case store.RunCatchup:
		r.Overlap, r.MaxWait = OverlapWait, j.CatchupWindow
	}
	return newClaimReq(j, r)
}

// owners hands out owner tokens: a random prefix drawn once per process
// (128 bits) and a counter. A token only has to be unique — it tells this
// claim's record from every other claim's — and drawing 128 random bits
// for each of ten thousand runs a second cost more than the claim itself.
type owners struct {
	prefix string // drawn in New
	n      atomic.Uint64
}

func (o *owners) next() string {
	var buf [64]byte
	b := append(append(buf[:0], o.prefix...), '-')
	return string(strconv.AppendUint(b, o.n.Add(1), 36))
}

// claimTimeout bounds one claim round trip.
const claimTimeout = 5 * time.Second

// claim decides a batch of runs, retrying while Redis cannot be reached and
// the runs' starting deadlines have not passed. Runs whose deadline passes
// first are recorded missed once Redis answers again. A run is never started
// without a claim.
func (s *Scheduler) claim(ctx context.Context, reqs []claimReq) {
	s.claimFirst(ctx, reqs, nil)
}

// claimFirst is claim, closing answered (if not nil) once the first round
// trip is over, answered or failed: the dispatcher sends its next batch
// then. Retries go on on their own.
func (s *Scheduler) claimFirst(ctx context.Context, reqs []claimReq, answered chan struct{}) {
	if answered != nil {
		defer func() {
			if answered != nil {
				close(answered)
			}
		}()
	}
	backoff := 50 * time.Millisecond
	// While stopping, scheduled claims whose answer was lost are asked again
	// with the same owner tokens until one is answered or the shutdown
	// grace ends: the script may have granted a run to this replica, which
	// nobody would then start, and the cluster would close lease_lost. The
	// answer is handled as any other while stopping. A claim that never
	// reached Redis (no request uncertain: no connection could be made) granted
	// nothing, and a replica stopping during an outage stops at once.
	var pause time.Duration
	askAgain := func() bool {
		if !slices.ContainsFunc(reqs, func(r claimReq) bool { return r.uncertain }) || !scheduledClaims(reqs) || !time.Now().Add(pause).Before(s.stoppingUntil()) {
			return false
		}
		ok := sleep(context.WithoutCancel(ctx), pause)
		pause = min(max(2*pause, 100*time.Millisecond), time.Second)
		return ok
	}
	for len(reqs) > 0 {
		start := time.Now()
		for i := range reqs {
			reqs[i].Known, reqs[i].FenceFloor = reqs[i].j.memo.snapshot()
			if reqs[i].Sent.IsZero() {
				reqs[i].Sent = start
			}
		}
		// The round trip finishes whatever happens to ctx: once the script
		// ran, its answer is the only record of what it decided. A shutdown
		// that dropped it would leave a run started by nobody (sitting
		// running until its lease ran out) and a manual request removed.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
		res, err := s.store.Claim(cctx, s.cfg.replicaID, s.cfg.skew, s.cfg.waiterTTL, storeClaims(reqs...))
		cancel()
		end := time.Now()
		if answered != nil {
			close(answered)
			answered = nil
		}
		if err == nil && len(reqs) >= store.MaxBatch {
			s.batchTook(end.Sub(start))
		}
		s.tel.claimDuration.Record(ctx, end.Sub(start).Seconds())
		var again []claimReq
		if err != nil {
			if !store.SentNothing(err) {
				for i := range reqs {
					reqs[i].uncertain = true
				}
			}
			if ctx.Err() != nil && askAgain() {
				continue // shutting down, the answer lost: see askAgain
			}
			if ctx.Err() != nil {
				// Shutting down: other replicas may still claim the
				// scheduled runs; a manual run the script may have taken
				// goes back to the pending requests.
				for _, r := range reqs {
					if r.Kind == store.RunManual {
						s.handBackManual(ctx, r, r.uncertain)
					}
				}
				return
			}
			s.storeFailed(err)
			for _, r := range reqs {
				s.tel.claimed(ctx, r.j, claimError)
			}
			again = reqs
		} else {
			s.storeAnswered()
			later := claimsAgain{}
			for i, r := range res {
				if r.Status == store.AnswerRetry {
					s.retryLater(ctx, reqs[i], r)
					again = append(again, reqs[i])
					continue
				}
				s.handle(ctx, reqs[i], r, start, end, later)
			}
			later.send(s, ctx)
		}
		reqs = s.keepTrying(again)
		if len(reqs) == 0 {
			return
		}
		// Random within [backoff/2, 3·backoff/2): replicas whose Redlock
		// claims split the masters' votes must not meet again in step.
		if !sleep(ctx, backoff/2+s.cfg.jitter("claim "+reqs[0].ID, backoff)) {
			if askAgain() {
				continue // as above: an earlier try may have granted one
			}
			for _, r := range reqs {
				if r.Kind == store.RunManual {
					s.handBackManual(ctx, r, r.uncertain) // an earlier try may have taken it
				}
			}
			return
		}
		backoff = min(2*backoff, time.Second)
	}
}

// scheduledClaims reports whether reqs hold a scheduled or catch-up claim.
func scheduledClaims(reqs []claimReq) bool {
	for _, r := range reqs {
		if r.Kind == store.RunScheduled || r.Kind == store.RunCatchup {
			return true
		}
	}
	return false
}

// retryLater notes a claim that was taken back: nothing started.
func (s *Scheduler) retryLater(ctx context.Context, r claimReq, res store.ClaimRes) {
	// Its token is not taken as seen: a failover may lose the claim it
	// came with (that is why it was taken back), and the store would then
	// look as if it lost writes.
	r.j.memo.observe(res.Epoch, 0)
	s.tel.claimed(ctx, r.j, claimUndone)
	s.log.Warn("run claimed, then taken back: not started; retrying until its starting deadline",
		"job", r.j.Name, "run_id", r.ID, "reason", res.Reason)
}

// keepTrying returns the claims worth another try: those whose starting
// deadline has not passed, and manual ones within their request's lifetime.
// Those whose deadline has passed are recorded missed once the store
// answers.
func (s *Scheduler) keepTrying(reqs []claimReq) []claimReq {
	var keep []claimReq
	for _, r := range reqs {
		switch {
		case r.Kind == store.RunManual && s.now().Before(r.Sched.Add(s.cfg.manualTTL)):
			// Retried with the same owner token, as scheduled claims are:
			// a call whose answer was lost may have taken the request, and
			// only this token finds it again.
			keep = append(keep, r)
		case r.Kind == store.RunManual:
			s.manual.Delete(r.ID)
		case r.Kind == store.RunBackfill && time.Since(r.Sent) < 2*claimTimeout:
			// Asked again with its owner token: a call whose answer was
			// lost may have started it.
			keep = append(keep, r)
		case r.Kind == store.RunBackfill:
			// The next beat takes the instant again from the cursor.
		case r.Kind == store.RunMiss || r.Kind == store.RunOutage:
			s.queueMiss(r)
		case s.now().After(r.Fire.Add(r.j.StartingDeadline)):
			s.queueMiss(r)
		default:
			keep = append(keep, r)
		}
	}
	return keep
}

func (s *Scheduler) handle(ctx context.Context, r claimReq, res store.ClaimRes, start, end time.Time, later claimsAgain) {
	j := r.j
	j.memo.touch(end)
	if res.Status == store.AnswerStarted {
		r.Pool, r.PoolMember = res.Pool, res.PoolMember
	}
	if lost := j.memo.observe(res.Epoch, res.Fence); lost != "" {
		s.log.Warn("Redis lost this job's state (a restart without persistence, a flush, or a failover to a copy that missed writes); runs scheduled before now+max_clock_skew+claim ahead, and manual runs requested before now, are recorded missed",
			"job", j.Name, "old_epoch", lost, "new_epoch", res.Epoch)
		s.lostState.Store(true)
	}
	if r.Kind == store.RunManual && res.Status != store.AnswerWaiting {
		s.manual.Delete(r.ID)
	}
	// Two of three claims are lost races, answered "decided": the logger
	// with the run's attributes is made only for the answers that log.
	var runLog *slog.Logger
	log := func() *slog.Logger {
		if runLog == nil {
			runLog = s.log.With("job", j.Name, "run_id", r.ID)
		}
		return runLog
	}
	if ctx.Err() != nil && r.Kind == store.RunManual && (res.Status == store.AnswerStarted || res.Status == store.AnswerWaiting) {
		// Won while this replica shuts down: someone asked for it, and a
		// replica that stays up runs it.
		j.memo.observe(res.Epoch, res.Fence)
		s.handBackManual(ctx, r, res.Status == store.AnswerStarted)
		return
	}
	switch res.Status {
	case store.AnswerStarted:
		s.claimStarted(ctx, r, res, start, end, log)
	case store.AnswerDecided:
		s.tel.claimed(ctx, j, claimTaken)
		if s.log.Enabled(ctx, slog.LevelDebug) {
			log().Debug("run already decided", "outcome", res.Outcome, "by", res.Replica)
		}
	case store.AnswerWaiting:
		s.tel.claimed(ctx, j, claimWaiting)
		log().Info("all concurrency slots busy: waiting for one", "place", res.Place)
		queued := r // copied here: a closure over r would move every answer's claim to the heap
		s.loops.Go(func() { s.wait(ctx, queued, start) })
	case store.AnswerEarly:
		s.claimEarly(ctx, r, res, later, log)
	case store.AnswerLater:
		s.tel.claimed(ctx, j, claimLater)
		// Claimed ahead, but not startable before its instant (paused, or
		// every slot busy): decide at the instant, on Redis' clock.
		later.add(r, r.Fire.Sub(res.Server)+time.Millisecond)
	case store.AnswerRefused:
		s.claimRefused(ctx, r, res, log)
	case store.AnswerRetry:
		s.retryLater(ctx, r, res)
		if r.Kind == store.RunMiss || r.Kind == store.RunOutage {
			s.queueMiss(r)
		} else if r.Kind != store.RunManual {
			again := []claimReq{r}
			s.loops.Go(func() { s.claim(ctx, again) })
		}
	case store.AnswerExpired:
		// A manual run an earlier try of this claim started, its answer
		// lost, closed lease_lost since: it never started. Back to the
		// pending requests.
		log().Warn("manual run not started: its claim was answered after its lease ran out; handing it back")
		s.loops.Go(func() { s.handBackLate(ctx, r) })
	case store.AnswerSkippedOverlap, store.AnswerSkippedPaused, store.AnswerSkippedBlackout, store.AnswerMissed:
		s.tel.claimed(ctx, j, claimDecided)
		s.tel.decided(ctx, j, Outcome(res.Status))
		s.statsChanged(j.Name)
		log().Info("run decided", "outcome", res.Status)
	default:
		log().Error("unexpected claim answer", "status", res.Status)
	}
}

// claimStarted starts a run this replica won: at its instant on Redis'
// clock when it was claimed ahead, at once otherwise.
func (s *Scheduler) claimStarted(ctx context.Context, r claimReq, res store.ClaimRes, start, end time.Time, log func() *slog.Logger) {
	j := r.j
	if res.Fence <= 0 {
		// Never start without a fencing token: it would be no token at all.
		log().Error("claim answered started without a fencing token; not starting the run")
		return
	}
	s.tel.claimed(ctx, j, claimWon)
	s.tel.decided(ctx, j, Started)
	// Claimed ahead, the job starts at its instant as Redis' clock has
	// it (not this replica's, which may lag by up to the max skew while
	// the run holds its slot).
	startAt := end
	if !res.Server.IsZero() {
		// Redis read its clock (res.server) somewhere between this
		// attempt's send and its answer: a batch of a thousand runs
		// answers only once the script has decided them all. The
		// heartbeat's reading of Redis' clock places the instant
		// within that window; without one, the latest is safe.
		earliest, latest := start.Add(r.Fire.Sub(res.Server)), end.Add(r.Fire.Sub(res.Server))
		startAt = latest
		if at, ok := s.redisClock.localAt(r.Fire); ok {
			switch {
			case at.Before(earliest):
				startAt = earliest
			case at.Before(latest):
				startAt = at
			}
		}
	}
	r.Slot = res.Slot
	s.startAt(r, res.Fence, start, end, startAt)
}

// claimEarly postpones a claim Redis found too early on its clock, or
// drops it when this replica's clock is wrong, not just skewed.
func (s *Scheduler) claimEarly(ctx context.Context, r claimReq, res store.ClaimRes, later claimsAgain, log func() *slog.Logger) {
	j := r.j
	s.tel.claimed(ctx, j, claimEarly)
	// Too early on Redis' clock: this replica's clock runs ahead of it.
	// Ask again when Redis' clock reaches the run's claim time.
	if ahead := r.Fire.Sub(res.Server) - s.cfg.maxAhead; ahead > s.clockTolerance() {
		// Not a skew but a wrong clock (the dispatcher holds off until
		// it agrees with Redis again): replicas whose clocks are right
		// claim the run at its instant.
		log().Warn("run not claimed: this replica's clock runs ahead of Redis' by more than max_clock_skew",
			"ahead_by", ahead.Round(time.Millisecond))
		return
	}
	delay := r.Fire.Add(-s.cfg.maxAhead).Sub(res.Server) + time.Millisecond
	log().Debug("claim postponed: this replica's clock runs ahead of Redis", "retry_in", delay.Round(time.Millisecond))
	later.add(r, delay)
}

// claimRefused reports a run Redis refused to claim (its reason says why).
func (s *Scheduler) claimRefused(ctx context.Context, r claimReq, res store.ClaimRes, log func() *slog.Logger) {
	j := r.j
	s.tel.claimed(ctx, j, claimRefused)
	if r.Kind == store.RunBackfill {
		backfillRefused(log(), res.Reason)
		return
	}
	switch res.Reason {
	case store.ReasonBeforeState:
		// A new job's first instants: not a miss, nothing to report.
		log().Debug("run not claimed", "reason", res.Reason)
		return
	case store.ReasonOtherTable:
		// Runs another table decided, their records gone: expected for a
		// while after a deploy or a reload that keeps records longer.
		log().Info("run not claimed", "reason", res.Reason)
		return
	}
	log().Warn("run not claimed", "reason", res.Reason)
}

// claimsAgain holds the claims one answer postponed (too early on Redis'
// clock, or claimed ahead and not startable yet), by how long: the runs of
// one batch are postponed together, and go out again in one claim, not one
// round trip each.
type claimsAgain map[time.Duration][]claimReq

// add postpones r by delay, rounded up to the millisecond. The attempt that
// answered granted nothing, so r's lease is not counted from it.
func (a claimsAgain) add(r claimReq, delay time.Duration) {
	r.Sent = time.Time{}
	d := delay.Truncate(time.Millisecond)
	if d < delay {
		d += time.Millisecond
	}
	a[d] = append(a[d], r)
}

// send claims each group again after its delay.
func (a claimsAgain) send(s *Scheduler, ctx context.Context) {
	for d, reqs := range a {
		s.loops.Go(func() {
			if sleep(ctx, d) {
				s.claim(ctx, reqs)
			}
		})
	}
}
