package scheduler

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// waiters are the runs this replica has queued for a slot, per job state:
// one loop per job polls all of them in one call (admit.lua) every poll
// interval, not one call per run — a job with a hundred runs waiting costs
// Redis what a job with one does.
type waiters struct {
	mu   sync.Mutex
	jobs map[*jobState]*jobWaiters
}

// jobWaiters are one job's queued runs on this replica.
type jobWaiters struct {
	runs []*waiter
}

// waiter is one queued run.
type waiter struct {
	r       claimReq
	claimed time.Time
	// unanswered is when the first poll whose answer did not come was
	// sent, since the last answer: it may have admitted the run, and the
	// lease then counts from it.
	unanswered time.Time
	// uncertain: a poll since the last answer may have reached Redis
	// (its answer, not its request, was lost), so it may have admitted the
	// run.
	uncertain bool
	// place is its place in the queue as the last answer said (1: next),
	// 0 before its first poll.
	place int64
}

// wait queues a run for a slot (overlap: wait, manual, catch-up): it is
// polled with the job's other queued runs until it is admitted, its wait is
// over, or the replica shuts down. The first queued run of a job runs the
// job's poll loop in the calling goroutine.
func (s *Scheduler) wait(ctx context.Context, r claimReq, claimed time.Time) {
	w := &waiter{r: r, claimed: claimed}
	s.waiters.mu.Lock()
	if s.waiters.jobs == nil {
		s.waiters.jobs = map[*jobState]*jobWaiters{}
	}
	if g := s.waiters.jobs[r.j]; g != nil {
		g.runs = append(g.runs, w)
		s.waiters.mu.Unlock()
		return
	}
	g := &jobWaiters{runs: []*waiter{w}}
	s.waiters.jobs[r.j] = g
	s.waiters.mu.Unlock()
	s.pollQueued(ctx, r.j, g)
}

// pollQueued is job j's poll loop; it ends when no run of g waits any more.
func (s *Scheduler) pollQueued(ctx context.Context, j *jobState, g *jobWaiters) {
	t := time.NewTicker(s.cfg.pollInterval)
	defer t.Stop()
	var lastFull time.Time
	for {
		select {
		case <-ctx.Done():
			s.waiters.mu.Lock()
			runs := g.runs
			g.runs = nil
			delete(s.waiters.jobs, j)
			s.waiters.mu.Unlock()
			for _, w := range runs {
				s.stopWaiting(ctx, w)
			}
			return
		case <-t.C:
		}
		// Admitted by the limits in force now (concurrency, pool and its
		// size, lease), not by those of the table they were queued under:
		// a reload that raised them admits them at once.
		cur := s.current(j)
		full := time.Since(lastFull) >= s.cfg.waiterTTL/3
		if full {
			lastFull = time.Now()
		}
		s.waiters.mu.Lock()
		runs := pollNow(g.runs, full, max(cur.Concurrency, 1))
		for _, w := range runs {
			w.r.setJob(cur)
		}
		s.waiters.mu.Unlock()
		reqs := make([]*store.StoreClaim, len(runs))
		for i, w := range runs {
			reqs[i] = &w.r.StoreClaim
		}
		_, floor := cur.memo.snapshot()
		start := time.Now()
		// As a claim's, an admission's round trip finishes whatever
		// happens to ctx: its answer may be a start.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
		res, err := s.store.Admit(actx, reqs, s.cfg.waiterTTL, floor)
		cancel()
		done := map[*waiter]bool{}
		for i, w := range runs {
			if err != nil {
				// The queue place outlives a short outage (waiter TTL).
				if w.unanswered.IsZero() {
					w.unanswered = start
				}
				if !store.SentNothing(err) {
					w.uncertain = true
				}
				continue
			}
			if s.admitted(ctx, w, res[i], start) {
				done[w] = true
			}
		}
		s.waiters.mu.Lock()
		g.runs = slices.DeleteFunc(g.runs, func(w *waiter) bool { return done[w] })
		if len(g.runs) == 0 {
			delete(s.waiters.jobs, j)
			s.waiters.mu.Unlock()
			return
		}
		s.waiters.mu.Unlock()
	}
}

// pollNow returns the queued runs a poll asks about. Every one, a full poll,
// a few times a waiter TTL: that keeps their places and notices a wait
// over. In between only those that may be admitted now: the first by
// place, as many as the job may run at once (limit), and the runs not
// polled yet or whose last poll went unanswered (it may have admitted
// them, and their lease counts from it). A long queue then costs Redis in
// proportion to the runs that can start, not to every run in it ten times
// a second (a catch-up of 1,000 instants of 40 jobs kept Redis busy with
// polls alone). The places the others keep from their last poll are at
// least their real ones (the runs ahead of them only leave), so the first
// by place are the first in the queue.
func pollNow(runs []*waiter, full bool, limit int) []*waiter {
	if full || len(runs) <= limit {
		return slices.Clone(runs)
	}
	head := slices.Clone(runs)
	slices.SortStableFunc(head, func(a, b *waiter) int { return cmp.Compare(a.place, b.place) })
	out := make([]*waiter, 0, 2*limit)
	for _, w := range head {
		switch {
		case w.place == 0 || !w.unanswered.IsZero():
			out = append(out, w)
		case limit > 0:
			out = append(out, w)
			limit--
		}
	}
	return out
}

// stopWaiting gives up a queued run as the replica shuts down: a manual
// run goes back to the pending requests, any other is recorded missed.
func (s *Scheduler) stopWaiting(ctx context.Context, w *waiter) {
	r := w.r
	if r.Kind == store.RunManual {
		s.handBackManual(ctx, r, w.uncertain)
		return
	}
	s.closeRun(r, Missed, nil, 0, "its replica shut down while it waited for a slot", "", "", s.log)
	s.tel.decided(context.WithoutCancel(ctx), r.j, Missed)
}

// admitted handles one run's answer to a poll sent at start; it reports
// whether the run left the queue.
func (s *Scheduler) admitted(ctx context.Context, w *waiter, a store.AdmitRes, start time.Time) bool {
	r := w.r
	sent := start
	if !w.unanswered.IsZero() {
		sent = w.unanswered
	}
	w.unanswered, w.uncertain = time.Time{}, false
	if a.Status == store.AnswerStarted && r.Kind == store.RunManual && ctx.Err() != nil {
		s.handBackManual(ctx, r, true)
		return true
	}
	waited := time.Since(w.claimed).Round(time.Millisecond)
	switch a.Status {
	case store.AnswerWaiting:
		w.place = a.N
		return false
	case store.AnswerStarted:
		s.manual.Delete(r.ID)
		s.tel.decided(ctx, r.j, Started)
		// The lease was granted by this admission (or by an earlier
		// poll whose answer was lost), not by the claim that queued the
		// run (long ago, perhaps longer than a lease): it counts from
		// that poll's send time. An answer past the lease is handled as
		// a late claim's (execute).
		r.Sent = sent
		s.start(r, a.N, start, time.Now())
	case store.AnswerSkippedOverlap:
		s.manual.Delete(r.ID)
		s.tel.decided(ctx, r.j, SkippedOverlap)
		s.statsChanged(r.j.Name)
		s.log.Info("run decided", "job", r.j.Name, "run_id", r.ID, "outcome", SkippedOverlap, "waited", waited)
	case store.AnswerSkippedPaused:
		s.tel.decided(ctx, r.j, SkippedPaused)
		s.statsChanged(r.j.Name)
		s.log.Info("run decided", "job", r.j.Name, "run_id", r.ID, "outcome", SkippedPaused, "waited", waited)
	case store.AnswerMissed:
		// An earlier poll admitted it, but its answer came after the
		// client's deadline and the lease ran out before this one:
		// recorded missed, never started.
		s.manual.Delete(r.ID)
		s.tel.decided(ctx, r.j, Missed)
		s.log.Warn("run not started: its admission was answered after its lease ran out", "job", r.j.Name, "run_id", r.ID)
	case store.AnswerExpired:
		// Admitted by a poll whose answer was lost, and closed since
		// (its lease ran out): it never started. Back to the pending
		// requests, its close taken back.
		s.log.Warn("manual run not started: its admission was answered after its lease ran out; handing it back", "job", r.j.Name, "run_id", r.ID)
		s.loops.Go(func() { s.handBackLate(ctx, r) })
	default: // answerLost
		s.manual.Delete(r.ID)
		s.log.Warn("queued run no longer held: its place expired (its replica stopped waiting), or Redis lost it with its data", "job", r.j.Name, "run_id", r.ID)
	}
	return true
}

// handBackLate hands back a manual run this replica was granted but did not
// start (the answer came after its lease), retrying while Redis does not
// answer and the request lives: unlike a queue place, a slot whose lease
// runs out is closed lease_lost, and only its holder can take that back.
func (s *Scheduler) handBackLate(ctx context.Context, r claimReq) {
	defer s.manual.Delete(r.ID)
	log := s.log.With("job", r.j.Name, "run_id", r.ID)
	ok, err := s.handBack(ctx, r, s.now, r.Sched.Add(s.cfg.manualTTL), time.Second)
	switch {
	case err != nil:
		log.Warn("manual run not handed back: the store did not answer", "err", err)
	case ok:
		log.Info("manual run handed back to the cluster; a replica will run it")
	default:
		log.Warn("manual run not handed back: no longer this replica's")
	}
}

// handBackManual gives a manual run this replica claimed but will not start
// (it is shutting down) back to the cluster's pending requests: someone asked
// for it, and another replica runs it. When the run may hold a slot (held:
// it was granted, or a claim or admission whose answer was lost may have
// granted it) it asks again while Redis does not answer, for the shutdown
// grace period: nobody else can give that back — its lease would run out and
// the cluster record lease_lost a run that never started. A run only queued
// is asked for once: if Redis does not answer, its queue place expires within
// the waiter TTL and the store hands it back then.
func (s *Scheduler) handBackManual(ctx context.Context, r claimReq, held bool) {
	defer s.manual.Delete(r.ID)
	log := s.log.With("job", r.j.Name, "run_id", r.ID)
	until := time.Now()
	if held {
		until = s.stoppingUntil()
	}
	ok, err := s.handBack(ctx, r, time.Now, until, 100*time.Millisecond)
	switch {
	case err != nil:
		log.Warn("replica stopping: could not hand the manual run back; the store does once its queue place expires", "err", err)
	case ok:
		log.Info("replica stopping: manual run handed back to the cluster; another replica will run it")
	}
}

// handBack asks the store to take manual run r back, again while it does not
// answer and until passes (on clock now), pausing from pause up to a second
// between tries.
// It reports whether the run was handed back (false: it is no longer this
// replica's), or the last error.
func (s *Scheduler) handBack(ctx context.Context, r claimReq, now func() time.Time, until time.Time, pause time.Duration) (bool, error) {
	ctx = context.WithoutCancel(ctx)
	for {
		hctx, cancel := context.WithTimeout(ctx, s.cfg.closeTimeout)
		ok, err := s.store.HandBack(hctx, &r.StoreClaim, s.cfg.waiterTTL)
		cancel()
		if err == nil || !now().Add(pause).Before(until) || !sleep(ctx, pause) {
			return ok, err
		}
		pause = min(2*pause, time.Second)
	}
}

// current is job j as the table in force has it now, or j itself if the
// table no longer has the job.
func (s *Scheduler) current(j *jobState) *jobState {
	tab, _ := s.table()
	for _, t := range tab {
		if t.Name == j.Name {
			return t
		}
	}
	return j
}
