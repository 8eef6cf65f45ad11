package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// The seeded fault search's store: every replica reaches the one in-process
// store (miniredis) through a simStore, which wraps the engine's own seam
// (backend) by embedding it — a method added to backend passes through
// untouched — and injects the faults of the plan on the calls a replica
// makes: a frozen replica's calls stall, a dead one's never arrive, an
// outage refuses them, a stall answers late, and inside a lossy window a
// seeded share of calls lose their answer after the store ran them, answer
// late, or fail before they reach it. It also notes what the store decided
// (every start granted, every fencing token issued), whether or not the
// replica ever heard the answer: the invariants are checked on that.

var (
	errSimDead = errors.New("sim: replica killed (kill -9)")
	// An outage refuses connections: the client knows nothing went out,
	// as with a real Redis down (a dial error; sentNothing).
	errSimOutage  = &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("sim: store unreachable (outage)")}
	errSimRefused = errors.New("sim: connection reset before the call reached the store")
	errSimLost    = errors.New("sim: connection reset: the store ran the call, its answer was lost")
)

// simInc is one incarnation of a replica: one process, from start to exit.
type simInc struct {
	r      *simReplica
	n      int
	ver    int // the job table it runs (simtable_test.go)
	s      *Scheduler
	cancel context.CancelFunc
	done   chan struct{} // Run returned
	dead   chan struct{} // closed when the process is killed
}

func (in *simInc) isDead() bool {
	select {
	case <-in.dead:
		return true
	default:
		return false
	}
}

func (in *simInc) String() string { return fmt.Sprintf("r%d#%d", in.r.idx, in.n) }

// simReplica is one replica id across its incarnations.
type simReplica struct {
	w   *simWorld
	idx int
	id  string

	mu      sync.Mutex
	cur     *simInc // nil while down
	incs    int     // incarnations so far
	frozen  bool
	changed chan struct{} // closed and replaced when frozen changes
	offset  time.Duration // clock offset
	ver     int           // the job table it starts with (simtable_test.go)
	// faults on this replica's calls, until these times
	lossyUntil time.Time
	lateUntil  time.Time
	lateBy     time.Duration
	// freeze for this long at the next catch-up claim (0: no)
	freezeAtCatchup time.Duration
}

func (r *simReplica) now() time.Time {
	r.mu.Lock()
	off := r.offset
	r.mu.Unlock()
	return time.Now().Add(off)
}

func (r *simReplica) setFrozen(v bool) {
	r.mu.Lock()
	r.frozen = v
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

func (r *simReplica) takeFreezeAtCatchup() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.freezeAtCatchup
	r.freezeAtCatchup = 0
	return d
}

// freezeNow freezes r for d (0: not at all).
func (r *simReplica) freezeNow(d time.Duration) {
	if d <= 0 {
		return
	}
	r.setFrozen(true)
	r.w.noteFreeze(r, true)
	r.w.after(d, func() { r.setFrozen(false); r.w.noteFreeze(r, false) })
}

// runnable waits while the replica is frozen; false if in died meanwhile.
func (r *simReplica) runnable(in *simInc) bool {
	for {
		r.mu.Lock()
		frozen, ch := r.frozen, r.changed
		r.mu.Unlock()
		if in.isDead() {
			return false
		}
		if !frozen {
			return true
		}
		select {
		case <-ch:
		case <-in.dead:
			return false
		}
	}
}

// simStore is one incarnation's view of the store.
type simStore struct {
	backend
	in     *simInc
	notify *store // the notifier's store, its calls through simNotifyHook; nil: no notifications
}

// caps: the simulation keeps no replica registry; its notifier's calls
// go through the faults (simnotify_test.go).
func (w *simStore) caps() capabilities {
	return capabilities{mutexOnly: w.backend.caps().mutexOnly, notify: w.notify}
}

// fault is what happens to one call.
type fault int

const (
	faultNone    fault = iota
	faultRefused       // fails before reaching the store
	faultLost          // the store runs it; the answer is lost
	faultLate          // the store runs it; the answer comes late
)

// pick decides the fault of one call: deterministic in the seed, the
// replica, the operation, the fake time and the call's first run.
func (w *simStore) pick(op, key string) (fault, time.Duration) {
	r := w.in.r
	now := time.Now()
	r.mu.Lock()
	lossy, late, lateBy := now.Before(r.lossyUntil), now.Before(r.lateUntil), r.lateBy
	r.mu.Unlock()
	if late {
		return faultLate, lateBy
	}
	if !lossy {
		return faultNone, 0
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%d|%s|%d|%s", r.w.plan.seed, r.idx, op, now.UnixNano(), key)
	v := h.Sum64()
	if int(v%100) >= r.w.plan.faultPct {
		return faultNone, 0
	}
	switch (v / 100) % 3 {
	case 0:
		return faultRefused, 0
	case 1:
		return faultLost, 0
	}
	return faultLate, time.Duration(500+(v/300)%9500) * time.Millisecond
}

// simCall runs one call of in's replica through the faults in force.
// exec runs the call on the store and notes what it decided.
func simCall[T any](w *simStore, ctx context.Context, op, key string, exec func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	in, r, world := w.in, w.in.r, w.in.r.w
	// A frozen process sends nothing until it resumes; by then its
	// deadline may have passed.
	if !r.runnable(in) {
		return zero, errSimDead
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if world.outage() {
		return zero, errSimOutage
	}
	f, late := w.pick(op, key)
	if f == faultRefused {
		world.tracef("%s %s %s: refused before reaching the store", in, op, key)
		return zero, errSimRefused
	}
	// A stalled store runs the call when the stall ends, whether or not
	// the client still waits for its answer.
	if until := world.stalledUntil(); !until.IsZero() {
		if !simSleep(ctx, in, time.Until(until)) {
			if in.isDead() {
				return zero, errSimDead
			}
			world.tracef("%s %s %s: gave up on a stalled store; the call runs when the stall ends", in, op, key)
			// Named apart from a call the replica makes at the stall's end
			// (its next heartbeat, say): two items of one name at one
			// instant would run in the order they were queued, which the
			// seed does not fix.
			name := fmt.Sprintf("%s %s %s stalled since %d", in, op, key, time.Now().UnixNano())
			world.bg.Go(func() {
				time.Sleep(time.Until(until))
				world.seq.do(name, false, func() { _, _ = exec(context.Background()) })
			})
			return zero, ctx.Err()
		}
	}
	// The store runs the calls of one instant one at a time, in an order
	// drawn from the seed (simSequencer).
	var v T
	var err error
	world.seq.do(fmt.Sprintf("%s %s %s", in, op, key), false, func() {
		done := world.inFlight(fmt.Sprintf("%s %s %s", in, op, key))
		v, err = exec(context.WithoutCancel(ctx))
		done()
	})
	switch f {
	case faultLost:
		world.tracef("%s %s %s: ran on the store; answer lost", in, op, key)
		return zero, errSimLost
	case faultLate:
		world.tracef("%s %s %s: ran on the store; answer %s late", in, op, key, late)
		if !simSleep(ctx, in, late) {
			if in.isDead() {
				return zero, errSimDead
			}
			return zero, ctx.Err()
		}
	}
	if in.isDead() {
		return zero, errSimDead
	}
	return v, err
}

// simSleep sleeps d unless ctx ends or in dies first; it reports whether d
// passed.
func simSleep(ctx context.Context, in *simInc, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-in.dead:
		return false
	}
}

func (w *simStore) preload(ctx context.Context) error {
	_, err := simCall(w, ctx, "preload", "", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.backend.preload(ctx)
	})
	return err
}

func (w *simStore) claim(ctx context.Context, replica string, skew, waiterTTL time.Duration, reqs []storeClaim) ([]claimRes, error) {
	key := ""
	for i, r := range reqs {
		if i == 0 || r.id < key {
			key = r.id // the batch's name: its order may vary
		}
	}
	for _, r := range reqs {
		if r.kind == 'c' {
			w.in.r.freezeNow(w.in.r.takeFreezeAtCatchup())
			break
		}
	}
	// A stalled store runs the call after the client gave up on it, while
	// the engine goes on with its requests (it retries them, reading its
	// memo into them again): as Redis' client would, the call works on what
	// was sent, a copy.
	reqs = slices.Clone(reqs)
	res, err := simCall(w, ctx, "claim", key, func(ctx context.Context) ([]claimRes, error) {
		res, err := w.backend.claim(ctx, replica, skew, waiterTTL, reqs)
		w.traceCall("claim", err, func(b *strings.Builder) {
			for i, c := range res {
				fmt.Fprintf(b, " %s:%c:%s/%d/%d/%s", reqs[i].id, reqs[i].kind, c.status, c.fence, c.slot, c.outcome)
			}
		})
		if err == nil {
			for i, c := range res {
				w.in.r.w.noteClaim(w.in, &reqs[i], c)
				if c.status == "started" {
					w.noteLease(&reqs[i], c.slot, c.fence)
				}
			}
		}
		return res, err
	})
	for i, r := range reqs {
		w.in.r.w.noteAsk(r.id, r.owner, err == nil)
		if err == nil && res[i].status == "started" {
			w.in.r.w.noteDelivered(r.id, r.owner)
		}
	}
	return res, err
}

func (w *simStore) admit(ctx context.Context, rs []*storeClaim, waiterTTL time.Duration, fenceFloor int64) ([]admitRes, error) {
	// As claim's: the call works on copies, rs get their slots back.
	sent := make([]*storeClaim, len(rs))
	for i, r := range rs {
		c := *r
		sent[i] = &c
	}
	key := ""
	for i, r := range rs {
		if i == 0 || r.id < key {
			key = r.id // the batch's name: its order may vary
		}
	}
	res, err := simCall(w, ctx, "admit", key, func(ctx context.Context) ([]admitRes, error) {
		res, err := w.backend.admit(ctx, sent, waiterTTL, fenceFloor)
		// One line per admission, as renew's: which runs share a poll
		// depends on the order their waiters woke.
		for i := range sent {
			w.traceCall("admit", err, func(b *strings.Builder) {
				if err == nil {
					fmt.Fprintf(b, " %s %s %d slot %d", sent[i].id, res[i].status, res[i].n, sent[i].slot)
				} else {
					fmt.Fprintf(b, " %s", sent[i].id)
				}
			})
		}
		if err == nil {
			for i, a := range res {
				w.in.r.w.noteAdmit(w.in, sent[i], a.status, a.n)
				if a.status == "started" {
					w.noteLease(sent[i], sent[i].slot, a.n)
				}
			}
		}
		return res, err
	})
	if err == nil {
		for i, a := range res {
			rs[i].slot = sent[i].slot
			if a.status == "started" {
				w.in.r.w.noteDelivered(rs[i].id, rs[i].owner)
			}
		}
	}
	return res, err
}

func (w *simStore) renew(ctx context.Context, reqs []renewReq) ([]leaseAnswer, error) {
	key := ""
	for i, r := range reqs {
		if i == 0 || r.id < key {
			key = r.id // the batch's name: its order may vary
		}
	}
	return simCall(w, ctx, "renew", key, func(ctx context.Context) ([]leaseAnswer, error) {
		res, err := w.backend.renew(ctx, reqs)
		// One line per renewal: which renewals share a call depends on
		// the order the runs' watchdogs woke at one instant, and each is
		// answered on its own.
		for i := range reqs {
			w.traceCall("renew", err, func(b *strings.Builder) { fmt.Fprintf(b, " %s:%s", reqs[i].id, res[i]) })
		}
		if err == nil {
			for i, v := range res {
				if v == "ok" {
					w.noteRenewed(reqs[i].job, reqs[i].id, reqs[i].owner)
				}
			}
		}
		return res, err
	})
}

func (w *simStore) attempt(ctx context.Context, j *jobSpec, id, owner string, n int, fenceFloor int64) (int64, error) {
	return simCall(w, ctx, "attempt", id, func(ctx context.Context) (int64, error) {
		t, err := w.backend.attempt(ctx, j, id, owner, n, fenceFloor)
		w.traceCall("attempt", err, func(b *strings.Builder) { fmt.Fprintf(b, " %s #%d token %d", id, n, t) })
		if err == nil && t > 0 {
			w.in.r.w.noteToken(w.in, j.Name, id, t, fmt.Sprintf("attempt %d", n))
		}
		return t, err
	})
}

func (w *simStore) complete(ctx context.Context, reqs []completeReq) ([]closeAnswer, error) {
	key := ""
	for i, r := range reqs {
		if i == 0 || r.r.id < key {
			key = r.r.id // the batch's name: its order may vary
		}
	}
	return simCall(w, ctx, "complete", key, func(ctx context.Context) ([]closeAnswer, error) {
		res, err := w.backend.complete(ctx, reqs)
		for i, c := range reqs { // one line per close, as renewals
			w.traceCall("complete", err, func(b *strings.Builder) { fmt.Fprintf(b, " %s:%s:%s", c.r.id, c.outcome, res[i]) })
		}
		if err == nil {
			for i, c := range reqs {
				w.in.r.w.notef(c.r.id, "%s complete %s (%s): %s", w.in, c.outcome, c.errText, res[i])
				if c.outcome == Missed {
					w.in.r.w.noteNeverStarted(c.r.id, c.r.owner)
				}
				w.in.r.w.endLease(c.r.id, c.r.owner, "closed by its holder")
			}
		}
		return res, err
	})
}

// handBack gives a manual run back to the pending requests (a queued run,
// or one won while its replica was stopping); the store then no longer
// holds it for this claim, and another replica may be granted it.
func (w *simStore) handBack(ctx context.Context, r *storeClaim, waiterTTL time.Duration) (bool, error) {
	return simCall(w, ctx, "handback", r.id, func(ctx context.Context) (bool, error) {
		ok, err := w.backend.handBack(ctx, r, waiterTTL)
		w.traceCall("handback", err, func(b *strings.Builder) { fmt.Fprintf(b, " %s %v", r.id, ok) })
		if err == nil {
			w.in.r.w.notef(r.id, "%s hand back -> %v", w.in, ok)
			if ok {
				w.in.r.w.noteHandBack(r.id, r.owner)
				w.in.r.w.endLease(r.id, r.owner, "handed back")
			}
		}
		return ok, err
	})
}

// slotExpiry is the lease expiry the store now keeps for run id of j (its
// score in the job's slots), on the store's clock; ok is false when the
// run holds no slot. Read right after the call that granted or renewed the
// lease, with the operator's client (no faults).
func (w *simStore) slotExpiry(j *jobSpec, id string) (time.Time, bool) {
	key := strings.TrimSuffix(j.MetaKey, "meta") + "slots"
	ms, err := w.in.r.w.admin.ZScore(context.Background(), key, id).Result()
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(ms)), true
}

// noteLease notes a lease the store granted (or answered again to a
// retried call): valid from now until the expiry the store keeps for it.
func (w *simStore) noteLease(r *storeClaim, slot int, fence int64) {
	until, ok := w.slotExpiry(r.job, r.id)
	if !ok {
		until = time.Now()
	}
	w.in.r.w.noteLeaseSeg(w.in, r.job.Name, r.id, r.owner, slot, fence, until)
	// A grant may take a slot from a run it replaces (overlap: replace):
	// that lease ends now. Any lease of the job the store no longer keeps
	// in its slots has ended by now.
	key := strings.TrimSuffix(r.job.MetaKey, "meta") + "slots"
	if ids, err := w.in.r.w.admin.ZRange(context.Background(), key, 0, -1).Result(); err == nil {
		w.in.r.w.endLeasesBut(r.job.Name, ids)
	}
}

// noteRenewed notes a renewal the store answered "ok": the lease is valid
// from now until its new expiry.
func (w *simStore) noteRenewed(j *jobSpec, id, owner string) {
	if until, ok := w.slotExpiry(j, id); ok {
		w.in.r.w.noteLeaseSeg(w.in, j.Name, id, owner, 0, 0, until)
	}
}

func (w *simStore) sync(ctx context.Context, replica string, skew, manualTTL time.Duration, reqs []syncReq) ([]syncRes, error) {
	return simCall(w, ctx, "sync", "", func(ctx context.Context) ([]syncRes, error) {
		res, err := w.backend.sync(ctx, replica, skew, manualTTL, reqs)
		w.traceCall("sync", err, func(b *strings.Builder) {
			for i, r := range res {
				fmt.Fprintf(b, " %s:%d/%v/%s/%v", reqs[i].job.Name, r.fence, r.paused, r.last.UTC().Format(time.RFC3339), r.manual)
			}
		})
		return res, err
	})
}

func (w *simStore) manualHints(ctx context.Context, h hintReq) (hints, time.Time, error) {
	type answer struct {
		hints  hints
		server time.Time
	}
	a, err := simCall(w, ctx, "hints", "", func(ctx context.Context) (answer, error) {
		hs, s, err := w.backend.manualHints(ctx, h)
		w.traceCall("hints", err, func(b *strings.Builder) { fmt.Fprintf(b, " %v", hs) })
		return answer{hs, s}, err
	})
	return a.hints, a.server, err
}

// traceCall adds a call the store ran to the replay trace: the replica,
// the operation, and its answer (what) or its error.
func (w *simStore) traceCall(op string, err error, what func(b *strings.Builder)) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", w.in, op)
	if err != nil {
		fmt.Fprintf(&b, " error %v", err)
	} else {
		what(&b)
	}
	w.in.r.w.noteCall("%s", b.String())
}

func (w *simStore) backfill(ctx context.Context, job string, args []any) (string, *Backfill, error) {
	type answer struct {
		a  string
		st *Backfill
	}
	v, err := simCall(w, ctx, "backfill", job, func(ctx context.Context) (answer, error) {
		a, st, err := w.backend.backfill(ctx, job, args)
		w.traceCall("backfill", err, func(b *strings.Builder) {
			fmt.Fprintf(b, " %s %v %s", job, args[0], a)
			if st != nil {
				fmt.Fprintf(b, " decided %d/%d started %d in flight %d done %v", st.Decided, st.Total, st.Started, st.InFlight, st.Done())
			}
		})
		return answer{a, st}, err
	})
	return v.a, v.st, err
}

func (w *simStore) backfillJobs(ctx context.Context) ([]backfillHint, error) {
	return simCall(w, ctx, "backfilljobs", "", func(ctx context.Context) ([]backfillHint, error) {
		hs, err := w.backend.backfillJobs(ctx)
		// A set: its order is the store's.
		slices.SortFunc(hs, func(a, b backfillHint) int {
			return cmp.Or(strings.Compare(a.job, b.job), cmp.Compare(a.score, b.score))
		})
		w.traceCall("backfilljobs", err, func(b *strings.Builder) {
			for _, h := range hs {
				fmt.Fprintf(b, " %s", h.job)
			}
		})
		return hs, err
	})
}

func (w *simStore) backfillForget(ctx context.Context, h backfillHint) error {
	_, err := simCall(w, ctx, "backfillforget", h.job, func(ctx context.Context) (struct{}, error) {
		err := w.backend.backfillForget(ctx, h)
		w.traceCall("backfillforget", err, func(b *strings.Builder) { fmt.Fprintf(b, " %s", h.job) })
		return struct{}{}, err
	})
	return err
}
