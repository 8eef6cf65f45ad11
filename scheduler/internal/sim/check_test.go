package sim

import (
	"fmt"
	"github.com/solocron/solocron/scheduler"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/testkit"
)

// The search's checker on hand-made observations: a handed-back grant is
// not a second grant, and leases that overlap on the store's clock beyond
// a job's concurrency (or on one slot) are reported.
func TestSimCheckGrantsAndLeases(t *testing.T) {
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	world := func() *simWorld {
		return &simWorld{t: t, plan: &simPlan{jobs: []simJob{{Job: scheduler.Job{Name: "j", Schedule: "@every 1h", Concurrency: 1}}}},
			start: t0, ledger: testkit.NewLedger(), obs: newSimObs()}
	}
	count := func(vs []simViolation, inv string) int {
		n := 0
		for _, v := range vs {
			if v.invariant == inv {
				n++
			}
		}
		return n
	}
	r0, r1 := &simInc{r: &simReplica{idx: 0}, n: 1}, &simInc{r: &simReplica{idx: 1}, n: 1}
	// leaseLost is a world in which run j@0s was granted to r0 (owner o0,
	// fence 7) and closed lease_lost by the cluster at 3 s.
	leaseLost := func() (*simWorld, string) {
		w := world()
		id := "j@2000-01-01T00:00:00Z"
		w.obs.grants = []simGrant{{at: t0, job: "j", id: id, owner: "o0", fence: 7, in: r0, via: "claim s"}}
		w.obs.records[id] = []scheduler.Run{{ID: id, Job: "j", Decision: scheduler.Started, Outcome: scheduler.LeaseLost, Replica: "r0", FencingToken: 7,
			ScheduledAt: t0, FinishedAt: t0.Add(3 * time.Second)}}
		return w, id
	}
	lease := func(w *simWorld, in *simInc, id, owner string, slot int, fence int64, from, to time.Duration) *simLease {
		l := &simLease{job: "j", id: id, owner: owner, in: in, slot: slot, fence: fence, at: t0.Add(from),
			spans: [][2]time.Time{{t0.Add(from), t0.Add(to)}}}
		w.obs.leases[id+"|"+owner] = l
		w.obs.leaseN = append(w.obs.leaseN, l)
		return l
	}

	// One manual run granted to r0 (then handed back) and to r1.
	for _, handed := range []bool{false, true} {
		w := world()
		id := "j@manual-1"
		w.obs.grants = []simGrant{{at: t0, job: "j", id: id, owner: "o0", fence: 1, in: r0, via: "admit m"},
			{at: t0.Add(time.Second), job: "j", id: id, owner: "o1", fence: 2, in: r1, via: "claim m"}}
		if handed {
			w.obs.handed[id+"|o0"] = t0.Add(500 * time.Millisecond)
		}
		if got, want := count(w.check(), invOneGrant), map[bool]int{false: 1, true: 0}[handed]; got != want {
			t.Errorf("handed back %v: %d %s violations, want %d", handed, got, invOneGrant, want)
		}
	}

	// Two leases of a concurrency-1 job: overlapping, then one ended
	// (closed by its holder) before the other was granted.
	for _, ended := range []bool{false, true} {
		w := world()
		a := lease(w, r0, "j@a", "o0", 1, 10, 0, 5*time.Second)
		lease(w, r1, "j@b", "o1", 1, 20, 2*time.Second, 7*time.Second)
		if ended {
			a.cut(t0.Add(2 * time.Second))
		}
		vs := w.check()
		want := map[bool]int{false: 1, true: 0}[ended]
		if got := count(vs, invHolders); got != want {
			t.Errorf("ended %v: %d %s violations, want %d: %v", ended, got, invHolders, want, vs)
		}
		if got := count(vs, invSlotTokens); got != want {
			t.Errorf("ended %v: %d %s violations, want %d: %v", ended, got, invSlotTokens, want, vs)
		}
	}

	// As the jobs saw it: a run granted at 0 s (token 10) and replaced at
	// 2 s by one with token 20 that starts at once; the first starts at
	// 3 s. A break of slot-tokens-rise — unless the answer that granted
	// the first reached its holder only at 3 s, after the replace: a
	// stale holder, which its token fences (seeds 105, 153, 205).
	for _, late := range []bool{false, true} {
		w := world()
		a := lease(w, r0, "j@a", "o0", 1, 10, 0, 5*time.Second)
		a.cut(t0.Add(2 * time.Second))
		lease(w, r1, "j@b", "o1", 1, 20, 2*time.Second, 7*time.Second)
		heard := t0
		if late {
			heard = t0.Add(3 * time.Second)
		}
		w.obs.heard["j@a|o0"] = heard
		w.obs.heard["j@b|o1"] = t0.Add(2 * time.Second)
		w.obs.attempts = []simAttempt{{job: "j", id: "j@b", attempt: 1, slot: 1, token: 20, in: r1, start: t0.Add(2 * time.Second)},
			{job: "j", id: "j@a", attempt: 1, slot: 1, token: 10, in: r0, start: t0.Add(3 * time.Second)}}
		want := map[bool]int{false: 1, true: 0}[late]
		if vs := w.check(); count(vs, invSlotTokens) != want {
			t.Errorf("grant heard late %v: %d %s violations, want %d: %v", late, count(vs, invSlotTokens), invSlotTokens, want, vs)
		}
	}

	// The same, the first run's grant heard at once, but its retry's
	// attempt 2 (token 15, issued at 1 s, answered late) starts at 3 s,
	// after j@b's start with token 20: a break — unless the store had
	// replaced the run at 2 s (its record says so) before the attempt
	// started: a stale holder its next renewal would tell (seed 8015).
	for _, replaced := range []bool{false, true} {
		w := world()
		lease(w, r0, "j@a", "o0", 1, 10, 0, 5*time.Second).cut(t0.Add(2 * time.Second))
		lease(w, r1, "j@b", "o1", 1, 20, 2*time.Second, 7*time.Second)
		w.obs.heard["j@a|o0"] = t0
		w.obs.heard["j@b|o1"] = t0.Add(2 * time.Second)
		w.obs.attempts = []simAttempt{{job: "j", id: "j@a", attempt: 1, slot: 1, token: 10, in: r0, start: t0},
			{job: "j", id: "j@b", attempt: 1, slot: 1, token: 20, in: r1, start: t0.Add(2 * time.Second)},
			{job: "j", id: "j@a", attempt: 2, slot: 1, token: 15, in: r0, start: t0.Add(3 * time.Second)}}
		if replaced {
			w.obs.records["j@a"] = []scheduler.Run{{ID: "j@a", Job: "j", Decision: scheduler.Started, Outcome: scheduler.Replaced, Replica: "r0", FencingToken: 15,
				ScheduledAt: t0, FinishedAt: t0.Add(2 * time.Second)}}
		}
		want := map[bool]int{false: 1, true: 0}[replaced]
		if vs := w.check(); count(vs, invSlotTokens) != want {
			t.Errorf("replaced before the attempt %v: %d %s violations, want %d: %v", replaced, count(vs, invSlotTokens), invSlotTokens, want, vs)
		}
	}

	// A run granted at 0 s to a replica stopping since -1 s, never run,
	// closed lease_lost by the cluster at 3 s: a break of
	// lease-lost-means-ran — unless the replica was gone (its shutdown
	// grace over) before the call could time out (seed 221).
	for _, gone := range []bool{false, true} {
		w, _ := leaseLost()
		w.obs.stopped[r0] = t0.Add(-time.Second)
		if gone {
			w.obs.exited[r0] = t0.Add(4 * time.Second)
		}
		want := map[bool]int{false: 1, true: 0}[gone]
		if vs := w.check(); count(vs, invLeaseLostRan) != want {
			t.Errorf("replica gone %v: %d %s violations, want %d: %v", gone, count(vs, invLeaseLostRan), invLeaseLostRan, want, vs)
		}
	}

	// The same run, its replica stopping and alive all along: the store
	// ran its claim and, at the same instant, the claim it sent once more
	// (seed 8036: a stalled store ran both after the calls gave up). No
	// answer heard: it never learnt the run was its own. One ask only (no
	// ask once more), or an answer heard, is a break.
	for _, c := range []struct {
		name  string
		asks  int
		heard bool
		want  int
	}{{"both asks lost", 2, false, 0}, {"asked once", 1, false, 1}, {"answer heard", 2, true, 1}} {
		w := world()
		id := "j@2000-01-01T00:00:00Z"
		for range c.asks {
			w.obs.grants = append(w.obs.grants, simGrant{at: t0, job: "j", id: id, owner: "o0", fence: 7, in: r0, via: "claim s"})
		}
		w.obs.records[id] = []scheduler.Run{{ID: id, Job: "j", Decision: scheduler.Started, Outcome: scheduler.LeaseLost, Replica: "r0", FencingToken: 7,
			ScheduledAt: t0, FinishedAt: t0.Add(3 * time.Second)}}
		w.obs.stopped[r0] = t0.Add(-time.Second)
		w.obs.exited[r0] = t0.Add(time.Minute)
		if c.heard {
			w.obs.heard[id+"|o0"] = t0
		}
		if vs := w.check(); count(vs, invLeaseLostRan) != c.want {
			t.Errorf("%s: %d %s violations, want %d: %v", c.name, count(vs, invLeaseLostRan), invLeaseLostRan, c.want, vs)
		}
	}

	// The same run, its replica up, its holder's "never started" close
	// reaching the store at 5 s: a break — unless the store lost its data
	// at 4 s, with the record (seed 27).
	for _, lost := range []bool{false, true} {
		w, id := leaseLost()
		w.obs.never[id+"|o0"] = t0.Add(5 * time.Second)
		if lost {
			w.obs.losses = []simLoss{{at: t0.Add(4 * time.Second), what: "flush"}}
		}
		want := map[bool]int{false: 1, true: 0}[lost]
		if vs := w.check(); count(vs, invLeaseLostRan) != want {
			t.Errorf("record lost %v: %d %s violations, want %d: %v", lost, count(vs, invLeaseLostRan), invLeaseLostRan, want, vs)
		}
	}

	// The same run, granted at 0 s to a replica up (not stopping), the
	// claim call's answer late past its deadline (back at 5 s without it),
	// the replica asking about the run again every second until it exits at
	// 12 s, every ask refused or lost (seed 20093: a lossy link, then an
	// outage): it never learnt the run was its own — no break. An answered
	// ask, a gap of 8 s between asks (it stopped asking), asks that end
	// long before it exits, or a replica that never exits, is a break.
	for _, c := range []struct {
		name     string
		asks     []time.Duration
		answered int // index of an answered ask, or -1
		exit     time.Duration
		want     int
	}{
		{"every ask failed", []time.Duration{5, 6, 7, 8, 9, 10, 11}, -1, 12, 0},
		{"an ask answered", []time.Duration{5, 6, 7, 8, 9, 10, 11}, 3, 12, 1},
		{"stopped asking", []time.Duration{5, 6, 14, 15}, -1, 16, 1},
		{"asks ended long before it exited", []time.Duration{5, 6, 7}, -1, 30, 1},
		{"never exited", []time.Duration{5, 6, 7, 8, 9, 10, 11}, -1, 0, 1},
	} {
		w, id := leaseLost()
		for i, a := range c.asks {
			w.obs.asks[id+"|o0"] = append(w.obs.asks[id+"|o0"], simAsk{at: t0.Add(a * time.Second), answered: i == c.answered})
		}
		if c.exit > 0 {
			w.obs.exited[r0] = t0.Add(c.exit * time.Second)
		}
		if vs := w.check(); count(vs, invLeaseLostRan) != c.want {
			t.Errorf("%s: %d %s violations, want %d: %v", c.name, count(vs, invLeaseLostRan), invLeaseLostRan, c.want, vs)
		}
	}

	// The same run, closed lease_lost at 3 s, its last record the store's
	// missed at 9 s (its holder asked again): a break — unless the store
	// lost its data in between, with the lease_lost record (seed 20354: the
	// missed record is what the loss left).
	for _, lost := range []bool{false, true} {
		w, id := leaseLost()
		w.obs.records[id] = append(w.obs.records[id], scheduler.Run{ID: id, Job: "j", Decision: scheduler.Missed, Outcome: scheduler.Missed, Replica: "r0", ScheduledAt: t0, FinishedAt: t0.Add(9 * time.Second),
			Error: simLossReason})
		if lost {
			w.obs.losses = []simLoss{{at: t0.Add(4 * time.Second), what: "flush"}}
		}
		want := map[bool]int{false: 1, true: 0}[lost]
		if vs := w.check(); count(vs, invLeaseLostRan) != want {
			t.Errorf("missed after a loss %v: %d %s violations, want %d: %v", lost, count(vs, invLeaseLostRan), invLeaseLostRan, want, vs)
		}
	}

	// A manual request made in the calm period, never granted, waiting its
	// turn: not run is a break of manual-runs-once — unless it was handed
	// back to the pending requests when every replica stopped at the end,
	// the job's slot held by other runs all along but for short gaps (the
	// admission of the next waiter; seed 8019). A long free gap, or no
	// hand-back, is still a break.
	for _, c := range []struct {
		name   string
		handed bool
		gap    time.Duration
		want   int
	}{{"handed back, busy", true, 200 * time.Millisecond, 0}, {"not handed back", false, 200 * time.Millisecond, 1},
		{"handed back, slot free 5s", true, 5 * time.Second, 1}} {
		w := world()
		calm := simFaultsUntil
		id := "j@manual-9"
		w.obs.manual = []simManual{{id: id, job: "j", at: t0.Add(calm + time.Second)}}
		for i, from := 0, calm-2*time.Second; from < simLength; i++ {
			to := from + 6*time.Second
			lease(w, r0, fmt.Sprintf("j@run%d", i), fmt.Sprintf("o%d", i), 1, int64(10+i), from, to)
			from = to + c.gap
		}
		if c.handed {
			w.obs.handed[id+"|om"] = t0.Add(simLength)
		}
		if vs := w.check(); count(vs, invManualOnce) != c.want {
			t.Errorf("%s: %d %s violations, want %d: %v", c.name, count(vs, invManualOnce), invManualOnce, c.want, vs)
		}
	}

	// A manual request triggered at 10 s, admitted at 11 s to a replica that
	// never heard the answer, never run: a break — unless the store lost
	// its data before the holder could ask again (a flush at 13 s; seed
	// 70185), when the request went with it. A loss long after (30 s), or
	// after the holder heard the grant, is still a break.
	for _, c := range []struct {
		name  string
		loss  time.Duration
		heard bool
		want  int
	}{{"lost 2 s after an unheard grant", 13 * time.Second, false, 0}, {"lost 19 s after", 30 * time.Second, false, 1},
		{"lost after the grant was heard", 13 * time.Second, true, 1}} {
		w := world()
		id := "j@manual-7"
		w.obs.manual = []simManual{{id: id, job: "j", at: t0.Add(10 * time.Second)}}
		w.obs.grants = []simGrant{{at: t0.Add(11 * time.Second), job: "j", id: id, owner: "om", fence: 3, in: r0, via: "admit m"}}
		w.obs.losses = []simLoss{{at: t0.Add(c.loss), what: "flush"}}
		if c.heard {
			w.obs.heard[id+"|om"] = t0.Add(11 * time.Second)
		}
		if vs := w.check(); count(vs, invManualOnce) != c.want {
			t.Errorf("%s: %d %s violations, want %d: %v", c.name, count(vs, invManualOnce), invManualOnce, c.want, vs)
		}
	}

	// A manual request triggered 11.3 s after a failover to a stale copy,
	// recorded missed for the loss: made before the loss was noticed
	// (documented) — but only because the store stalled 8 s in between,
	// so no replica's call noticed it sooner (seed 94444). Without the
	// stall the loss is noticed within simLossNoticed: a break.
	for _, stalled := range []bool{false, true} {
		w := world()
		id := "j@manual-3"
		loss := t0.Add(60 * time.Second)
		w.obs.manual = []simManual{{id: id, job: "j", at: loss.Add(11300 * time.Millisecond)}}
		w.obs.losses = []simLoss{{at: loss, what: "failover to the copy of t=50s"}}
		w.obs.records[id] = []scheduler.Run{{ID: id, Job: "j", Kind: scheduler.KindManual, Decision: scheduler.Missed, Outcome: scheduler.Missed,
			Replica: "r0", FinishedAt: loss.Add(12 * time.Second), Error: simLossReason + " (a failover)"}}
		if stalled {
			w.obs.events = []simEvent{{at: 62 * time.Second, kind: evStall, replica: -1, dur: 8 * time.Second}}
		}
		want := map[bool]int{false: 1, true: 0}[stalled]
		if vs := w.check(); count(vs, invManualOnce) != want {
			t.Errorf("store stalled %v: %d %s violations, want %d: %v", stalled, count(vs, invManualOnce), invManualOnce, want, vs)
		}
	}

	// A backfill asked at 125 s, none of its 2 instants decided at the
	// end: a break of backfill-decides-all — unless its job was paused in
	// the store at the end (a paused job's backfill waits), the pause
	// explained by the plan: the operator's resume at 34 s lost with the
	// store's data at 43 s (a failover to a copy taken while it was
	// paused; seed 8141). Paused with no explanation (a resume that did
	// not take) is still a break.
	for _, c := range []struct {
		name         string
		paused, loss bool
		want         int
	}{{"not paused", false, true, 1}, {"paused, resume lost", true, true, 0}, {"paused, resume kept", true, false, 1}} {
		w := world()
		w.plan.backfill = &simBackfill{job: "j", at: 5 * time.Second, span: 8 * time.Second, parallel: 1}
		w.obs.backfillAt = t0.Add(simFaultsUntil + 5*time.Second)
		w.obs.backfillEnd = &scheduler.Backfill{Total: 2}
		w.obs.backfillPaused = c.paused
		w.obs.pauses["j"] = []simPause{{on: true, at: t0.Add(17 * time.Second)}, {on: false, at: t0.Add(34 * time.Second)}}
		if c.loss {
			w.obs.losses = []simLoss{{at: t0.Add(43 * time.Second), what: "failover"}}
		}
		if vs := w.check(); count(vs, invBackfillAll) != c.want {
			t.Errorf("%s: %d %s violations, want %d: %v", c.name, count(vs, invBackfillAll), invBackfillAll, c.want, vs)
		}
	}

	// A scheduled run granted at 0 s, its claim answered past its lease,
	// recorded started -> missed, "never started", at 3 s; a backfill then
	// grants and starts it at 10 s: what a backfill is for, no second grant
	// nor second decision (seed 8061) — unless the first had run (ended
	// lease_lost), or the backfill's grant came before the first was
	// closed (two grants of a run in flight).
	for _, c := range []struct {
		name    string
		outcome scheduler.Outcome
		closed  time.Duration
		want    int
	}{{"never started", scheduler.Missed, 3 * time.Second, 0}, {"ran", scheduler.LeaseLost, 3 * time.Second, 1},
		{"granted before closed", scheduler.Missed, 12 * time.Second, 1}} {
		w := world()
		id := "j@2000-01-01T00:00:00Z"
		w.obs.grants = []simGrant{{at: t0, job: "j", id: id, owner: "o0", fence: 7, in: r0, via: "claim s"},
			{at: t0.Add(10 * time.Second), job: "j", id: id, owner: "o1", fence: 9, in: r1, via: "claim b"}}
		w.obs.records[id] = []scheduler.Run{{ID: id, Job: "j", Kind: scheduler.KindScheduled, Decision: scheduler.Started, Outcome: c.outcome, Replica: "r0", FencingToken: 7,
			ScheduledAt: t0, FinishedAt: t0.Add(c.closed), Error: "never started"},
			{ID: id, Job: "j", Kind: scheduler.KindBackfill, Decision: scheduler.Started, Outcome: scheduler.Succeeded, Replica: "r1", FencingToken: 9,
				ScheduledAt: t0, FinishedAt: t0.Add(11 * time.Second)}}
		vs := w.check()
		if got := count(vs, invOneGrant); got != c.want {
			t.Errorf("%s: %d %s violations, want %d: %v", c.name, got, invOneGrant, c.want, vs)
		}
		if got, want := count(vs, invOneRecord), map[bool]int{true: 0, false: 1}[c.outcome == scheduler.Missed]; got != want {
			t.Errorf("%s: %d %s violations, want %d: %v", c.name, got, invOneRecord, want, vs)
		}
	}

	// One slot's tokens must rise in order of grant.
	w := world()
	lease(w, r0, "j@a", "o0", 1, 20, 0, time.Second)
	lease(w, r1, "j@b", "o1", 1, 10, 2*time.Second, 3*time.Second)
	if got := count(w.check(), invSlotTokens); got != 1 {
		t.Errorf("a later grant with a lower token: %d %s violations, want 1", got, invSlotTokens)
	}
}

// The notification checks on hand-made observations: an event that says
// the opposite of its run's final record (lease_lost for a run recorded
// missed "never started"), a final record never
// delivered, and a delivery POSTed again after it was acknowledged and
// reported done are each reported; their correct counterparts are not.
func TestSimCheckNotifications(t *testing.T) {
	if simNotifyOff {
		t.Skip("SOLOCRON_SIM_NOTIFY=0")
	}
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	plan := &simPlan{seed: 1}
	for !plan.notifyOn() {
		plan.seed++
	}
	job := ""
	for _, name := range []string{"j", "k", "l", "m"} {
		if plan.notifies(name) {
			job = name
			break
		}
	}
	if job == "" {
		t.Fatalf("no job name subscribes under seed %d", plan.seed)
	}
	plan.jobs = []simJob{{Job: scheduler.Job{Name: job, Schedule: "@every 1h", Concurrency: 1}}}
	r0 := &simInc{r: &simReplica{idx: 0}, n: 1}
	count := func(vs []simViolation, inv string) int {
		n := 0
		for _, v := range vs {
			if v.invariant == inv {
				n++
			}
		}
		return n
	}
	id := job + "@2000-01-01T00:00:00Z"
	world := func(outcome scheduler.Outcome, why string) *simWorld {
		w := &simWorld{t: t, plan: plan, start: t0, ledger: testkit.NewLedger(), obs: newSimObs()}
		w.obs.notifySubs[job] = []time.Time{t0}
		w.obs.records[id] = []scheduler.Run{{ID: id, Job: job, Decision: scheduler.Started, Outcome: outcome, Replica: "r0", Error: why,
			FinishedAt: t0.Add(10 * time.Second)}}
		return w
	}
	post := func(w *simWorld, event string, at time.Duration, status int) {
		w.obs.posts = append(w.obs.posts, simPost{key: id + ":" + event, event: event, run: id, job: job, in: r0,
			at: t0.Add(at), queued: t0.Add(10 * time.Second), status: status})
	}

	for _, tc := range []struct {
		name    string
		outcome scheduler.Outcome
		posts   func(w *simWorld)
		inv     string
		want    int
	}{
		{"lease_lost event, record missed", scheduler.Missed, func(w *simWorld) { post(w, "lease_lost", 26*time.Second, 200); post(w, "missed", 27*time.Second, 200) }, invNotifyMatches, 1},
		{"missed event, record missed", scheduler.Missed, func(w *simWorld) { post(w, "missed", 11*time.Second, 200) }, invNotifyMatches, 0},
		{"recovered event, record succeeded", scheduler.Succeeded, func(w *simWorld) { post(w, "recovered", 11*time.Second, 200) }, invNotifyMatches, 0},
		{"failed record, no event", scheduler.Failed, func(w *simWorld) {}, invNotifyDelivered, 1},
		{"failed record, event refused then delivered", scheduler.Failed, func(w *simWorld) { post(w, "failed", 11*time.Second, 500); post(w, "failed", 13*time.Second, 200) }, invNotifyDelivered, 0},
		{"failed record, event only refused", scheduler.Failed, func(w *simWorld) { post(w, "failed", 11*time.Second, 500) }, invNotifyDelivered, 1},
		{"POSTed again after done", scheduler.Failed, func(w *simWorld) {
			post(w, "failed", 11*time.Second, 200)
			w.obs.notifyDone[id+":failed"] = t0.Add(12 * time.Second)
			post(w, "failed", 13*time.Second, 200)
		}, invNotifyOnce, 1},
		{"queued again after a loss took the first's record and queue", scheduler.Missed, func(w *simWorld) {
			post(w, "missed", 11*time.Second, 200)
			w.obs.losses = append(w.obs.losses, simLoss{at: t0.Add(11500 * time.Millisecond), what: "flush"})
			w.obs.notifyDone[id+":missed"] = t0.Add(12500 * time.Millisecond)
			post(w, "missed", 13*time.Second, 200)
			w.obs.posts[len(w.obs.posts)-1].queued = t0.Add(12 * time.Second)
		}, invNotifyOnce, 0},
		{"the first queueing POSTed late, after the second's done", scheduler.Missed, func(w *simWorld) {
			post(w, "missed", 12500*time.Millisecond, 200)
			w.obs.posts[len(w.obs.posts)-1].queued = t0.Add(12 * time.Second)
			w.obs.losses = append(w.obs.losses, simLoss{at: t0.Add(11500 * time.Millisecond), what: "flush"})
			w.obs.notifyDone[id+":missed"] = t0.Add(12600 * time.Millisecond)
			post(w, "missed", 13*time.Second, 200) // queued at 10 s, before the loss
		}, invNotifyOnce, 0},
		{"the same delivery again after a loss before its done", scheduler.Missed, func(w *simWorld) {
			post(w, "missed", 11*time.Second, 200)
			w.obs.losses = append(w.obs.losses, simLoss{at: t0.Add(11500 * time.Millisecond), what: "flush"})
			w.obs.notifyDone[id+":missed"] = t0.Add(12500 * time.Millisecond)
			post(w, "missed", 13*time.Second, 200)
		}, invNotifyOnce, 1},
		{"POSTed again before done (report lost)", scheduler.Failed, func(w *simWorld) {
			post(w, "failed", 11*time.Second, 200)
			post(w, "failed", 13*time.Second, 200)
			w.obs.notifyDone[id+":failed"] = t0.Add(14 * time.Second)
		}, invNotifyOnce, 0},
	} {
		w := world(tc.outcome, "")
		tc.posts(w)
		vs := w.check()
		if got := count(vs, tc.inv); got != tc.want {
			t.Errorf("%s: %d %s violation(s), want %d: %v", tc.name, got, tc.inv, tc.want, vs)
		}
		for _, inv := range []string{invNotifyMatches, invNotifyDelivered, invNotifyOnce} {
			if inv != tc.inv && count(vs, inv) > 0 {
				t.Errorf("%s: unexpected %s: %v", tc.name, inv, vs)
			}
		}
	}
	// A run closed lease_lost at 10 s that never ran, on a job that
	// notifies lease_lost: its record stands once the event is due (25 s),
	// so a holder that says it never started it (or asks again, and the
	// store keeps the run lease_lost) only from then on breaks nothing — its
	// event and record agree. Saying it earlier, and the record left
	// lease_lost, is a break of lease-lost-means-ran.
	for _, tc := range []struct {
		name string
		say  func(w *simWorld, at time.Time)
		at   time.Duration
		want int
	}{
		{"never-started close after the hold", func(w *simWorld, at time.Time) { w.obs.never[id+"|o0"] = at }, 25 * time.Second, 0},
		{"asked again after the hold", func(w *simWorld, at time.Time) { w.obs.keptLost[id+"|o0"] = at }, 26 * time.Second, 0},
		{"never-started close within the hold", func(w *simWorld, at time.Time) { w.obs.never[id+"|o0"] = at }, 24 * time.Second, 1},
		{"asked again within the hold", func(w *simWorld, at time.Time) { w.obs.keptLost[id+"|o0"] = at }, 12 * time.Second, 1},
	} {
		w := world(scheduler.LeaseLost, "lease expired: its replica stopped renewing it")
		w.obs.grants = []simGrant{{at: t0.Add(5 * time.Second), job: job, id: id, owner: "o0", fence: 7, in: r0, via: "claim s"}}
		w.obs.records[id][0].FencingToken = 7
		post(w, "lease_lost", 25*time.Second, 200)
		tc.say(w, t0.Add(tc.at))
		if got := count(w.check(), invLeaseLostRan); got != tc.want {
			t.Errorf("%s: %d %s violation(s), want %d", tc.name, got, invLeaseLostRan, tc.want)
		}
	}
}
