package sim

import (
	"fmt"
	"github.com/solocron/solocron/scheduler"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// What the seeded fault search saw, and the invariants it checks on it
// (docs/reliability.md lists them with the defects they catch).

// Invariant names, as reports and the known-failure list spell them.
const (
	invOneStart      = "one-start-per-run"          // no run id starts twice (ledger)
	invOneGrant      = "one-grant-per-run"          // the store grants a run to one claim only
	invOneRecord     = "one-decision-per-run"       // a run has one decision record, whatever the store lost
	invNoEmptyField  = "no-empty-field"             // every record says its decision, outcome and replica
	invLeaseLostRan  = "lease-lost-means-ran"       // started -> lease_lost only for a run that ran (or whose replica died/froze)
	invManualOnce    = "manual-runs-once"           // every manual request runs, once
	invFenceRises    = "fencing-tokens-rise"        // per job, each token issued is above every earlier one
	invMissedOnStore = "missed-by-store-clock"      // "missed: starting deadline" only once the deadline passed on the store's clock
	invPausedNoStart = "paused-job-starts-none"     // no scheduled or catch-up run is granted while its job is paused
	invLiveness      = "decided-when-calm"          // with every replica up and the store answering, every instant is decided, not missed
	invHolders       = "holders-within-concurrency" // per job, never more than concurrency leases valid at once on the store's clock
	invSlotTokens    = "slot-tokens-rise"           // per (job, slot): one valid lease at a time, tokens rise in order of grant and of start
	invPoolLimit     = "pool-limit-kept"            // per pool, never more leases of its jobs valid at once on the store's clock than its size
)

type simViolation struct {
	invariant string
	run       string // the run concerned, if one
	detail    string
}

type simGrant struct {
	at      time.Time
	job, id string
	owner   string
	fence   int64
	in      *simInc
	via     string
}

type simToken struct {
	at    time.Time
	job   string
	id    string
	fence int64
	via   string
}

type simManual struct {
	id, job string
	at      time.Time
}

type simPause struct {
	on bool
	at time.Time
}

type simLoss struct {
	at   time.Time
	what string // flush, failover..., or "every replica down": nobody remembers the job's state
}

const simAllDown = "every replica down"

// simLossReason starts the error of a run the store records missed because
// it lost its data (claim.lua), simUnsureReason the same when no replica
// that asked remembered the job's state (it may be new); simLossNoticed bounds how long after a loss
// a manual request may still be recorded so (until a replica notices it).
// simCloseTimeout is the engine's default close timeout (closeRun's bound
// on recording a run's end), which the simulation's replicas use.
const simCloseTimeout = 5 * time.Second

const (
	simLossReason   = "Redis lost data"
	simUnsureReason = "Redis held no state of this job"
	simLossNoticed  = 10 * time.Second
)

// firstNoted and lastNoted are the first and last times run id was seen:
// noted at the store, or in one of its records rs.
func (w *simWorld) firstNoted(id string, rs []scheduler.Run) time.Time {
	t := w.obs.span[id][0]
	for _, r := range rs {
		for _, x := range []time.Time{r.StartedAt, r.FinishedAt} {
			if !x.IsZero() && (t.IsZero() || x.Before(t)) {
				t = x
			}
		}
	}
	return t
}

func (w *simWorld) lastNoted(id string, rs []scheduler.Run) time.Time {
	t := w.obs.span[id][1]
	for _, r := range rs {
		if r.FinishedAt.After(t) {
			t = r.FinishedAt
		}
	}
	return t
}

// simLease is what the store granted one claim (run id, owner token): the
// spans of store time in which its lease was valid, as the store said when
// it granted and renewed it. A span ends at its expiry, or earlier when the
// holder closed the run or handed it back, the store replaced it, or the
// store lost its data (it no longer knows the lease; the holder learns so
// at its next renewal: README's bad-day table).
type simLease struct {
	job, id, owner string
	in             *simInc
	slot           int
	fence          int64
	at             time.Time // first granted
	spans          [][2]time.Time
}

// simAttempt is one attempt a job started, as the job saw it
// (jobs.Info): the slot and token a sink would fence on.
type simAttempt struct {
	job, id string
	attempt int
	slot    int
	token   int64
	in      *simInc
	start   time.Time
}

type simObs struct {
	events  []simEvent
	life    []string
	faults  []string
	runs    map[string][]string     // run id -> what the store decided about it, in order
	span    map[string][2]time.Time // run id -> first and last time it was noted
	grants  []simGrant
	tokens  []simToken
	records map[string][]scheduler.Run // run id -> its distinct records
	manual  []simManual
	pauses  map[string][]simPause
	losses  []simLoss
	killed  map[*simInc]time.Time
	stopped map[*simInc]time.Time  // graceful stops (SIGTERM)
	exited  map[*simInc]time.Time  // when Run returned (after a stop: at the latest when its shutdown grace ended)
	never   map[string]time.Time   // run id|owner -> when its holder's "never started" close (missed) reached the store
	frozen  map[int][][2]time.Time // replica -> freeze spans (end zero: still frozen)
	leases  map[string]*simLease   // run id|owner -> its lease
	leaseN  []*simLease            // in order of first grant
	handed  map[string]time.Time   // run id|owner -> when the store took the claim back (hand back)
	heard   map[string]time.Time   // run id|owner -> when a "started" answer first reached the replica
	// run id|owner -> the claim calls of its holder for it that came back,
	// from the first sent after the store granted it the run
	asks map[string][]simAsk
	// run id|owner -> when the store kept its holder's run lease_lost as the
	// holder asked again about it (a claim answered decided lease_lost, an
	// admission lost)
	keptLost map[string]time.Time
	attempts []simAttempt
	calls    []string // every store call as the store ran it, with its answer (the replay trace)
	// the plan's backfill (backfill.go): when asked, and its state at the end
	backfillAt  time.Time
	backfillEnd *scheduler.Backfill
	// whether its job was paused in the store at the end
	backfillPaused bool
	backfillErr    error
	// notifications (notify.go)
	posts      []simPost
	notifySubs map[string][]time.Time // job -> when a subscription of it was written
	notifyDone map[string]time.Time   // "<run id>:<event>" -> when its delivery was first reported done
}

func newSimObs() simObs {
	return simObs{runs: map[string][]string{}, span: map[string][2]time.Time{}, records: map[string][]scheduler.Run{}, pauses: map[string][]simPause{},
		killed: map[*simInc]time.Time{}, stopped: map[*simInc]time.Time{}, exited: map[*simInc]time.Time{}, never: map[string]time.Time{}, frozen: map[int][][2]time.Time{},
		leases: map[string]*simLease{}, handed: map[string]time.Time{}, heard: map[string]time.Time{}, asks: map[string][]simAsk{}, keptLost: map[string]time.Time{}, notifySubs: map[string][]time.Time{}, notifyDone: map[string]time.Time{}}
}

// noteLeaseSeg notes that the store holds run id's lease for owner (in's
// claim) valid from now until until (its slot's score). slot and fence are
// the grant's (0 for a renewal).
func (w *simWorld) noteLeaseSeg(in *simInc, job, id, owner string, slot int, fence int64, until time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	k := id + "|" + owner
	l := w.obs.leases[k]
	if l == nil {
		if fence == 0 {
			return // a renewal of a lease granted unseen: cannot be (every grant is noted)
		}
		l = &simLease{job: job, id: id, owner: owner, in: in, slot: slot, fence: fence, at: now}
		w.obs.leases[k] = l
		w.obs.leaseN = append(w.obs.leaseN, l)
	}
	if until.After(now) {
		l.spans = append(l.spans, [2]time.Time{now, until})
	}
}

// endLease ends the lease of run id's claim owner now: the store no longer
// holds it (closed, handed back).
func (w *simWorld) endLease(id, owner, why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l := w.obs.leases[id+"|"+owner]; l != nil {
		l.cut(time.Now())
	}
}

// endLeasesBut ends now every lease of job still valid but for the runs
// held, the store's slots as read just now.
func (w *simWorld) endLeasesBut(job string, held []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	for _, l := range w.obs.leaseN {
		if l.job != job || slices.Contains(held, l.id) {
			continue
		}
		l.cut(now)
	}
}

// lostBothAsks reports whether grant g went to a replica that was stopping
// (SIGTERM) and never learnt it: the store ran its claim and the claim it
// sent once more — a stopping replica asks again about a scheduled claim
// whose answer was lost — and neither answer reached it
// (seed 8036: a stalled store ran both 245 ms after the second call gave
// up). Like a replica gone before it could hear (seed 221), it could not
// run the run nor say it never started; the cluster closes it lease_lost.
// A replica that did not ask again, or heard an answer, has no excuse.
func (w *simWorld) lostBothAsks(g *simGrant) bool {
	o := &w.obs
	st, ok := o.stopped[g.in]
	if !ok || st.After(g.at) {
		return false
	}
	if _, heard := o.heard[g.id+"|"+g.owner]; heard {
		return false
	}
	asks := 0
	for _, h := range o.grants {
		if h.id == g.id && h.owner == g.owner && h.in == g.in {
			asks++
		}
	}
	return asks >= 2
}

// stillWaiting reports whether manual request m, never granted, was handed
// back to the pending requests when every replica stopped at the end, having
// waited behind a job whose every slot was held, on the store's clock, from
// the calm period (or the request, if later) to the end, but for the short
// gaps in which the store admits the next waiter.
func (w *simWorld) stillWaiting(m simManual) bool {
	o := &w.obs
	end := w.start.Add(simLength)
	handedAtEnd := false
	for k, t := range o.handed {
		if strings.HasPrefix(k, m.id+"|") && !t.Before(end) {
			handedAtEnd = true
		}
	}
	if !handedAtEnd {
		return false
	}
	from := w.start.Add(simFaultsUntil)
	if m.at.After(from) {
		from = m.at
	}
	return w.slotsBusy(m.job, from, end, simAdmitGap)
}

// simAdmitGap is how long a job's slot may stay free while the store admits
// its next waiter (a released slot is offered at the waiter's next poll).
const simAdmitGap = time.Second

// slotsBusy reports whether job's valid leases held its every slot (its
// largest concurrency) throughout [from, to], but for gaps of at most gap.
func (w *simWorld) slotsBusy(job string, from, to time.Time, gap time.Duration) bool {
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, l := range w.obs.leaseN {
		if l.job != job {
			continue
		}
		// One lease's spans merged: a renewal overlapping the span it
		// extends is one holder.
		spans := slices.Clone(l.spans)
		sort.Slice(spans, func(a, b int) bool { return spans[a][0].Before(spans[b][0]) })
		var merged [][2]time.Time
		for _, sp := range spans {
			if !sp[1].After(sp[0]) {
				continue
			}
			if k := len(merged); k > 0 && !sp[0].After(merged[k-1][1]) {
				if sp[1].After(merged[k-1][1]) {
					merged[k-1][1] = sp[1]
				}
				continue
			}
			merged = append(merged, sp)
		}
		for _, sp := range merged {
			edges = append(edges, edge{sp[0], 1}, edge{sp[1], -1})
		}
	}
	sort.Slice(edges, func(a, b int) bool {
		if !edges[a].at.Equal(edges[b].at) {
			return edges[a].at.Before(edges[b].at)
		}
		return edges[a].d > edges[b].d // a renewal meeting its span's end is no gap
	})
	limit := w.plan.limit(job)
	n := 0
	idle := from // since when not every slot is held (zero: all held)
	for _, e := range edges {
		if e.at.After(to) {
			break
		}
		n += e.d
		// Reading the count after every edge of one instant: the sort
		// puts starts first, so a count below the limit here is a gap.
		if n >= limit && !idle.IsZero() {
			if e.at.After(from) && e.at.Sub(idle) > gap {
				return false
			}
			idle = time.Time{}
		} else if n < limit && idle.IsZero() {
			idle = e.at
			if idle.Before(from) {
				idle = from
			}
		}
	}
	return idle.IsZero() || to.Sub(idle) <= gap
}

// cut ends every span of l that began by t at t.
func (l *simLease) cut(t time.Time) {
	for i, sp := range l.spans {
		if !sp[0].After(t) && sp[1].After(t) {
			l.spans[i][1] = t
		}
	}
}

// noteHandBack notes that the store took run id back from claim owner (a
// manual run handed back to the pending requests, unstarted).
func (w *simWorld) noteHandBack(id, owner string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.obs.handed[id+"|"+owner] = time.Now()
}

// noteDelivered notes that a "started" answer for run id's claim owner
// reached its replica (perhaps late).
func (w *simWorld) noteDelivered(id, owner string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.obs.heard[id+"|"+owner]; !ok {
		w.obs.heard[id+"|"+owner] = time.Now()
	}
}

// simAsk is one claim call of a run's holder, as it came back.
type simAsk struct {
	at       time.Time
	answered bool
}

// noteAsk notes that a claim call for run id of claim owner came back, with
// the store's answer or without, if the store had granted owner the run.
func (w *simWorld) noteAsk(id, owner string, answered bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := id + "|" + owner
	if w.obs.leases[k] == nil {
		return
	}
	w.obs.asks[k] = append(w.obs.asks[k], simAsk{time.Now(), answered})
}

// simAskEvery bounds how long a replica that may hold a run (a claim's
// answer lost) waits before it asks about it again: the misses' flush runs
// every second (every 100 ms to 1 s while stopping), each call up to the
// claim timeout; a little slack for the fake clock's steps.
var simAskEvery = time.Second + engine.ClaimTimeout + 500*time.Millisecond

// cutOff reports whether grant g went to a replica that never heard it and
// could not settle it before it exited: its claim call came back without
// the answer, and from then it kept asking about the run (no gap longer
// than simAskEvery, up to its exit or the end of its shutdown grace), every
// ask refused, lost or late past its deadline (a lossy link, then an
// outage; seed 20093). Like a replica killed before it could hear (seed
// 221), it could neither run the run nor say it never started; the cluster
// closes it lease_lost. A replica that heard an answer, or stopped asking,
// has no excuse.
func (w *simWorld) cutOff(g *simGrant) bool {
	o := &w.obs
	k := g.id + "|" + g.owner
	if _, heard := o.heard[k]; heard {
		return false
	}
	asks := o.asks[k]
	x, gone := o.exited[g.in]
	if len(asks) == 0 || !gone {
		return false
	}
	if st, ok := o.stopped[g.in]; ok && st.Add(w.plan.grace).Before(x) {
		x = st.Add(w.plan.grace)
	}
	last := asks[0].at
	for _, a := range asks {
		if a.answered || a.at.Sub(last) > simAskEvery {
			return false
		}
		last = a.at
	}
	return x.Sub(last) <= simAskEvery
}

// settledAfterLoss reports whether run id's lease_lost record r was lost
// with the store's data and the run's last record is the store's missed
// (seed 20354: the holder, on a lossy link, asked again after a flush and
// was told the run was missed, as the loss left it). The record before the
// loss is gone; the one left says the run never started.
func (o *simObs) settledAfterLoss(id string, r scheduler.Run) bool {
	var last scheduler.Run
	for _, x := range o.records[id] {
		if x.FinishedAt.After(last.FinishedAt) {
			last = x
		}
	}
	return last.Decision == scheduler.Missed && last.Outcome == scheduler.Missed && last.FinishedAt.After(r.FinishedAt) &&
		o.lossBetween(r.FinishedAt, last.FinishedAt, false)
}

// noteAttempt notes an attempt a job started, with the slot and token it
// was given.
func (w *simWorld) noteAttempt(in *simInc, info jobs.Info) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.obs.attempts = append(w.obs.attempts, simAttempt{job: info.Job, id: info.RunID, attempt: info.Attempt, slot: info.Slot,
		token: info.FencingToken, in: in, start: time.Now()})
}

// addRecord keeps r unless an identical decision of its run is kept: a
// record read again (or closed since) is the same decision.
func (o *simObs) addRecord(r scheduler.Run) {
	for i, old := range o.records[r.ID] {
		if old.Decision == r.Decision && old.Replica == r.Replica && old.FencingToken == r.FencingToken {
			o.records[r.ID][i] = r
			return
		}
	}
	o.records[r.ID] = append(o.records[r.ID], r)
}

func (w *simWorld) notef(id, format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	w.obs.runs[id] = append(w.obs.runs[id], fmt.Sprintf("t=%-8s ", w.rel(now))+fmt.Sprintf(format, args...))
	sp, ok := w.obs.span[id]
	if !ok {
		sp[0] = now
	}
	sp[1] = now
	w.obs.span[id] = sp
}

func (w *simWorld) noteClaim(in *simInc, r *store.StoreClaim, res store.ClaimRes) {
	line := fmt.Sprintf("%s claim kind=%c -> %s", in, r.Kind, res.Status)
	switch res.Status {
	case "started":
		line += fmt.Sprintf(" fence=%d", res.Fence)
	case "decided":
		line += fmt.Sprintf(" (%s by %s)", res.Outcome, res.Replica)
	case "refused":
		line += " (" + res.Reason + ")"
	}
	w.notef(r.ID, "%s", line)
	if res.Status == "started" {
		w.noteGrant(in, r, res.Fence, fmt.Sprintf("claim %c", r.Kind))
	}
	if res.Status == "decided" && res.Outcome == string(scheduler.LeaseLost) {
		w.noteKeptLost(r.ID, r.Owner)
	}
}

// noteKeptLost notes that the store kept run id lease_lost when its claim
// owner asked again about it, if owner was granted the run.
func (w *simWorld) noteKeptLost(id, owner string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := id + "|" + owner
	if _, ok := w.obs.keptLost[k]; !ok && w.obs.leases[k] != nil {
		w.obs.keptLost[k] = time.Now()
	}
}

// finalLost reports whether run id's lease_lost record r, granted by g,
// stands by design (lua/parts/close.lua's lease_lost_final): its job notifies
// lease_lost and its holder said it never started the run (or asked about
// it again) only once the event was due, simLeaseLostHold after the close
// — one run, one final event, the one its record says.
func (w *simWorld) finalLost(g *simGrant, r scheduler.Run) bool {
	if g == nil || !w.plan.notifyOn() || !w.plan.notifies(g.job) {
		return false
	}
	o := &w.obs
	k := g.id + "|" + g.owner
	say, ok := o.never[k]
	if t, kept := o.keptLost[k]; kept && (!ok || t.Before(say)) {
		say, ok = t, true
	}
	return ok && !say.Before(r.FinishedAt.Add(simLeaseLostHold-time.Millisecond))
}

func (w *simWorld) noteAdmit(in *simInc, r *store.StoreClaim, status store.Answer, n int64) {
	if status == "waiting" {
		return // polled every 100ms: too many to trace
	}
	w.notef(r.ID, "%s admit -> %s %d", in, status, n)
	if status == "started" {
		w.noteGrant(in, r, n, fmt.Sprintf("admit %c", r.Kind))
	}
	if status == store.AnswerLost {
		w.noteKeptLost(r.ID, r.Owner) // if it was granted: closed lease_lost, and final (admit.lua)
	}
}

func (w *simWorld) noteGrant(in *simInc, r *store.StoreClaim, fence int64, via string) {
	w.mu.Lock()
	w.obs.grants = append(w.obs.grants, simGrant{at: time.Now(), job: r.Job.Name, id: r.ID, owner: r.Owner, fence: fence, in: in, via: via})
	w.mu.Unlock()
	w.noteToken(in, r.Job.Name, r.ID, fence, via)
}

func (w *simWorld) noteToken(in *simInc, job, id string, fence int64, via string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.obs.tokens = append(w.obs.tokens, simToken{at: time.Now(), job: job, id: id, fence: fence, via: fmt.Sprintf("%s %s", in, via)})
}

func (w *simWorld) noteLife(in *simInc, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch what {
	case "killed":
		w.obs.killed[in] = time.Now()
	case "stopping":
		w.obs.stopped[in] = time.Now()
	}
	w.obs.life = append(w.obs.life, fmt.Sprintf("t=%-8s %s %s", w.rel(time.Now()), in, what))
}

// noteNeverStarted notes that run id's holder (claim owner) told the store
// it never started the run.
func (w *simWorld) noteNeverStarted(id, owner string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.obs.never[id+"|"+owner]; !ok {
		w.obs.never[id+"|"+owner] = time.Now()
	}
}

// noteExit notes that in's Run returned.
func (w *simWorld) noteExit(in *simInc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.obs.exited[in] = time.Now()
}

func (w *simWorld) noteFreeze(r *simReplica, on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	spans := w.obs.frozen[r.idx]
	if on {
		w.obs.frozen[r.idx] = append(spans, [2]time.Time{now, {}})
		w.obs.life = append(w.obs.life, fmt.Sprintf("t=%-8s r%d frozen", w.rel(now), r.idx))
	} else if len(spans) > 0 {
		spans[len(spans)-1][1] = now
		w.obs.life = append(w.obs.life, fmt.Sprintf("t=%-8s r%d resumed", w.rel(now), r.idx))
	}
}

func (w *simWorld) noteLoss(what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.obs.losses = append(w.obs.losses, simLoss{at: time.Now(), what: what})
	// The store forgets the leases it held (a failover's copy keeps those
	// granted before it was taken; their holders' renewals on it note them
	// again).
	for _, l := range w.obs.leaseN {
		l.cut(time.Now())
	}
	w.obs.life = append(w.obs.life, fmt.Sprintf("t=%-8s store lost its data: %s", w.rel(time.Now()), what))
}

// lossesBetween describes the store's losses in [from, to].
func (w *simWorld) lossesBetween(from, to time.Time) string {
	var out []string
	for _, l := range w.obs.losses {
		if !l.at.Before(from) && !l.at.After(to) {
			out = append(out, fmt.Sprintf("%s at t=%s", l.what, w.rel(l.at)))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; in between, the store lost data: " + strings.Join(out, ", ")
}

// impaired reports whether in could not act on a run between from and to:
// it was killed by then, or its replica was frozen at some time in between.
func (o *simObs) impaired(in *simInc, from, to time.Time) bool {
	if k, ok := o.killed[in]; ok && !k.After(to) {
		return true
	}
	for _, s := range o.frozen[in.r.idx] {
		if !s[0].After(to) && (s[1].IsZero() || !s[1].Before(from)) {
			return true
		}
	}
	return false
}

// lossBetween reports whether the store lost data in [from, to]; with
// allDown, only a loss while every replica was down counts.
func (o *simObs) lossBetween(from, to time.Time, allDown bool) bool {
	for _, l := range o.losses {
		if !l.at.Before(from) && !l.at.After(to) && (l.what == simAllDown || !allDown) {
			return true
		}
	}
	return false
}

// lossNoticeBound is how long before at a loss may have happened for a
// manual request made at at to be recorded missed for it: the loss is
// noticed within simLossNoticed of its replicas' next calls, later by as
// long as the store stalled or was out meanwhile (no call reached it to
// notice the loss; seed 94444: a failover to a stale copy, then an 8 s
// stall, the loss noticed 11.3 s after the failover). Called with w.mu
// held.
func (w *simWorld) lossNoticeBound(at time.Time) time.Duration {
	bound := simLossNoticed
	counted := map[int]bool{}
	for grew := true; grew; {
		grew = false
		for i, e := range w.obs.events {
			t := w.start.Add(e.at)
			if counted[i] || (e.kind != evStall && e.kind != evOutage) || t.After(at) || t.Before(at.Add(-bound)) {
				continue
			}
			counted[i], grew = true, true
			bound += e.dur
		}
	}
	return bound
}

// check runs every invariant on what happened.
func (w *simWorld) check() []simViolation {
	w.mu.Lock()
	defer w.mu.Unlock()
	o := &w.obs
	var vs []simViolation
	add := func(inv, run, format string, args ...any) {
		vs = append(vs, simViolation{invariant: inv, run: run, detail: fmt.Sprintf(format, args...)})
	}
	entries := w.ledger.Entries()
	firsts := map[string][]int{} // run id -> its first attempts (indexes in entries)
	for i, e := range entries {
		if e.Attempt <= 1 {
			firsts[e.RunID] = append(firsts[e.RunID], i)
		}
	}
	deadline := map[string]time.Duration{}
	for _, j := range w.plan.allJobs() {
		deadline[j.Name] = w.plan.deadline(j.Name)
	}

	// At most one start per run id.
	for id, idx := range firsts {
		if len(idx) > 1 {
			var on []string
			for _, i := range idx {
				on = append(on, fmt.Sprintf("%s token %d at t=%s%s", entries[i].Replica, entries[i].Token, w.rel(entries[i].Start),
					w.byBackfill(id, entries[i].Token)))
			}
			from := entries[idx[0]].Start
			for _, g := range o.grants {
				if g.id == id && g.at.Before(from) {
					from = g.at
				}
			}
			add(invOneStart, id, "run %s started %d times: %s%s", id, len(idx), strings.Join(on, "; "),
				w.lossesBetween(from, entries[idx[len(idx)-1]].Start))
		}
	}

	// The store grants each run to one claim.
	owners := map[string]map[string]simGrant{}
	for _, g := range o.grants {
		if owners[g.id] == nil {
			owners[g.id] = map[string]simGrant{}
		}
		if _, ok := owners[g.id][g.owner]; !ok {
			owners[g.id][g.owner] = g
		}
	}
	for id, m := range owners {
		// A claim the store took back — a manual run handed back, not
		// started, to the pending requests (a replica stopping, or its
		// queue wait given up) — is no grant any more: another replica
		// may be granted the run. That it started at most once is
		// one-start-per-run's to check (the guarantee is one start).
		for owner := range m {
			if _, ok := o.handed[id+"|"+owner]; ok && len(m) > 1 {
				delete(m, owner)
			}
		}
		if len(m) > 1 {
			w.dropBackfillRerun(id, m)
		}
		if len(m) > 1 {
			var gs []simGrant
			for _, g := range m {
				gs = append(gs, g)
			}
			sort.Slice(gs, func(a, b int) bool { return gs[a].at.Before(gs[b].at) })
			var ds []string
			for _, g := range gs {
				ds = append(ds, fmt.Sprintf("%s (%s) fence %d at t=%s", g.in, g.via, g.fence, w.rel(g.at)))
			}
			add(invOneGrant, id, "run %s granted to %d claims: %s%s", id, len(m), strings.Join(ds, "; "),
				w.lossesBetween(gs[0].at, gs[len(gs)-1].at))
		}
	}

	// One decision record per run; no empty field. After the store lost
	// its data it no longer knows what it decided; it records the runs
	// that could have started before the loss "missed" with that reason
	// (README's bad-day table). Such a record, made after a loss the run's
	// other record predates, is that documented answer, not a second
	// decision.
	for id, rs := range o.records {
		if len(rs) > 1 {
			var kept []scheduler.Run
			for _, r := range rs {
				if !(r.Decision == scheduler.Missed && simForLoss(r.Error) &&
					o.lossBetween(w.firstNoted(id, rs), r.FinishedAt, false)) {
					kept = append(kept, r)
				}
			}
			if len(kept) > 1 {
				rs = kept
			} else {
				rs = rs[:0]
			}
		}
		if len(rs) > 1 {
			rs = simBackfillReruns(rs)
		}
		if len(rs) > 1 {
			var ds []string
			for _, r := range rs {
				ds = append(ds, fmt.Sprintf("%s->%s by %s fence %d%s", r.Decision, r.Outcome, r.Replica, r.FencingToken,
					w.byBackfill(id, r.FencingToken)))
			}
			add(invOneRecord, id, "run %s has %d decisions: %s%s", id, len(rs), strings.Join(ds, "; "),
				w.lossesBetween(w.firstNoted(id, rs), w.lastNoted(id, rs)))
		}
		for _, r := range o.records[id] {
			if r.Decision == "" || r.Outcome == "" || r.Replica == "" {
				add(invNoEmptyField, id, "run %s: record with an empty field: decision=%q outcome=%q replica=%q error=%q",
					id, r.Decision, r.Outcome, r.Replica, r.Error)
			}
		}
	}

	// started -> lease_lost only for a run that ran, or whose replica was
	// killed or frozen before it could.
	for id, rs := range o.records {
		for _, r := range rs {
			if r.Decision != scheduler.Started || r.Outcome != scheduler.LeaseLost || len(firsts[id]) > 0 {
				continue
			}
			var g *simGrant
			for i := range o.grants {
				if o.grants[i].id == id && o.grants[i].fence == r.FencingToken {
					g = &o.grants[i]
				}
			}
			end := r.FinishedAt
			if end.IsZero() {
				end = w.start.Add(simLength)
			}
			if g != nil && g.at.Add(engine.ClaimTimeout).After(end) {
				// Killed or frozen before the call the store granted it
				// could time out, its replica never learnt that the run
				// was its own, nor could it say it never started it.
				end = g.at.Add(engine.ClaimTimeout)
			}
			if g != nil {
				if d, ok := o.heard[id+"|"+g.owner]; ok && d.Add(engine.ClaimTimeout+simCloseTimeout).After(end) {
					// An answer that came late, past the lease: its
					// replica then tries to take the lease back (one
					// renewal, up to engine.ClaimTimeout), and failing that
					// records the run never started (a close, retried up
					// to the close timeout). Killed or frozen before it
					// could (seed 9: killed 0.27 s after the answer came,
					// its calls failing), it leaves the cluster's
					// lease_lost.
					end = d.Add(engine.ClaimTimeout + simCloseTimeout)
				}
			}
			if g != nil && o.impaired(g.in, g.at, end) {
				continue
			}
			if t, ok := o.never[id+"|"+g.owner]; g != nil && ok && o.lossBetween(r.FinishedAt, t, false) {
				// Its holder said it never started, but the store had
				// lost the record with its data by then (seed 27: the
				// holder's closes failed in a lossy window until after a
				// flush); the record read before the loss is what is left.
				continue
			}
			if x, ok := o.exited[g.in]; g != nil && ok && !x.After(end) {
				// Stopped (SIGTERM), and gone at the end of its shutdown
				// grace before it could learn that the store granted it
				// the run (seed 221: a stalled store ran its claim, and again
				// the claim it sent once more, each answer 4.9 s late,
				// past the call's deadline; the grace ended before a
				// third could come back): as a killed replica, it never
				// learnt that the run was its own.
				continue
			}
			if g != nil && (w.lostBothAsks(g) || w.cutOff(g)) {
				continue
			}
			if o.settledAfterLoss(id, r) || w.finalLost(g, r) {
				continue
			}
			how, lost := "no grant observed", ""
			if g != nil {
				// A failover since may have brought back a copy that still
				// has the run running after its holder closed it, or that
				// misses the holder's "never started" over the cluster's
				// lease_lost.
				lost = w.lossesBetween(g.at, w.start.Add(simLength))
				how = fmt.Sprintf("granted to %s (%s) at t=%s", g.in, g.via, w.rel(g.at))
				if st, ok := o.stopped[g.in]; ok && !st.After(end) {
					how += fmt.Sprintf(", which was stopping (SIGTERM) from t=%s", w.rel(st))
				}
			}
			add(invLeaseLostRan, id, "run %s recorded started -> lease_lost by %s but never ran; %s, its replica alive and not frozen (error %q)%s",
				id, r.Replica, how, r.Error, lost)
		}
	}

	// Every manual request runs once.
	for _, m := range o.manual {
		n := len(firsts[m.id])
		if n == 1 {
			continue
		}
		if n > 1 {
			continue // reported as one-start-per-run
		}
		var first *simGrant
		for i := range o.grants {
			if o.grants[i].id == m.id {
				first = &o.grants[i]
				break
			}
		}
		end := w.start.Add(simLength)
		if first != nil {
			end = first.at
			if _, heard := o.heard[m.id+"|"+first.owner]; !heard {
				// Until its holder hears the grant, or gives up waiting
				// and asks again, the run lives only in the store (seed
				// 70185: an admission answered 5.5 s late, the store
				// flushed 2.5 s after it granted the run).
				end = first.at.Add(engine.ClaimTimeout + simCloseTimeout)
			}
		}
		if o.lossBetween(m.at, end, false) {
			continue // the store lost the request with its data
		}
		if first == nil && !w.plan.inTable(m.job, w.plan.final) {
			continue // the job left the table: no replica is there to run it, the request waits
		}
		if first != nil && o.impaired(first.in, first.at, w.start.Add(simLength)) {
			continue // granted to a replica that was killed or frozen
		}
		finalLost := false
		for _, r := range o.records[m.id] {
			if r.Outcome == scheduler.LeaseLost && first != nil && w.finalLost(first, r) {
				finalLost = true
			}
		}
		if finalLost {
			continue // recorded lease_lost, as its event said, before its holder could say it never started it
		}
		lossAnswer := false
		for _, r := range o.records[m.id] {
			if r.Decision == scheduler.Missed && simForLoss(r.Error) {
				lossAnswer = true
			}
		}
		if lossAnswer && o.lossBetween(m.at.Add(-w.lossNoticeBound(m.at)), w.start.Add(simLength), false) {
			continue // made before the store noticed its loss: recorded missed, as documented
		}
		if first == nil && w.stillWaiting(m) {
			// Waiting its turn behind other runs of a job that was busy
			// all along, it was handed back to the pending requests
			// when every replica stopped at the end (seed 8019: six
			// manual runs queued on slow, whose runs take 3-9 s): not
			// lost, the store keeps it for the next replica.
			continue
		}
		var what []string
		for _, r := range o.records[m.id] {
			what = append(what, fmt.Sprintf("%s->%s by %s (%s)", r.Decision, r.Outcome, r.Replica, r.Error))
		}
		if len(what) == 0 {
			what = append(what, "no record")
		}
		add(invManualOnce, m.id, "manual run %s (triggered at t=%s) never ran: %s", m.id, w.rel(m.at), strings.Join(what, "; "))
	}

	// Fencing tokens rise, per job: a token issued after another (on the
	// fake clock, strictly later) is larger, and none is issued twice —
	// unless the store lost the job's state while every replica was down,
	// when nobody remembers the old tokens.
	byJob := map[string][]simToken{}
	seen := map[string]bool{}
	for _, t := range o.tokens {
		// One grant answered again (a retried claim, a repeated admit)
		// is one token.
		k := fmt.Sprintf("%s|%d", t.id, t.fence)
		if !seen[k] {
			seen[k] = true
			byJob[t.job] = append(byJob[t.job], t)
		}
	}
	for job, ts := range byJob {
		sort.SliceStable(ts, func(a, b int) bool { return ts[a].at.Before(ts[b].at) })
		reported := 0
		for b := range ts {
			for a := 0; a < b && reported < 3; a++ {
				ta, tb := ts[a], ts[b]
				if o.lossBetween(ta.at, tb.at, true) {
					continue
				}
				if (ta.at.Before(tb.at) && tb.fence <= ta.fence) || ta.fence == tb.fence {
					add(invFenceRises, tb.id, "job %s: token %d (%s, %s) at t=%s after token %d (%s, %s) at t=%s%s",
						job, tb.fence, tb.id, tb.via, w.rel(tb.at), ta.fence, ta.id, ta.via, w.rel(ta.at), w.lossesBetween(ta.at, tb.at))
					reported++
				}
			}
		}
	}

	// "missed: not claimed before its starting deadline" only once the
	// deadline passed on the store's clock.
	for id, rs := range o.records {
		for _, r := range rs {
			if r.Decision == scheduler.Missed && strings.Contains(r.Error, "starting deadline") && !r.FinishedAt.IsZero() &&
				r.FinishedAt.Before(r.ScheduledAt.Add(deadline[r.Job])) {
				add(invMissedOnStore, id, "run %s recorded missed by %s at t=%s, %s before its starting deadline on the store's clock",
					id, r.Replica, w.rel(r.FinishedAt), r.ScheduledAt.Add(deadline[r.Job]).Sub(r.FinishedAt))
			}
		}
	}

	// No scheduled or catch-up run is granted while its job is paused. A
	// grant answered again (a retried claim) was made when first answered.
	firstGrant := map[string]bool{}
	for _, g := range o.grants {
		if strings.Contains(g.id, "@manual-") || firstGrant[g.id+"|"+g.owner] {
			continue
		}
		firstGrant[g.id+"|"+g.owner] = true
		paused := false
		var since time.Time
		for _, p := range o.pauses[g.job] {
			if p.at.After(g.at) {
				break
			}
			paused, since = p.on, p.at
		}
		// A pause the store lost with its data is no pause.
		if paused && g.at.Sub(since) > 100*time.Millisecond && !o.lossBetween(since, g.at, false) {
			add(invPausedNoStart, g.id, "run %s granted (%s, %s) at t=%s while its job was paused (since t=%s)",
				g.id, g.via, g.in, w.rel(g.at), w.rel(since))
		}
	}

	vs = append(vs, w.checkLeases()...)
	vs = append(vs, w.checkBackfill()...)

	// Calm liveness: in the settle period every replica is up and nothing
	// fails, so every instant is decided, and not missed for want of a
	// claim.
	from, to := w.start.Add(simFaultsUntil+20*time.Second), w.start.Add(simLength-20*time.Second)
	for _, sj := range w.plan.table(w.plan.final) {
		ids, err := engine.Instants(sj.Job, w.plan.skew, from, to)
		if err != nil {
			add(invLiveness, "", "job %s: %v", sj.Name, err)
			continue
		}
		for _, id := range ids {
			rs := o.records[id]
			if len(rs) == 0 {
				add(invLiveness, id, "run %s (settle period, every replica up) has no record", id)
				continue
			}
			for _, r := range rs {
				if r.Decision == scheduler.Missed && strings.Contains(r.Error, "starting deadline") {
					add(invLiveness, id, "run %s (settle period, every replica up) recorded missed by %s: %s", id, r.Replica, r.Error)
				}
			}
		}
	}
	vs = append(vs, w.checkNotify()...)
	sort.SliceStable(vs, func(a, b int) bool { return vs[a].invariant < vs[b].invariant })
	return vs
}

// simSpan is one span of a lease's validity on the store's clock.
type simSpan struct {
	l    *simLease
	from time.Time
	to   time.Time
}

// checkLeases checks the leases the store granted: per job never more than
// concurrency valid at once on the store's clock (holders-within-concurrency);
// per (job, slot) never two at once, and tokens that rise in order of grant
// and, as the jobs saw them, in order of start (slot-tokens-rise: a sink
// that keeps the highest token per slot then refuses exactly that slot's
// stale holders). Called with w.mu held.
func (w *simWorld) checkLeases() []simViolation {
	o := &w.obs
	var vs []simViolation
	add := func(inv, run, format string, args ...any) {
		vs = append(vs, simViolation{invariant: inv, run: run, detail: fmt.Sprintf(format, args...)})
	}
	// While two tables are live the limits are the largest in force.
	limit := map[string]int{}
	for _, j := range w.plan.allJobs() {
		limit[j.Name] = w.plan.limit(j.Name)
	}
	// Each lease's spans, cut and merged: a renewal overlapping the span
	// it extends is one validity.
	byJob := map[string][]simSpan{}
	bySlot := map[string][]simSpan{}
	for _, l := range o.leaseN {
		spans := slices.Clone(l.spans)
		sort.Slice(spans, func(a, b int) bool { return spans[a][0].Before(spans[b][0]) })
		var merged []simSpan
		for _, sp := range spans {
			if !sp[1].After(sp[0]) {
				continue
			}
			if n := len(merged); n > 0 && !sp[0].After(merged[n-1].to) {
				if sp[1].After(merged[n-1].to) {
					merged[n-1].to = sp[1]
				}
				continue
			}
			merged = append(merged, simSpan{l: l, from: sp[0], to: sp[1]})
		}
		byJob[l.job] = append(byJob[l.job], merged...)
		k := fmt.Sprintf("%s|%d", l.job, max(1, l.slot))
		bySlot[k] = append(bySlot[k], merged...)
	}
	// overlaps reports, at most three times per key, an instant at which
	// more than n of spans are valid.
	overlaps := func(inv, what string, n int, spans []simSpan) {
		sort.Slice(spans, func(a, b int) bool { return spans[a].from.Before(spans[b].from) })
		reported := 0
		for i, s := range spans {
			var on []simSpan
			for _, t := range spans[:i+1] {
				if !t.from.After(s.from) && t.to.After(s.from) {
					on = append(on, t)
				}
			}
			if len(on) <= n || reported >= 3 {
				continue
			}
			reported++
			var ds []string
			first := s.from
			for _, t := range on {
				ds = append(ds, fmt.Sprintf("%s (%s, slot %d, fence %d, granted t=%s, valid t=%s..t=%s)",
					t.l.id, t.l.in, max(1, t.l.slot), t.l.fence, w.rel(t.l.at), w.rel(t.from), w.rel(t.to)))
				if t.l.at.Before(first) {
					first = t.l.at
				}
			}
			add(inv, s.l.id, "%s: at t=%s the store holds %d valid leases (at most %d): %s%s",
				what, w.rel(s.from), len(on), n, strings.Join(ds, "; "), w.lossesBetween(first, s.from))
		}
	}
	for _, job := range slices.Sorted(maps.Keys(byJob)) {
		overlaps(invHolders, fmt.Sprintf("job %s (concurrency %d)", job, limit[job]), limit[job], byJob[job])
	}
	// A run of a pooled job holds its pool's slot under the same lease.
	byPool := map[string][]simSpan{}
	poolSize, members := w.plan.poolSizes()
	for p, names := range members {
		for _, name := range names {
			byPool[p] = append(byPool[p], byJob[name]...)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(byPool)) {
		overlaps(invPoolLimit, fmt.Sprintf("pool %s (size %d)", p, poolSize[p]), poolSize[p], byPool[p])
	}
	for _, k := range slices.Sorted(maps.Keys(bySlot)) {
		job, slot, _ := strings.Cut(k, "|")
		overlaps(invSlotTokens, fmt.Sprintf("job %s slot %s", job, slot), 1, bySlot[k])
	}

	// Per (job, slot), the token of each grant is above the tokens of
	// the slot's earlier grants — unless the store lost the job's state
	// while every replica was down (nobody remembers the old tokens).
	grants := map[string][]*simLease{}
	for _, l := range o.leaseN {
		k := fmt.Sprintf("%s|%d", l.job, max(1, l.slot))
		grants[k] = append(grants[k], l)
	}
	for _, k := range slices.Sorted(maps.Keys(grants)) {
		var top *simLease
		for _, l := range grants[k] {
			if top != nil && l.fence <= top.fence && l.at.After(top.at) && !o.lossBetween(top.at, l.at, true) {
				add(invSlotTokens, l.id, "slot %s: %s granted token %d (%s) at t=%s after %s token %d (%s) at t=%s%s",
					k, l.id, l.fence, l.in, w.rel(l.at), top.id, top.fence, top.in, w.rel(top.at), w.lossesBetween(top.at, l.at))
			}
			if top == nil || l.fence > top.fence {
				top = l
			}
		}
	}

	// As the jobs saw it: per (job, slot), an attempt that starts after
	// another has a larger token — unless its replica was killed or
	// frozen since its run was granted (a stale holder, which is what the
	// token is for: the sink refuses it), or every replica was down while
	// the store lost the job's state.
	granted := map[string]time.Time{}
	for _, l := range o.leaseN {
		k := fmt.Sprintf("%s|%s", l.id, l.in)
		if t, ok := granted[k]; !ok || l.at.Before(t) {
			granted[k] = l.at
		}
	}
	slotOf := map[string]int{}
	for _, l := range o.leaseN {
		slotOf[fmt.Sprintf("%s|%s", l.id, l.in)] = max(1, l.slot)
	}
	// staleOnArrival: the store had ended the lease (replaced it,
	// overlap: replace) before the answer that granted it reached its
	// holder, come late (seeds 105, 153, 205: every answer to the replica
	// 2.4-3.6 s late). Within the lease as its holder measures it, from
	// when it sent the claim, the holder cannot know; it starts the run
	// and learns of the replace at its first renewal. That stale holder is
	// what the token is for: a sink refuses it.
	staleOnArrival := map[string]bool{}
	for _, l := range o.leaseN {
		heard, ok := o.heard[l.id+"|"+l.owner]
		if !ok || len(l.spans) == 0 {
			continue
		}
		var end time.Time
		for _, sp := range l.spans {
			if !sp[0].After(heard) && sp[1].After(end) {
				end = sp[1]
			}
		}
		if !end.IsZero() && !end.After(heard) {
			staleOnArrival[fmt.Sprintf("%s|%s", l.id, l.in)] = true
		}
	}
	// replacedAt: when the store replaced a run (overlap: replace), its
	// record's end. An attempt its holder starts after that, before its
	// next renewal tells it so, is a stale holder too (seed 8015: a
	// retry's attempt token, issued before the replace, answered 4 s late,
	// after it; the holder's last renewal was still within its lease).
	replacedAt := map[string]time.Time{}
	for id, rs := range o.records {
		for _, r := range rs {
			if r.Outcome == scheduler.Replaced && !r.FinishedAt.IsZero() {
				replacedAt[id] = r.FinishedAt
			}
		}
	}
	seen := map[string][]simAttempt{}
	wrong := 0
	for _, a := range o.attempts {
		// The slot a job is told (SOLOCRON_SLOT) is the one the store
		// gave its run.
		if want, ok := slotOf[fmt.Sprintf("%s|%s", a.id, a.in)]; ok && max(1, a.slot) != want && wrong < 3 {
			wrong++
			add(invSlotTokens, a.id, "%s attempt %d on %s told slot %d; the store granted it slot %d", a.id, a.attempt, a.in, a.slot, want)
		}
		k := fmt.Sprintf("%s|%d", a.job, max(1, a.slot))
		seen[k] = append(seen[k], a)
	}
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		as := seen[k]
		sort.SliceStable(as, func(a, b int) bool { return as[a].start.Before(as[b].start) })
		var top *simAttempt
		reported := 0
		for i := range as {
			a := &as[i]
			if top != nil && a.token <= top.token && a.start.After(top.start) && reported < 3 {
				from, ok := granted[fmt.Sprintf("%s|%s", a.id, a.in)]
				if !ok {
					from = top.start
				}
				if !o.impaired(a.in, from, a.start) && !o.lossBetween(top.start, a.start, true) && !staleOnArrival[fmt.Sprintf("%s|%s", a.id, a.in)] &&
					!w.replacedBefore(replacedAt, a) {
					reported++
					add(invSlotTokens, a.id, "slot %s: %s attempt %d started on %s at t=%s with token %d, after %s attempt %d (%s, t=%s) with token %d%s",
						k, a.id, a.attempt, a.in, w.rel(a.start), a.token, top.id, top.attempt, top.in, w.rel(top.start), top.token,
						// From the later attempt's grant, which may precede
						// the earlier one's start (seed 70311: granted
						// before a failover to a stale copy, started after
						// a run the copy granted).
						w.lossesBetween(earliest(from, top.start), a.start))
				}
			}
			if top == nil || a.token > top.token {
				top = a
			}
		}
	}
	return vs
}

// replacedBefore reports whether the store had replaced attempt a's run
// before a started: its holder, not told yet, is a stale holder.
func (w *simWorld) replacedBefore(replacedAt map[string]time.Time, a *simAttempt) bool {
	t, ok := replacedAt[a.id]
	return ok && !t.After(a.start)
}

// simForLoss reports whether a missed run's error is the store's answer
// after a loss (claim.lua: sure, or unsure whether the job was new).
func simForLoss(err string) bool {
	return strings.HasPrefix(err, simLossReason) || strings.HasPrefix(err, simUnsureReason)
}

// dropBackfillRerun drops from run id's grants m (by owner) the one grant a
// backfill made of a run that never started before: a backfill runs the
// instants of its range decided without starting — also a run recorded
// started -> missed, "never started" (its claim answered past its lease;
// seed 8061) — under their own run ids. Only when every earlier decision
// of the run was closed without starting before the backfill's grant;
// that it had not started is also backfill-runs-undecided's to check.
func (w *simWorld) dropBackfillRerun(id string, m map[string]simGrant) {
	o := &w.obs
	var bf *simGrant
	for _, g := range m {
		if strings.HasSuffix(g.via, fmt.Sprintf(" %c", store.RunBackfill)) {
			if bf != nil {
				return // two backfill grants: both stay
			}
			bf = &g
		}
	}
	if bf == nil {
		return
	}
	var before []scheduler.Run
	for _, r := range o.records[id] {
		if r.Kind != scheduler.KindBackfill {
			before = append(before, r)
		}
	}
	if len(before) == 0 {
		return
	}
	for _, r := range before {
		if !simNeverStarted(r) || r.FinishedAt.IsZero() || r.FinishedAt.After(bf.at) {
			return
		}
	}
	delete(m, bf.owner)
}

// simNeverStarted reports whether r is a decision without a start: missed
// or skipped, or started -> missed ("never started": its claim came back
// past its lease).
func simNeverStarted(r scheduler.Run) bool {
	return r.Decision != scheduler.Started || r.Outcome == scheduler.Missed
}

// simBackfillReruns drops the decisions a backfill was for: a backfill runs
// the instants of its range that never started (recorded missed or
// skipped_*), under their own run ids (README, "Backfill"), so such a run
// has its first decision and then the backfill's start. Anything else —
// two starts, a start then a skip, two never-started decisions without a
// backfill's start after them — stays two decisions.
func simBackfillReruns(rs []scheduler.Run) []scheduler.Run {
	var bf, other []scheduler.Run
	for _, r := range rs {
		if r.Kind == scheduler.KindBackfill && r.Decision == scheduler.Started {
			bf = append(bf, r)
		} else {
			other = append(other, r)
		}
	}
	if len(bf) != 1 {
		return rs
	}
	for _, r := range other {
		if !simNeverStarted(r) || r.Kind == scheduler.KindBackfill {
			return rs
		}
	}
	return bf
}

// earliest is the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// byBackfill says " (backfill)" when run id's grant with token fence was a
// backfill's.
func (w *simWorld) byBackfill(id string, fence int64) string {
	for _, g := range w.obs.grants {
		if g.id == id && g.fence == fence && fence != 0 && strings.HasSuffix(g.via, fmt.Sprintf(" %c", store.RunBackfill)) {
			return " (backfill)"
		}
	}
	return ""
}
