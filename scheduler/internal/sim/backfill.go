package sim

import (
	"context"
	"fmt"
	"github.com/solocron/solocron/scheduler"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// Backfill in the seeded search: for half the seeds, once the faults are
// over (so that every instant of the range still has its record: a
// backfill judges an instant by its record, README), the operator asks for
// a backfill of the last 7 to 12 seconds of catch's or jit's schedule (at
// least one interval: seed 1264 asked for 3 s of an "@every 4s" job, which
// the backfill rightly refused) — instants the
// faults left missed or undecided among them. SOLOCRON_SIM_BACKFILL=0 asks
// for none.
//
//	backfill-runs-undecided  a backfill starts no instant that had started before
//	backfill-decides-all     every backfill ends, every instant decided, by the end

const (
	invBackfillUndecided = "backfill-runs-undecided"
	invBackfillAll       = "backfill-decides-all"
)

// simBackfill is one backfill the plan asks for, at simFaultsUntil+at.
type simBackfill struct {
	at       time.Duration
	job      string
	span     time.Duration // the range: the span before the request, to 1 s before it
	parallel int
}

// drawBackfill draws the plan's backfill, from a generator of its own.
func (p *simPlan) drawBackfill() {
	if os.Getenv("SOLOCRON_SIM_BACKFILL") == "0" {
		return
	}
	rng := rand.New(rand.NewPCG(p.seed, 0xbacf111))
	if rng.IntN(2) == 0 {
		return
	}
	// Jobs with time to spare between their runs: a backfill's instants
	// wait for a free slot, so one of a job whose slot is always busy
	// (tick every second, slow, pair, the pooled ones) may not end within
	// the calm period (seed 12: tick, 6 of 11 instants in 40 s).
	var names []string
	for _, j := range p.table(p.final) {
		if j.Name == "catch" || j.Name == "jit" {
			names = append(names, j.Name)
		}
	}
	if len(names) == 0 {
		return
	}
	p.backfill = &simBackfill{at: time.Duration(2000+rng.IntN(6000)) * time.Millisecond, job: names[rng.IntN(len(names))],
		span: time.Duration(8+rng.IntN(6)) * time.Second, parallel: 1 + rng.IntN(3)}
}

func (b *simBackfill) String() string {
	return fmt.Sprintf("backfill of %s at t=%s: the %s before, parallel %d", b.job, simFaultsUntil+b.at, b.span, b.parallel)
}

// requestBackfill asks for the plan's backfill (on the sequencer).
func (w *simWorld) requestBackfill() {
	b := w.plan.backfill
	var job scheduler.Job
	for _, j := range w.plan.table(w.plan.final) {
		if j.Name == b.job {
			job = j.Job
		}
	}
	now := time.Now()
	st, err := w.ctl.Backfill(context.Background(), job, now.Add(-b.span), now.Add(-time.Second), b.parallel)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.obs.backfillAt = now
	if err != nil {
		w.obs.backfillErr = err
		w.obs.life = append(w.obs.life, fmt.Sprintf("t=%-8s backfill of %s refused: %v", w.rel(now), b.job, err))
		return
	}
	w.obs.life = append(w.obs.life, fmt.Sprintf("t=%-8s backfill of %s: %d instants", w.rel(now), b.job, st.Total))
}

// readBackfill reads the backfill's state at the end.
func (w *simWorld) readBackfill() {
	if w.plan.backfill == nil || w.obs.backfillErr != nil {
		return // none asked for, or refused: checkBackfill says so
	}
	st, err := w.ctl.BackfillStatus(context.Background(), w.plan.backfill.job)
	js, jerr := w.ctl.Status(context.Background(), w.plan.backfill.job, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.obs.backfillEnd, w.obs.backfillErr = st, err
	w.obs.backfillPaused = jerr == nil && js.Paused
}

// pausedAtEnd reports whether the backfill's job was paused in the store
// at the end for a reason the plan explains: the operator's last word was
// a pause, or the store lost data after the last resume (a failover to a
// copy taken while it was paused brings the pause back: seed 8141). A
// paused job's backfill waits until it is resumed (docs/cli.md).
func (w *simWorld) pausedAtEnd(job string) bool {
	o := &w.obs
	if !o.backfillPaused {
		return false
	}
	ps := o.pauses[job]
	if len(ps) == 0 {
		return false
	}
	last := ps[len(ps)-1]
	return last.on || o.lossBetween(last.at, w.start.Add(simLength), false)
}

// checkBackfill checks the backfill's invariants. Called with w.mu held.
func (w *simWorld) checkBackfill() []simViolation {
	b := w.plan.backfill
	o := &w.obs
	if b == nil || o.backfillAt.IsZero() && o.backfillErr == nil {
		return nil
	}
	var vs []simViolation
	add := func(inv, run, format string, args ...any) {
		vs = append(vs, simViolation{invariant: inv, run: run, detail: fmt.Sprintf(format, args...)})
	}
	switch st := o.backfillEnd; {
	case o.backfillErr != nil:
		add(invBackfillAll, "", "backfill of %s asked at t=%s: %v", b.job, w.rel(o.backfillAt), o.backfillErr)
	case st == nil:
		add(invBackfillAll, "", "backfill of %s asked at t=%s: the store has no state of it at the end", b.job, w.rel(o.backfillAt))
	case (!st.Done() || st.Decided != st.Total) && st.InFlight == 0 && w.pausedAtEnd(b.job):
		// Waits for the job's resume, as documented.
	case !st.Done() || st.Decided != st.Total || st.InFlight != 0:
		add(invBackfillAll, "", "backfill of %s asked at t=%s not over at the end: %d of %d instants decided (%d started, %d skipped, %d already), %d in flight, finished %v",
			b.job, w.rel(o.backfillAt), st.Decided, st.Total, st.Started, st.Skipped, st.Already, st.InFlight, !st.Finished.IsZero())
	}
	// A backfill's grant of an instant that had started before.
	entries := w.ledger.Entries()
	for _, g := range o.grants {
		if !strings.HasSuffix(g.via, fmt.Sprintf(" %c", store.RunBackfill)) {
			continue
		}
		for _, e := range entries {
			if e.RunID == g.id && e.Attempt <= 1 && e.Start.Before(g.at) {
				// From the first grant of the run, which precedes its
				// start (seed 70077: granted on the primary, started just
				// after a failover to a copy that missed the grant).
				from := e.Start
				for _, h := range o.grants {
					if h.id == g.id && h.at.Before(from) {
						from = h.at
					}
				}
				add(invBackfillUndecided, g.id, "backfill granted %s to %s at t=%s; it had started on %s at t=%s%s", g.id, g.in, w.rel(g.at),
					e.Replica, w.rel(e.Start), w.lossesBetween(from, g.at))
				break
			}
		}
	}
	return vs
}
