package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/solocron/solocron/scheduler"
	"hash/fnv"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/solocron/solocron/scheduler/internal/store"
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
	// as with a real Redis down (a dial error; SentNothing).
	errSimOutage  = &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("sim: store unreachable (outage)")}
	errSimRefused = errors.New("sim: connection reset before the call reached the store")
	errSimLost    = errors.New("sim: connection reset: the store ran the call, its answer was lost")
)

// simInc is one incarnation of a replica: one process, from start to exit.
type simInc struct {
	r      *simReplica
	n      int
	ver    int // the job table it runs (table.go)
	s      *scheduler.Scheduler
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
	ver     int           // the job table it starts with (table.go)
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
	store.Backend
	in     *simInc
	notify *store.Redis // the notifier's store, its calls through simNotifyHook; nil: no notifications
}

// Caps: the simulation keeps no replica registry; its notifier's calls
// go through the faults (notify.go).
func (w *simStore) Caps() store.Capabilities {
	return store.Capabilities{MutexOnly: w.Backend.Caps().MutexOnly, Notify: w.notify}
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

func (w *simStore) Preload(ctx context.Context) error {
	_, err := simCall(w, ctx, "preload", "", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.Backend.Preload(ctx)
	})
	return err
}

func (w *simStore) Claim(ctx context.Context, replica string, skew, waiterTTL time.Duration, reqs []store.StoreClaim) ([]store.ClaimRes, error) {
	key := ""
	for i, r := range reqs {
		if i == 0 || r.ID < key {
			key = r.ID // the batch's name: its order may vary
		}
	}
	for _, r := range reqs {
		if r.Kind == 'c' {
			w.in.r.freezeNow(w.in.r.takeFreezeAtCatchup())
			break
		}
	}
	// A stalled store runs the call after the client gave up on it, while
	// the engine goes on with its requests (it retries them, reading its
	// memo into them again): as Redis' client would, the call works on what
	// was sent, a copy.
	reqs = slices.Clone(reqs)
	res, err := simCall(w, ctx, "claim", key, func(ctx context.Context) ([]store.ClaimRes, error) {
		res, err := w.Backend.Claim(ctx, replica, skew, waiterTTL, reqs)
		w.traceCall("claim", err, func(b *strings.Builder) {
			for i, c := range res {
				fmt.Fprintf(b, " %s:%c:%s/%d/%d/%s", reqs[i].ID, reqs[i].Kind, c.Status, c.Fence, c.Slot, c.Outcome)
			}
		})
		if err == nil {
			for i, c := range res {
				w.in.r.w.noteClaim(w.in, &reqs[i], c)
				if c.Status == "started" {
					w.noteLease(&reqs[i], c.Slot, c.Fence)
				}
			}
		}
		return res, err
	})
	for i, r := range reqs {
		w.in.r.w.noteAsk(r.ID, r.Owner, err == nil)
		if err == nil && res[i].Status == "started" {
			w.in.r.w.noteDelivered(r.ID, r.Owner)
		}
	}
	return res, err
}

func (w *simStore) Admit(ctx context.Context, rs []*store.StoreClaim, waiterTTL time.Duration, fenceFloor int64) ([]store.AdmitRes, error) {
	// As claim's: the call works on copies, rs get their slots back.
	sent := make([]*store.StoreClaim, len(rs))
	for i, r := range rs {
		c := *r
		sent[i] = &c
	}
	key := ""
	for i, r := range rs {
		if i == 0 || r.ID < key {
			key = r.ID // the batch's name: its order may vary
		}
	}
	res, err := simCall(w, ctx, "admit", key, func(ctx context.Context) ([]store.AdmitRes, error) {
		res, err := w.Backend.Admit(ctx, sent, waiterTTL, fenceFloor)
		// One line per admission, as renew's: which runs share a poll
		// depends on the order their waiters woke.
		for i := range sent {
			w.traceCall("admit", err, func(b *strings.Builder) {
				if err == nil {
					fmt.Fprintf(b, " %s %s %d slot %d", sent[i].ID, res[i].Status, res[i].N, sent[i].Slot)
				} else {
					fmt.Fprintf(b, " %s", sent[i].ID)
				}
			})
		}
		if err == nil {
			for i, a := range res {
				w.in.r.w.noteAdmit(w.in, sent[i], a.Status, a.N)
				if a.Status == "started" {
					w.noteLease(sent[i], sent[i].Slot, a.N)
				}
			}
		}
		return res, err
	})
	if err == nil {
		for i, a := range res {
			rs[i].Slot = sent[i].Slot
			if a.Status == "started" {
				w.in.r.w.noteDelivered(rs[i].ID, rs[i].Owner)
			}
		}
	}
	return res, err
}

func (w *simStore) Renew(ctx context.Context, reqs []store.RenewReq) ([]store.LeaseAnswer, error) {
	key := ""
	for i, r := range reqs {
		if i == 0 || r.ID < key {
			key = r.ID // the batch's name: its order may vary
		}
	}
	return simCall(w, ctx, "renew", key, func(ctx context.Context) ([]store.LeaseAnswer, error) {
		res, err := w.Backend.Renew(ctx, reqs)
		// One line per renewal: which renewals share a call depends on
		// the order the runs' watchdogs woke at one instant, and each is
		// answered on its own.
		for i := range reqs {
			w.traceCall("renew", err, func(b *strings.Builder) { fmt.Fprintf(b, " %s:%s", reqs[i].ID, res[i]) })
		}
		if err == nil {
			for i, v := range res {
				if v == "ok" {
					w.noteRenewed(reqs[i].Job, reqs[i].ID, reqs[i].Owner)
				}
			}
		}
		return res, err
	})
}

func (w *simStore) Attempt(ctx context.Context, j *store.JobSpec, id, owner string, n int, fenceFloor int64) (int64, error) {
	return simCall(w, ctx, "attempt", id, func(ctx context.Context) (int64, error) {
		t, err := w.Backend.Attempt(ctx, j, id, owner, n, fenceFloor)
		w.traceCall("attempt", err, func(b *strings.Builder) { fmt.Fprintf(b, " %s #%d token %d", id, n, t) })
		if err == nil && t > 0 {
			w.in.r.w.noteToken(w.in, j.Name, id, t, fmt.Sprintf("attempt %d", n))
		}
		return t, err
	})
}

func (w *simStore) Complete(ctx context.Context, reqs []store.CompleteReq) ([]store.CloseAnswer, error) {
	key := ""
	for i, r := range reqs {
		if i == 0 || r.R.ID < key {
			key = r.R.ID // the batch's name: its order may vary
		}
	}
	return simCall(w, ctx, "complete", key, func(ctx context.Context) ([]store.CloseAnswer, error) {
		res, err := w.Backend.Complete(ctx, reqs)
		for i, c := range reqs { // one line per close, as renewals
			w.traceCall("complete", err, func(b *strings.Builder) { fmt.Fprintf(b, " %s:%s:%s", c.R.ID, c.Outcome, res[i]) })
		}
		if err == nil {
			for i, c := range reqs {
				w.in.r.w.notef(c.R.ID, "%s complete %s (%s): %s", w.in, c.Outcome, c.ErrText, res[i])
				if c.Outcome == scheduler.Missed {
					w.in.r.w.noteNeverStarted(c.R.ID, c.R.Owner)
				}
				w.in.r.w.endLease(c.R.ID, c.R.Owner, "closed by its holder")
			}
		}
		return res, err
	})
}

// HandBack gives a manual run back to the pending requests (a queued run,
// or one won while its replica was stopping); the store then no longer
// holds it for this claim, and another replica may be granted it.
func (w *simStore) HandBack(ctx context.Context, r *store.StoreClaim, waiterTTL time.Duration) (bool, error) {
	return simCall(w, ctx, "handback", r.ID, func(ctx context.Context) (bool, error) {
		ok, err := w.Backend.HandBack(ctx, r, waiterTTL)
		w.traceCall("handback", err, func(b *strings.Builder) { fmt.Fprintf(b, " %s %v", r.ID, ok) })
		if err == nil {
			w.in.r.w.notef(r.ID, "%s hand back -> %v", w.in, ok)
			// An answered hand-back is its holder saying it never started
			// the run, as a "missed" close is: the store takes back the
			// cluster's lease_lost close then (undo.lua) — unless the store
			// lost the record with its data before it came (seed 340200:
			// answers 2.8 s late, the lease ran out, a flush, then the
			// hand-back found nothing).
			w.in.r.w.noteNeverStarted(r.ID, r.Owner)
			if ok {
				w.in.r.w.noteHandBack(r.ID, r.Owner)
				w.in.r.w.endLease(r.ID, r.Owner, "handed back")
			}
		}
		return ok, err
	})
}

// slotExpiry is the lease expiry the store now keeps for run id of j (its
// score in the job's slots), on the store's clock; ok is false when the
// run holds no slot. Read right after the call that granted or renewed the
// lease, with the operator's client (no faults).
func (w *simStore) slotExpiry(j *store.JobSpec, id string) (time.Time, bool) {
	key := strings.TrimSuffix(j.MetaKey, "meta") + "slots"
	ms, err := w.in.r.w.admin.ZScore(context.Background(), key, id).Result()
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(ms)), true
}

// noteLease notes a lease the store granted (or answered again to a
// retried call): valid from now until the expiry the store keeps for it.
func (w *simStore) noteLease(r *store.StoreClaim, slot int, fence int64) {
	until, ok := w.slotExpiry(r.Job, r.ID)
	if !ok {
		until = time.Now()
	}
	w.in.r.w.noteLeaseSeg(w.in, r.Job.Name, r.ID, r.Owner, slot, fence, until)
	// A grant may take a slot from a run it replaces (overlap: replace):
	// that lease ends now. Any lease of the job the store no longer keeps
	// in its slots has ended by now.
	key := strings.TrimSuffix(r.Job.MetaKey, "meta") + "slots"
	if ids, err := w.in.r.w.admin.ZRange(context.Background(), key, 0, -1).Result(); err == nil {
		w.in.r.w.endLeasesBut(r.Job.Name, ids)
	}
}

// noteRenewed notes a renewal the store answered "ok": the lease is valid
// from now until its new expiry.
func (w *simStore) noteRenewed(j *store.JobSpec, id, owner string) {
	if until, ok := w.slotExpiry(j, id); ok {
		w.in.r.w.noteLeaseSeg(w.in, j.Name, id, owner, 0, 0, until)
	}
}

func (w *simStore) Sync(ctx context.Context, replica string, skew, manualTTL time.Duration, reqs []store.SyncReq) ([]store.SyncRes, error) {
	return simCall(w, ctx, "sync", "", func(ctx context.Context) ([]store.SyncRes, error) {
		res, err := w.Backend.Sync(ctx, replica, skew, manualTTL, reqs)
		w.traceCall("sync", err, func(b *strings.Builder) {
			for i, r := range res {
				fmt.Fprintf(b, " %s:%d/%v/%s/%v", reqs[i].Job.Name, r.Fence, r.Paused, r.Last.UTC().Format(time.RFC3339), r.Manual)
			}
		})
		return res, err
	})
}

func (w *simStore) ManualHints(ctx context.Context, h store.HintReq) (store.Hints, time.Time, error) {
	type answer struct {
		hints  store.Hints
		server time.Time
	}
	a, err := simCall(w, ctx, "hints", "", func(ctx context.Context) (answer, error) {
		hs, s, err := w.Backend.ManualHints(ctx, h)
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

func (w *simStore) Backfill(ctx context.Context, job string, args []any) (string, *scheduler.Backfill, error) {
	type answer struct {
		a  string
		st *scheduler.Backfill
	}
	v, err := simCall(w, ctx, "backfill", job, func(ctx context.Context) (answer, error) {
		a, st, err := w.Backend.Backfill(ctx, job, args)
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

func (w *simStore) BackfillJobs(ctx context.Context) ([]store.BackfillHint, error) {
	return simCall(w, ctx, "backfilljobs", "", func(ctx context.Context) ([]store.BackfillHint, error) {
		hs, err := w.Backend.BackfillJobs(ctx)
		// A set: its order is the store's.
		slices.SortFunc(hs, func(a, b store.BackfillHint) int {
			return cmp.Or(strings.Compare(a.Job, b.Job), cmp.Compare(a.Score, b.Score))
		})
		w.traceCall("backfilljobs", err, func(b *strings.Builder) {
			for _, h := range hs {
				fmt.Fprintf(b, " %s", h.Job)
			}
		})
		return hs, err
	})
}

func (w *simStore) BackfillForget(ctx context.Context, h store.BackfillHint) error {
	_, err := simCall(w, ctx, "backfillforget", h.Job, func(ctx context.Context) (struct{}, error) {
		err := w.Backend.BackfillForget(ctx, h)
		w.traceCall("backfillforget", err, func(b *strings.Builder) { fmt.Fprintf(b, " %s", h.Job) })
		return struct{}{}, err
	})
	return err
}
