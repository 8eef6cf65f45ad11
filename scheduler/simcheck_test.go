package scheduler

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// What the seeded fault search saw, and the invariants it checks on it
// (docs/reliability.md lists them with the defects they catch).

// Invariant names, as reports and the known-failure list spell them.
const (
	invOneStart      = "one-start-per-run"      // no run id starts twice (ledger)
	invOneGrant      = "one-grant-per-run"      // the store grants a run to one claim only
	invOneRecord     = "one-decision-per-run"   // a run has one decision record, whatever the store lost
	invNoEmptyField  = "no-empty-field"         // every record says its decision, outcome and replica
	invLeaseLostRan  = "lease-lost-means-ran"   // started -> lease_lost only for a run that ran (or whose replica died/froze)
	invManualOnce    = "manual-runs-once"       // every manual request runs, once
	invFenceRises    = "fencing-tokens-rise"    // per job, each token issued is above every earlier one
	invMissedOnStore = "missed-by-store-clock"  // "missed: starting deadline" only once the deadline passed on the store's clock
	invPausedNoStart = "paused-job-starts-none" // no scheduled or catch-up run is granted while its job is paused
	invLiveness      = "decided-when-calm"      // with every replica up and the store answering, every instant is decided, not missed
	invPoolLimit     = "pool-limit-kept"        // never more runs hold a slot of a pool, their leases valid on the store's clock, than it has
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
// it lost its data (claim.lua); simLossNoticed bounds how long after a loss
// a manual request may still be recorded so (until a replica notices it).
const (
	simLossReason  = "Redis lost data"
	simLossNoticed = 10 * time.Second
)

// firstNoted and lastNoted are the first and last times run id was seen:
// noted at the store, or in one of its records rs.
func (w *simWorld) firstNoted(id string, rs []Run) time.Time {
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

func (w *simWorld) lastNoted(id string, rs []Run) time.Time {
	t := w.obs.span[id][1]
	for _, r := range rs {
		if r.FinishedAt.After(t) {
			t = r.FinishedAt
		}
	}
	return t
}

type simObs struct {
	events   []simEvent
	life     []string
	faults   []string
	runs     map[string][]string     // run id -> what the store decided about it, in order
	span     map[string][2]time.Time // run id -> first and last time it was noted
	grants   []simGrant
	tokens   []simToken
	records  map[string][]Run // run id -> its distinct records
	manual   []simManual
	pauses   map[string][]simPause
	losses   []simLoss
	killed   map[*simInc]time.Time
	stopped  map[*simInc]time.Time  // graceful stops (SIGTERM)
	frozen   map[int][][2]time.Time // replica -> freeze spans (end zero: still frozen)
	poolOver []string               // samples of a pool holding more than its size
}

func newSimObs() simObs {
	return simObs{runs: map[string][]string{}, span: map[string][2]time.Time{}, records: map[string][]Run{}, pauses: map[string][]simPause{},
		killed: map[*simInc]time.Time{}, stopped: map[*simInc]time.Time{}, frozen: map[int][][2]time.Time{}}
}

// addRecord keeps r unless an identical decision of its run is kept: a
// record read again (or closed since) is the same decision.
func (o *simObs) addRecord(r Run) {
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

func (w *simWorld) noteClaim(in *simInc, r *claimReq, res claimRes) {
	line := fmt.Sprintf("%s claim kind=%c -> %s", in, r.kind, res.status)
	switch res.status {
	case "started":
		line += fmt.Sprintf(" fence=%d", res.fence)
	case "decided":
		line += fmt.Sprintf(" (%s by %s)", res.outcome, res.replica)
	case "refused":
		line += " (" + res.reason + ")"
	}
	w.notef(r.id, "%s", line)
	if res.status == "started" {
		w.noteGrant(in, r, res.fence, fmt.Sprintf("claim %c", r.kind))
	}
}

func (w *simWorld) noteAdmit(in *simInc, r *claimReq, status answer, n int64) {
	if status == "waiting" {
		return // polled every 100ms: too many to trace
	}
	w.notef(r.id, "%s admit -> %s %d", in, status, n)
	if status == "started" {
		w.noteGrant(in, r, n, fmt.Sprintf("admit %c", r.kind))
	}
}

func (w *simWorld) noteGrant(in *simInc, r *claimReq, fence int64, via string) {
	w.mu.Lock()
	w.obs.grants = append(w.obs.grants, simGrant{at: time.Now(), job: r.j.Name, id: r.id, owner: r.owner, fence: fence, in: in, via: via})
	w.mu.Unlock()
	w.noteToken(in, r.j.Name, r.id, fence, via)
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
	for _, j := range w.plan.jobs {
		deadline[j.Name] = j.withDefaults().StartingDeadline
	}

	// At most one start per run id.
	for id, idx := range firsts {
		if len(idx) > 1 {
			var on []string
			for _, i := range idx {
				on = append(on, fmt.Sprintf("%s token %d at t=%s", entries[i].Replica, entries[i].Token, w.rel(entries[i].Start)))
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
			var kept []Run
			for _, r := range rs {
				if !(r.Decision == Missed && strings.HasPrefix(r.Error, simLossReason) &&
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
			var ds []string
			for _, r := range rs {
				ds = append(ds, fmt.Sprintf("%s->%s by %s fence %d", r.Decision, r.Outcome, r.Replica, r.FencingToken))
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
			if r.Decision != Started || r.Outcome != LeaseLost || len(firsts[id]) > 0 {
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
			if g != nil && g.at.Add(claimTimeout).After(end) {
				// Killed or frozen before the call the store granted it
				// could time out, its replica never learnt that the run
				// was its own, nor could it say it never started it.
				end = g.at.Add(claimTimeout)
			}
			if g != nil && o.impaired(g.in, g.at, end) {
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
		}
		if o.lossBetween(m.at, end, false) {
			continue // the store lost the request with its data
		}
		if first != nil && o.impaired(first.in, first.at, w.start.Add(simLength)) {
			continue // granted to a replica that was killed or frozen
		}
		lossAnswer := false
		for _, r := range o.records[m.id] {
			if r.Decision == Missed && strings.HasPrefix(r.Error, simLossReason) {
				lossAnswer = true
			}
		}
		if lossAnswer && o.lossBetween(m.at.Add(-simLossNoticed), w.start.Add(simLength), false) {
			continue // made before the store noticed its loss: recorded missed, as documented
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
			if r.Decision == Missed && strings.Contains(r.Error, "starting deadline") && !r.FinishedAt.IsZero() &&
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

	// Calm liveness: in the settle period every replica is up and nothing
	// fails, so every instant is decided, and not missed for want of a
	// claim.
	from, to := w.start.Add(simFaultsUntil+20*time.Second), w.start.Add(simLength-20*time.Second)
	for _, sj := range w.plan.jobs {
		j, err := newJobState(sj.Job.withDefaults(), "", &memo{}, w.plan.skew)
		if err != nil {
			add(invLiveness, "", "job %s: %v", sj.Name, err)
			continue
		}
		for t := j.sched.Next(from.Add(-time.Nanosecond)); !t.IsZero() && !j.fire(t).After(to); t = j.sched.Next(t) {
			id := runID(j.Name, t)
			rs := o.records[id]
			if len(rs) == 0 {
				add(invLiveness, id, "run %s (settle period, every replica up) has no record", id)
				continue
			}
			for _, r := range rs {
				if r.Decision == Missed && strings.Contains(r.Error, "starting deadline") {
					add(invLiveness, id, "run %s (settle period, every replica up) recorded missed by %s: %s", id, r.Replica, r.Error)
				}
			}
		}
	}
	for _, s := range o.poolOver {
		add(invPoolLimit, "", "%s", s)
	}
	sort.SliceStable(vs, func(a, b int) bool { return vs[a].invariant < vs[b].invariant })
	return vs
}
