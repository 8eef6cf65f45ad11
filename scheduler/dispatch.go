package scheduler

import (
	"container/heap"
	"context"
	"time"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// entry is the next scheduled instant of one job.
type entry struct {
	j     *jobState
	sched time.Time
	fire  time.Time
}

type entryHeap []entry

func (h entryHeap) Len() int { return len(h) }

func (h entryHeap) Less(a, b int) bool { return h[a].fire.Before(h[b].fire) }

func (h entryHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }

func (h *entryHeap) Push(x any) { *h = append(*h, x.(entry)) }

func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// dispatch is the tick loop: it sleeps until the earliest next instant of
// any job, then claims every run that is due, in one batch.
func (s *Scheduler) dispatch(ctx context.Context, pending []claimReq) {
	var h entryHeap
	gen := -1
	hold := false
	lastDue := 0                 // runs claimed in the last batch: the next is sized for as many
	maxDue := 0                  // the most runs due at once: the size of a batch that waited
	var held []claimReq          // due while a batch was in flight
	var inflight <-chan struct{} // closed once the batch in flight is answered
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		tab, g := s.table()
		if g != gen {
			started := gen == -1
			h, gen = s.plan(tab, h), g
			if started {
				s.missedStarting(h, pending)
			}
		}
		now := s.now()
		var due []claimReq
		switch {
		case !s.clockTrusted(now):
			// The clock is off (a step of an hour, a VM resumed): claim
			// nothing, and do not walk the heap through the instants the
			// wrong clock calls past.
			hold = true
		case hold:
			// The clock agrees with Redis again: plan from it afresh, as a
			// replica starting now would. Instants the hold covered were
			// decided by other replicas or are left to catch-up.
			hold = false
			h = s.plan(tab, nil)
		}
		// Claims go out claimAhead before the instant: the winner then
		// starts the job at the instant itself, however long it took Redis
		// to decide every run that shares it.
		ahead := s.ahead()
		for !hold && len(h) > 0 && !h[0].fire.After(now.Add(ahead)) {
			e := h[0]
			if due == nil {
				due = make([]claimReq, 0, max(lastDue, 1))
			}
			due = append(due, s.newClaim(e.j, e.sched, store.RunScheduled))
			// Instants whose window closed while this replica was not
			// looking (the process frozen, its host or VM paused, a laptop
			// asleep) are not claimed: they are queued to be recorded missed,
			// which Redis does only for those no replica decided (another one
			// ran them, most often) — when every replica was frozen, nobody
			// else would, and they had no record at all. Only those whose
			// record would still be kept: an older one Redis refuses as too
			// old to decide, and a freeze of hours would queue thousands.
			next := e.j.sched.Next(e.sched)
			for queued := 0; !next.IsZero() && e.j.fire(next).Add(e.j.StartingDeadline).Before(now); next = e.j.sched.Next(next) {
				if queued < maxCatchup && now.Sub(next) < e.j.retention(next) {
					s.queueMiss(s.newClaim(e.j, next, store.RunScheduled))
					queued++
				}
			}
			if next.IsZero() {
				heap.Pop(&h)
			} else {
				// The job's next instant takes its place at the top: no
				// Pop and Push (each boxes an entry) for every run.
				h[0] = entry{j: e.j, sched: next, fire: e.j.fire(next)}
				heap.Fix(&h, 0)
			}
		}
		due, pending = append(due, pending...), nil
		// One batch in flight at a time: while Redis has not answered the
		// last one, the runs due since wait, and go out together in the
		// next call once it has. Sent at once instead, each instant's batch
		// would share a Redis that cannot keep up with every other: all of
		// them answered late, the heartbeats and closes starved, and the
		// backlog never drained. Those whose starting deadline passed
		// meanwhile are missed: recorded as such, not claimed.
		//
		// A batch carries at most one instant's worth of runs (the most
		// that came due at once), the oldest first: a pipeline is answered
		// only when all of it is, so runs Redis decided early in a batch of
		// several instants would start seconds after their decision, and
		// the runs behind them could not be dropped when their deadline
		// passed.
		maxDue = max(maxDue, len(due))
		held = append(held, due...)
		if inflight == nil && len(held) > 0 {
			batch := s.dropLate(held)
			held = nil
			if n := max(maxDue, heldBatchMin); len(batch) > n {
				held = append([]claimReq(nil), batch[n:]...)
				batch = batch[:n:n]
			}
			if len(batch) > 0 {
				lastDue = len(batch)
				answered := make(chan struct{})
				inflight = answered
				s.loops.Go(func() { s.claimFirst(ctx, batch, answered) })
			}
		}
		// The sleep is measured on the monotonic clock, the instants on the
		// wall clock: waking at least every maxDispatchSleep notices a step
		// of the wall clock (either way) within that time.
		wait := maxDispatchSleep
		if len(h) > 0 && !hold {
			wait = min(wait, h[0].fire.Sub(now)-ahead)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.reloaded:
		case <-timer.C:
		case <-inflight:
			inflight = nil
		}
	}
}

// missedStarting queues to be recorded missed the instants that came due,
// and whose starting deadline passed, between this replica's start
// (runStart, from which the first heartbeat reads the instants an outage
// left) and the dispatcher's first plan h, made from the clock once that
// heartbeat returned: they are in neither. A first heartbeat longer than a
// starting deadline (a table of many jobs catching up, a Redis slow to
// answer) left them with no record when no other replica was up to claim
// them. Runs the heartbeat asked for (pending: catch-up) are left out; at
// most maxCatchup instants per job, the first ones.
func (s *Scheduler) missedStarting(h entryHeap, pending []claimReq) {
	if s.runStart.IsZero() || !s.clockTrusted(s.now()) {
		return // the dispatcher holds, and plans again from a clock it trusts
	}
	var asked map[string]bool
	for _, e := range h {
		n := 0
		for t := s.first(e.j, s.runStart); !t.IsZero() && t.Before(e.sched) && n < maxCatchup; t = e.j.sched.Next(t) {
			if asked == nil {
				asked = make(map[string]bool, len(pending))
				for _, r := range pending {
					asked[r.ID] = true
				}
			}
			c := s.newClaim(e.j, t, store.RunScheduled)
			if asked[c.ID] {
				continue
			}
			s.queueMiss(c)
			n++
		}
	}
}

// dropLate returns the claims of reqs still worth sending: a scheduled
// run whose starting deadline passed while it waited for the batch before
// it is missed, and queued to be recorded so (recordMisses), as a claim
// that came too late would be.
func (s *Scheduler) dropLate(reqs []claimReq) []claimReq {
	now := s.now()
	keep := reqs[:0]
	for _, r := range reqs {
		if r.Kind == store.RunScheduled && now.After(r.Fire.Add(r.j.StartingDeadline)) {
			s.queueMiss(r)
			continue
		}
		keep = append(keep, r)
	}
	return keep
}

// heldBatchMin is the least a batch of runs that waited for the one before
// may carry (see dispatch): the runs of several instants of a small table
// go out together.
var heldBatchMin = 4 * store.MaxBatch

// maxDispatchSleep bounds the dispatcher's sleep between looks at the clock.
const maxDispatchSleep = time.Second

// plan builds the heap for a (new) table. A job whose schedule did not
// change keeps its next instant; any other starts at the latest instant
// whose starting deadline has not passed (so a replica that restarts, or a
// job that was just added, still claims a run that is due right now), or the
// next one.
func (s *Scheduler) plan(tab []*jobState, old entryHeap) entryHeap {
	kept := map[string]entry{}
	for _, e := range old {
		kept[e.j.Name] = e
	}
	now := s.now()
	h := make(entryHeap, 0, len(tab))
	for _, j := range tab {
		e, ok := kept[j.Name]
		if ok && sameTiming(e.j, j) {
			h = append(h, entry{j: j, sched: e.sched, fire: e.fire})
			continue
		}
		t := s.first(j, now)
		if ok && sameInstants(e.j, j) && t.Before(e.sched) {
			// Only the jitter or the starting deadline changed: the
			// instants before the old plan's next one were claimed under
			// the old table already. A longer jitter would otherwise go
			// back to claim them again (Redis finds them decided, or
			// refuses those whose records the old table kept for less).
			t = e.sched
		}
		if !t.IsZero() {
			h = append(h, entry{j: j, sched: t, fire: j.fire(t)})
		}
	}
	heap.Init(&h)
	return h
}

func sameTiming(a, b *jobState) bool {
	return sameInstants(a, b) && a.Jitter == b.Jitter && a.StartingDeadline == b.StartingDeadline
}

// sameInstants says whether a and b schedule the same instants.
func sameInstants(a, b *jobState) bool {
	return a.Schedule == b.Schedule && a.Timezone == b.Timezone && a.Offset == b.Offset
}

// first is the first instant a replica considers for j at now: the last
// one due (its fire at or before now) while its starting deadline lasts,
// else the next one.
func (s *Scheduler) first(j *jobState, now time.Time) time.Time {
	return firstInstant(j, now)
}

func firstInstant(j *jobState, now time.Time) time.Time {
	// Every instant up to now - jitter is due (a run fires less than the
	// jitter after its instant), so the walk to the last due one may begin
	// at the last of those instead of at the deadline's start: found by
	// looking back over windows that double, never past the deadline's
	// start. A starting deadline of years (the loader takes any duration)
	// walked one instant at a time for minutes at every start and reload.
	return walkFirst(j, lookBack(j, now.Add(-(j.StartingDeadline+j.Jitter)), now.Add(-j.Jitter), 1), now)
}

// lookBack is the latest start, looking back from due over windows that
// double (1 s, 2 s, 4 s, ...), after which at least n instants of j fall at
// or before due; lower if no such window begins after lower. A walk of j's
// instants to due may begin there instead of at lower, which may be years
// back (a huge starting deadline, a catch-up window of a month).
func lookBack(j *jobState, lower, due time.Time, n int) time.Time {
	for w := time.Second; w < 1<<62; w *= 2 {
		start := due.Add(-w)
		if !start.After(lower) {
			break
		}
		k := 0
		for t := j.sched.Next(start); !t.IsZero() && !t.After(due) && k < n; t = j.sched.Next(t) {
			k++
		}
		if k == n {
			return start
		}
	}
	return lower
}

// walkFirst walks j's instants after from to the last one due at now
// (the next one if its starting deadline has passed).
func walkFirst(j *jobState, from, now time.Time) time.Time {
	t := j.sched.Next(from)
	for !t.IsZero() {
		n := j.sched.Next(t)
		if n.IsZero() || j.fire(n).After(now) {
			break
		}
		t = n
	}
	if !t.IsZero() && j.fire(t).Add(j.StartingDeadline).Before(now) {
		t = j.sched.Next(t)
	}
	return t
}

// ahead is how long before their instant runs are claimed: the configured
// claim ahead, or (by default) up to half a second when big batches take
// long to decide — twice the round trip of the last one,
// slowly forgotten — so that they are decided before their instant.
func (s *Scheduler) ahead() time.Duration {
	return min(s.cfg.maxAhead, max(s.cfg.claimAhead, 2*time.Duration(s.batchRTT.Load())))
}

// batchTook notes the round trip of a big claim batch: the slowest recent
// one counts, and each new one forgets an eighth of it.
func (s *Scheduler) batchTook(d time.Duration) {
	for {
		old := s.batchRTT.Load()
		n := max(int64(d), old-old/8)
		if s.batchRTT.CompareAndSwap(old, n) {
			return
		}
	}
}
