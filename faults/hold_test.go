//go:build faults

package faults_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// held is how long a reply is held back: past the daemon's 3s read timeout
// and past the 3s lease.
const held = 3500 * time.Millisecond

// heldEvent returns the command of kind whose reply px held back.
func heldEvent(t *testing.T, px *proxy, kind string) cmdEvent {
	t.Helper()
	for _, e := range px.Events(kind) {
		if e.Held {
			return e
		}
	}
	t.Fatalf("no %s reply was held", kind)
	return cmdEvent{}
}

// heldClaim holds the reply to the claim of one run, on every replica,
// for `held` (and with retryDelay, delays the retry of that claim on its
// way to Redis), and returns that run's id and instant.
func heldClaim(t *testing.T, c *cluster, retryDelay time.Duration) (string, time.Time) {
	// The first run may be the one a replica found due when it started,
	// late in its second: held from the claim ahead of the next instant, it
	// would make that claim wait for the instant. The runs after it start
	// on time and end long before the next claim.
	c.waitEnded(c.firstRun().RunID, 10*time.Second)
	at := nextInstant(time.Now().Add(500 * time.Millisecond))
	id := runID(at)
	sleepUntil(at.Add(-300 * time.Millisecond))
	for _, r := range c.Replicas() {
		r.px.HoldReplyTo("claim", held)
		if retryDelay > 0 {
			r.px.DelayRetry("claim", claimKey(id), retryDelay)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "the claims of "+id, func() bool {
		for _, r := range c.Replicas() {
			if r.px.Armed("claim") {
				return false
			}
		}
		return true
	})
	return id, at
}

// claimKey is the argument that names a run in its claim: the run key's
// suffix, its id after "<job>@" (the cluster runs one job).
func claimKey(runID string) string {
	_, suffix, _ := strings.Cut(runID, "@")
	return suffix
}

// claimSent is when replica r sent its first claim of runID.
func claimSent(r *replica, runID string) (time.Time, bool) {
	for _, e := range r.px.Events("claim") {
		if contains(e.Args, claimKey(runID)) {
			return e.Read, true
		}
	}
	return time.Time{}, false
}

// 5a. The reply to the claim of one run is held past the read timeout (but
// inside the 6 s lease) on every replica: Redis decided the run for one of
// them, the callers time out. The winner's retry finds its own claim and
// runs the run, once; the slot is not stranded.
func TestScenario05aHeldClaimReply(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "5a", "claim reply held 3.5 s (> read timeout, < lease 6 s), all replicas")
	c := newCluster(t, clusterConfig{Replicas: 3, Proxies: true, Job: jobSpec{Sleep: 500 * time.Millisecond, Lease: 6 * time.Second}})

	id, at := heldClaim(t, c, 0)
	c.waitRun(15*time.Second, id, func(r runRec) bool { return r.RunID == id })
	run := c.waitEnded(id, 10*time.Second)
	later := c.waitRun(15*time.Second, "a run after it", func(r runRec) bool { return r.Scheduled().After(at) })
	sleepUntil(later.Start.Add(2 * time.Second))

	var heldBy []string
	for _, r := range c.Replicas() {
		heldBy = append(heldBy, r.id+": "+heldEvent(t, r.px, "claim").Reply)
	}
	delay := run.Start.Sub(at)
	row.Recovery = dur(delay)
	row.figure("held claim replies %v; %s started on %s %s after its instant; next run at instant+%s",
		heldBy, id, run.Replica, dur(delay), dur(later.Start.Sub(at)))

	all := c.led.Runs()
	dups := duplicates(all)
	n := starts(all)
	if n[id] != 1 {
		t.Errorf("%s started %d times, want once", id, n[id])
	}
	if len(dups) > 0 {
		t.Errorf("duplicate starts: %v", dups)
	}
	if run.EndReason != "ok" {
		t.Errorf("%s ended %q, want ok", id, run.EndReason)
	}
	// Not stranded: the run started within its starting deadline and the
	// runs after it go on.
	if delay > 10*time.Second {
		t.Errorf("%s started %s late", id, delay)
	}
	if later.Start.Sub(run.End) > 2*time.Second {
		t.Errorf("the next run started %s after %s ended: the slot was stranded", later.Start.Sub(run.End), id)
	}
	checkRecord(t, c, id, scheduler.Succeeded)
	st := judge(all, c.watch)
	got := c.decisions(at.Add(-time.Second), later.Scheduled())
	row.Runs, row.Duplicates, row.Missed, row.StaleAccepted = len(n), len(dups), got["missed"], st.HarmfulAccepted
	row.figure("instants while it held the slot: %d skipped_overlap", got[string(scheduler.SkippedOverlap)])
	wantNoStaleWrites(t, st)
}

// 5d. The reply to a claim is held past the whole lease (3 s): by the time
// the winner learns it won, its lease has run out on its own clock, and
// Redis may already have given the slot to another run. It must not start
// the job then (SPEC 2: a job runs only while its lease holds).
func TestScenario05dClaimReplyHeldPastLease(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "5d", "claim reply held 3.5 s (> lease 3 s), all replicas")
	c := newCluster(t, clusterConfig{Replicas: 3, Proxies: true, Job: jobSpec{Sleep: 500 * time.Millisecond}})
	id, at := heldClaim(t, c, 0)
	lateClaimChecks(t, c, row, id, at)
}

// 5e. As 5d, and the winner's retry of that claim reaches Redis only after
// the cluster has closed the run (lease expired, slot reaped) and started
// the next one: Redis answers the retry as "started" without a token. The
// winner must not start the run — it would run next to the new holder, with
// fencing token 0.
func TestScenario05eClaimRetryAfterRunClosed(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "5e", "claim reply held 3.5 s, its retry delayed 2 s (lands after the run was closed)")
	c := newCluster(t, clusterConfig{Replicas: 3, Proxies: true, Job: jobSpec{Sleep: 500 * time.Millisecond}})
	id, at := heldClaim(t, c, 2*time.Second)
	if rec, ok := c.record(id); ok && rec.Decision != scheduler.Started {
		t.Fatalf("%s was decided %s: the scenario needs it started", id, rec.Decision)
	}
	lateClaimChecks(t, c, row, id, at)
}

// lateClaimChecks checks that no replica started a run after its lease
// had run out, with a token that is not one, or next to another run.
func lateClaimChecks(t *testing.T, c *cluster, row *row, id string, at time.Time) {
	lease := c.cfg.Job.Lease
	later := c.waitRun(15*time.Second, "a run after it", func(r runRec) bool { return r.Scheduled().After(at) })
	// Long enough for a run started late to meet its first renewal.
	sleepUntil(later.Start.Add(c.cfg.Job.Sleep + lease + time.Second))

	var found []string
	for _, r := range c.Replicas() {
		for _, rec := range r.logs("run started") {
			tok, _ := rec.Fields["fencing_token"].(float64)
			rid, _ := rec.Fields["run_id"].(string)
			if tok <= 0 {
				found = append(found, fmt.Sprintf("%s started %s with fencing token %v", r.id, rid, rec.Fields["fencing_token"]))
				t.Errorf("%s started %s with fencing token %v at %s", r.id, rid, rec.Fields["fencing_token"], rec.Time.Format("15:04:05.000"))
			}
			if rid != id {
				continue
			}
			sent, ok := claimSent(r, id)
			if !ok {
				continue
			}
			if after := rec.Time.Sub(sent); after >= lease-lockDrift(lease) {
				found = append(found, fmt.Sprintf("%s started %s %s after sending its claim", r.id, id, ms(after)))
				t.Errorf("%s started %s %s after sending its claim: its %s lease had already run out (Redis could have given the slot to another run), so it must not start the job",
					r.id, id, ms(after), lease)
			}
		}
	}
	for _, sp := range spans(c) {
		if sp.runID == id {
			found = append(found, fmt.Sprintf("%s ran %s on %s", id, ms(sp.end.Sub(sp.start)), sp.replica))
		}
	}
	for _, o := range overlapping(c) {
		found = append(found, "in flight at once: "+o)
		t.Errorf("two runs of a concurrency-1 job in flight at once, by the replicas' own logs: %s", o)
	}
	row.Recovery = dur(later.Start.Sub(at))
	if len(found) > 0 {
		row.figure("%s", strings.Join(found, "; "))
	}
	row.figure("next run at instant+%s", dur(later.Start.Sub(at)))

	all := c.led.Runs()
	dups := duplicates(all)
	if len(dups) > 0 {
		t.Errorf("duplicate starts: %v", dups)
	}
	if later.Start.Sub(at) > lease+2*time.Second {
		t.Errorf("the next run started %s after the held instant: the slot was stranded", later.Start.Sub(at))
	}
	st := judge(all, c.watch)
	got := c.decisions(at.Add(-time.Second), later.Scheduled())
	row.Runs, row.Duplicates, row.Missed, row.StaleAccepted = len(starts(all)), len(dups), got["missed"], st.HarmfulAccepted
	if rec, ok := c.record(id); ok {
		_, ran := c.led.Run(id)
		row.figure("%s recorded %s/%s, ran: %v", id, rec.Decision, rec.Outcome, ran)
		if !ran && (rec.Outcome != scheduler.Missed || !strings.Contains(rec.Error, "never started")) {
			// A run whose claim was answered past
			// its lease, and that could not take the lease back, never
			// ran, and its record says so — missed, "never started" —
			// whether the winner heard its late answer or its retry found
			// the run closed by the cluster (claim.lua, complete.lua).
			t.Errorf("%s never ran, yet is recorded %s → %s (%q); want missed, never started",
				id, rec.Decision, rec.Outcome, rec.Error)
		}
	}
	if st.Harmful > 0 {
		row.figure("its writes after the next holder's: %d, refused %d", st.Harmful, st.Harmful-st.HarmfulAccepted)
	}
	if st.HarmfulAccepted > 0 {
		t.Errorf("writes: %+v", st)
	}
}

// span is one run in flight on one replica, from its "run started" to its
// "run ended" log record.
type span struct {
	replica, runID string
	start, end     time.Time
}

// spans reads every replica's log for the runs it had in flight.
func spans(c *cluster) []span {
	var out []span
	for _, r := range c.Replicas() {
		open := map[string]time.Time{}
		for _, rec := range r.logs("run ") {
			id, _ := rec.Fields["run_id"].(string)
			switch rec.Msg {
			case "run started":
				open[id] = rec.Time
			case "run ended":
				if st, ok := open[id]; ok {
					out = append(out, span{r.id, id, st, rec.Time})
					delete(open, id)
				}
			}
		}
		for id, st := range open {
			out = append(out, span{r.id, id, st, time.Now()})
		}
	}
	return out
}

// overlapping lists the pairs of runs that were in flight at once.
func overlapping(c *cluster) []string {
	ss := spans(c)
	var out []string
	for i := range ss {
		for j := i + 1; j < len(ss); j++ {
			a, b := ss[i], ss[j]
			if a.start.Before(b.end) && b.start.Before(a.end) {
				out = append(out, fmt.Sprintf("%s on %s [%s, %s] and %s on %s [%s, %s]",
					a.runID, a.replica, a.start.Format("15:04:05.000"), a.end.Format("15:04:05.000"),
					b.runID, b.replica, b.start.Format("15:04:05.000"), b.end.Format("15:04:05.000")))
			}
		}
	}
	return out
}

// lockDrift is lockprovider.Drift: the margin a holder gives up at the end
// of each lease.
func lockDrift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// 5b. The reply to one renewal is held past the read timeout and past the
// lease: the renewal counts as failed, the next one (on another
// connection) succeeds, the run is not lost.
func TestScenario05bHeldRenewReply(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "5b", "renewal reply held 3.5 s (> lease)")
	c := newCluster(t, clusterConfig{Replicas: 3, Proxies: true, Job: jobSpec{Sleep: 7 * time.Second}})
	lease := c.cfg.Job.Lease

	first := c.firstRun()
	w := c.replica(first.Replica)
	c.watch.freshRenewal(t, first.RunID, 3*lease)
	w.px.HoldReplyTo("renew", held)
	testkit.WaitFor(t, 2*lease, "the held renewal", func() bool { return !w.px.Armed("renew") })
	job := c.waitEnded(first.RunID, 15*time.Second)

	e := heldEvent(t, w.px, "renew")
	back, ok := renewedAfter(w.px, e.Sent.Add(time.Millisecond), c.renewEvery())
	if !ok {
		t.Errorf("no renewal succeeded after the held one")
	}
	o, _ := c.watch.Obs(first.RunID)
	row.Recovery = dur(back.Sub(e.Sent))
	row.figure("held renewal sent at run+%s; next good renewal %s after it; longest gap between renewals at Redis %s",
		dur(e.Sent.Sub(first.Start)), ms(back.Sub(e.Sent)), ms(maxRenewalGap(o)))

	if job.EndReason != "ok" {
		t.Errorf("the job ended %q, want ok", job.EndReason)
	}
	if lost := w.logs("lease lost"); len(lost) > 0 {
		t.Errorf("lease lost after one held renewal: %v", lost[0].Fields)
	}
	if others := othersStarted(c.led.Runs(), first.Start, job.End, w.id); len(others) > 0 {
		t.Errorf("runs started elsewhere while the winner held the slot: %v", others)
	}
	checkRecord(t, c, first.RunID, scheduler.Succeeded)
	st, _ := c.tally(t, row, first.Scheduled(), first.Scheduled().Add(5*time.Second))
	wantNoStaleWrites(t, st)
}

// 5c. The reply to a run's release (its closing script) is held past the
// read timeout: Redis freed the slot when it ran the script, so the next
// run starts on time; the holder's retry finds the run closed by itself
// and the record keeps its outcome.
func TestScenario05cHeldReleaseReply(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "5c", "release reply held 3.5 s (> read timeout)")
	c := newCluster(t, clusterConfig{Replicas: 3, Proxies: true, Job: jobSpec{Sleep: 1500 * time.Millisecond}})

	first := c.firstRun()
	w := c.replica(first.Replica)
	w.px.HoldReplyTo("complete", held)
	job := c.waitEnded(first.RunID, 10*time.Second)
	next := c.waitRun(10*time.Second, "a run after the release", func(r runRec) bool { return r.Start.After(job.End) })
	testkit.WaitFor(t, 10*time.Second, "the held release", func() bool { return !w.px.Armed("complete") })
	sleepUntil(time.Now().Add(held + time.Second)) // the holder's retry

	e := heldEvent(t, w.px, "complete")
	o, _ := c.watch.Obs(first.RunID)
	freed := o.Removed.Sub(job.End)
	row.Recovery = dur(next.Start.Sub(job.End))
	row.figure("slot freed %s after the job ended (release reply held until +%s); next run %s after it",
		ms(freed), dur(e.Replied.Sub(job.End)), dur(next.Start.Sub(job.End)))

	if o.Removed.IsZero() || freed > 500*time.Millisecond {
		t.Errorf("slot freed %s after the job ended: the held reply stranded it", freed)
	}
	if next.Start.Sub(job.End) > 1500*time.Millisecond {
		t.Errorf("the next run started %s after the release", next.Start.Sub(job.End))
	}
	if warn := w.logs("already closed"); len(warn) > 0 {
		t.Errorf("the holder's retried release was taken for someone else's close: %v", warn[0].Fields)
	}
	if warn := w.logs("could not record"); len(warn) > 0 {
		t.Errorf("the holder gave up recording the end: %v", warn[0].Fields)
	}
	checkRecord(t, c, first.RunID, scheduler.Succeeded)
	st, _ := c.tally(t, row, first.Scheduled(), next.Scheduled().Add(-time.Second))
	wantNoStaleWrites(t, st)
}
