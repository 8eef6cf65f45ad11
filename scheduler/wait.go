package scheduler

import (
	"context"
	"time"
)

// wait polls a run queued for a slot (overlap: wait) until it is admitted,
// its max_wait passes, or the replica shuts down.
func (s *Scheduler) wait(ctx context.Context, r claimReq, claimed time.Time) {
	t := time.NewTicker(s.cfg.pollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if r.kind == kindManual {
				s.handBackManual(ctx, r)
				return
			}
			s.closeRun(r, Missed, 0, "its replica shut down while it waited for a slot", "", "", s.log)
			s.tel.decided(context.WithoutCancel(ctx), r.j, Missed)
			return
		case <-t.C:
		}
		// Admitted by the limits in force now (concurrency, pool and its
		// size, lease), not by those of the table it was queued under: a
		// reload that raised them admits it at once.
		r.j = s.current(r.j)
		_, floor := r.j.memo.snapshot()
		start := time.Now()
		// As a claim's, an admission's round trip finishes whatever
		// happens to ctx: its answer may be a start.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
		status, n, err := s.store.admit(actx, &r, s.cfg.waiterTTL, floor)
		cancel()
		if err != nil {
			continue // the queue place outlives a short outage (waiter TTL)
		}
		if status == answerStarted && r.kind == kindManual && ctx.Err() != nil {
			s.handBackManual(ctx, r)
			return
		}
		switch status {
		case answerStarted:
			s.manual.Delete(r.id)
			s.tel.decided(ctx, r.j, Started)
			// The lease was granted by this admission, not by the claim
			// that queued the run (long ago, perhaps longer than a lease):
			// it counts from this call's send time.
			r.sent = time.Time{}
			s.start(r, n, start, time.Now())
			return
		case answerSkippedOverlap:
			s.manual.Delete(r.id)
			s.tel.decided(ctx, r.j, SkippedOverlap)
			s.statsChanged(r.j.Name)
			s.log.Info("run decided", "job", r.j.Name, "run_id", r.id, "outcome", SkippedOverlap, "waited", time.Since(claimed).Round(time.Millisecond))
			return
		case answerSkippedPaused:
			s.tel.decided(ctx, r.j, SkippedPaused)
			s.statsChanged(r.j.Name)
			s.log.Info("run decided", "job", r.j.Name, "run_id", r.id, "outcome", SkippedPaused, "waited", time.Since(claimed).Round(time.Millisecond))
			return
		case answerMissed:
			// An earlier poll admitted it, but its answer came after the
			// client's deadline and the lease ran out before this one:
			// recorded missed, never started.
			s.manual.Delete(r.id)
			s.tel.decided(ctx, r.j, Missed)
			s.log.Warn("run not started: its admission was answered after its lease ran out", "job", r.j.Name, "run_id", r.id)
			return
		case answerLost:
			s.manual.Delete(r.id)
			s.log.Warn("queued run no longer held (its place expired)", "job", r.j.Name, "run_id", r.id)
			return
		}
	}
}

// handBackManual gives a manual run this replica claimed but will not start
// (it is shutting down) back to the cluster's pending requests: someone asked
// for it, and another replica runs it. If Redis cannot be asked, its queue
// place expires within the waiter TTL and the store hands it back then.
func (s *Scheduler) handBackManual(ctx context.Context, r claimReq) {
	defer s.manual.Delete(r.id)
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.closeTimeout)
	defer cancel()
	log := s.log.With("job", r.j.Name, "run_id", r.id)
	ok, err := s.store.handBack(hctx, &r, s.cfg.waiterTTL)
	switch {
	case err != nil:
		log.Warn("replica stopping: could not hand the manual run back; the store does once its queue place expires", "err", err)
	case ok:
		log.Info("replica stopping: manual run handed back to the cluster; another replica will run it")
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
