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
	// unanswered is when the first poll whose answer did not come was
	// sent, since the last answer: it may have admitted the run, and the
	// lease then counts from it.
	var unanswered time.Time
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
		_, floor := r.j.memo.snapshot()
		start := time.Now()
		// As a claim's, an admission's round trip finishes whatever
		// happens to ctx: its answer may be a start.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
		status, n, err := s.store.admit(actx, &r, s.cfg.waiterTTL, floor)
		cancel()
		if err != nil {
			if unanswered.IsZero() {
				unanswered = start
			}
			continue // the queue place outlives a short outage (waiter TTL)
		}
		sent := start
		if !unanswered.IsZero() {
			sent = unanswered
		}
		unanswered = time.Time{}
		if status == answerStarted && r.kind == kindManual && ctx.Err() != nil {
			s.handBackManual(ctx, r)
			return
		}
		switch status {
		case answerStarted:
			s.manual.Delete(r.id)
			s.tel.decided(ctx, r.j, Started)
			// The lease was granted by this admission (or by an earlier
			// poll whose answer was lost), not by the claim that queued
			// the run (long ago, perhaps longer than a lease): it counts
			// from that poll's send time. An answer past the lease is
			// handled as a late claim's (execute).
			r.sent = sent
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
		case answerExpired:
			// Admitted by a poll whose answer was lost, and closed since
			// (its lease ran out): it never started. Back to the pending
			// requests, its close taken back.
			s.log.Warn("manual run not started: its admission was answered after its lease ran out; handing it back", "job", r.j.Name, "run_id", r.id)
			s.handBackLate(ctx, r)
			return
		case answerLost:
			s.manual.Delete(r.id)
			s.log.Warn("queued run no longer held (its place expired)", "job", r.j.Name, "run_id", r.id)
			return
		}
	}
}

// handBackLate hands back a manual run this replica was granted but did not
// start (the answer came after its lease), retrying while Redis does not
// answer and the request lives: unlike a queue place, a slot whose lease
// runs out is closed lease_lost, and only its holder can take that back.
func (s *Scheduler) handBackLate(ctx context.Context, r claimReq) {
	defer s.manual.Delete(r.id)
	log := s.log.With("job", r.j.Name, "run_id", r.id)
	until := r.sched.Add(s.cfg.manualTTL)
	for {
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.closeTimeout)
		ok, err := s.store.handBack(hctx, &r, s.cfg.waiterTTL)
		cancel()
		switch {
		case err == nil && ok:
			log.Info("manual run handed back to the cluster; a replica will run it")
			return
		case err == nil:
			log.Warn("manual run not handed back: no longer this replica's")
			return
		case !s.now().Before(until) || !sleep(context.WithoutCancel(ctx), time.Second):
			log.Warn("manual run not handed back: the store did not answer", "err", err)
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
