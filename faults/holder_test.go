//go:build faults

package faults_test

import (
	"testing"
	"time"

	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// othersStarted lists runs started in (from, to) on replicas other than
// except.
func othersStarted(runs []runRec, from, to time.Time, except string) []string {
	var out []string
	for _, r := range runs {
		if r.Replica != except && r.Start.After(from) && r.Start.Before(to) {
			out = append(out, r.RunID+" on "+r.Replica)
		}
	}
	return out
}

// firstGrantAfter is the first renewal Redis recorded after t, or the zero
// time.
func firstGrantAfter(o slotObs, t time.Time) time.Time {
	// Redis' times are whole milliseconds.
	t = t.Truncate(time.Millisecond)
	for _, g := range o.Grants {
		if !g.Before(t) {
			return g
		}
	}
	return time.Time{}
}

// checkRecord checks the outcome of runID's record.
func checkRecord(t *testing.T, c *cluster, runID string, want scheduler.Outcome) {
	t.Helper()
	var rec scheduler.Run
	testkit.WaitFor(t, 10*time.Second, "the record of "+runID, func() bool {
		var ok bool
		rec, ok = c.record(runID)
		return ok
	})
	if rec.Outcome != want {
		t.Errorf("record of %s: outcome %q (error %q), want %q", runID, rec.Outcome, rec.Error, want)
	}
}

// keptLease checks that the winner of first kept its lease through a fault
// shorter than the lease (what): its job ran to the end, it never declared
// the lease lost, no other replica started a run meanwhile, Redis saw
// renewals less than a lease apart, and the run is recorded succeeded.
func keptLease(t *testing.T, c *cluster, w *replica, first runRec, job runRec, o slotObs, what string) {
	t.Helper()
	if job.EndReason != "ok" {
		t.Errorf("the winner's job ended %q after %s, want ok", job.EndReason, what)
	}
	if lost := w.logs("lease lost"); len(lost) > 0 {
		t.Errorf("the winner declared its lease lost after %s shorter than the lease: %v", what, lost[0].Fields)
	}
	if others := othersStarted(c.led.Runs(), first.Start, job.End, w.id); len(others) > 0 {
		t.Errorf("runs started elsewhere while the winner held the slot: %v", others)
	}
	if gap := maxRenewalGap(o); gap >= c.cfg.Job.Lease {
		t.Errorf("Redis saw a gap of %s between renewals, not less than the lease", gap)
	}
	checkRecord(t, c, first.RunID, scheduler.Succeeded)
}

// 2. The winner is killed with SIGKILL mid-run: its job dies with it, the
// slot frees within the lease, and the next run starts on another replica.
func TestScenario02WinnerKilled(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "2", "winner kill -9 mid-run (lease 3 s)")
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Sleep: 6 * time.Second}})
	lease := c.cfg.Job.Lease

	first := c.firstRun()
	sleepUntil(first.Start.Add(1500 * time.Millisecond))
	w := c.replica(first.Replica)
	killed := w.kill9()

	job := c.waitEnded(first.RunID, 5*time.Second)
	next := c.waitRun(lease+5*time.Second, "a run started after the kill", func(r runRec) bool { return r.Start.After(killed) })
	var o slotObs
	testkit.WaitFor(t, 5*time.Second, "the killed run's slot to be freed", func() bool {
		var ok bool
		o, ok = c.watch.Obs(first.RunID)
		return ok && !o.Removed.IsZero()
	})

	jobGone := job.End.Sub(killed)
	expired := o.Expiry.Sub(killed)
	freed := o.Removed.Sub(killed)
	recovery := next.Start.Sub(killed)
	row.Recovery = dur(recovery)
	row.figure("job process gone %s after the kill", ms(jobGone))
	row.figure("lease expired at Redis kill+%s, slot reaped kill+%s", dur(expired), dur(freed))
	row.figure("next run on %s, token %d > %d", next.Replica, next.Token, first.Token)

	if job.EndReason != "" {
		t.Errorf("the killed replica's job ended %q: it should have died with it", job.EndReason)
	}
	if jobGone > time.Second {
		t.Errorf("the job outlived its replica by %s", jobGone)
	}
	if expired > lease {
		t.Errorf("the lease expired %s after the kill, more than the lease %s", expired, lease)
	}
	// Any replica's heartbeat (every 1s) or claim reaps an expired slot.
	if freed > lease+1500*time.Millisecond {
		t.Errorf("the slot was freed %s after the kill: more than lease + a heartbeat", freed)
	}
	if next.Replica == w.id {
		t.Errorf("the next run started on the killed replica %s", w.id)
	}
	if next.Token <= first.Token {
		t.Errorf("next token %d not above the killed run's %d", next.Token, first.Token)
	}
	if recovery > lease+2*time.Second {
		t.Errorf("the next run started %s after the kill, want within lease + 2s", recovery)
	}
	if g, ok := c.watch.Obs(next.RunID); ok && g.Granted().Before(o.Expiry) {
		t.Errorf("the next run was granted at %s, before the killed run's lease expired at %s", g.Granted(), o.Expiry)
	}
	checkRecord(t, c, first.RunID, scheduler.LeaseLost)

	st, got := c.tally(t, row, first.Scheduled(), next.Scheduled().Add(-time.Second))
	row.figure("instants while the dead lease ran out: %d skipped_overlap", got[string(scheduler.SkippedOverlap)])
	if st.Harmful > 0 || st.LegitRejected > 0 {
		t.Errorf("writes: %+v", st)
	}
	for _, r := range c.Replicas() {
		if r != w && !r.alive() {
			t.Errorf("%s exited", r.id)
		}
	}
}

// 3a. The winner is frozen (SIGSTOP) for less than its lease, right after a
// renewal: nothing is lost, nobody else starts, the run succeeds.
func TestScenario03aPauseShorterThanLease(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "3a", "winner SIGSTOP 1.5 s (< lease 3 s)")
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Sleep: 7 * time.Second}})
	lease := c.cfg.Job.Lease

	first := c.firstRun()
	w := c.replica(first.Replica)
	renewed := c.watch.freshRenewal(t, first.RunID, 3*lease)
	stopped := w.stop()
	time.Sleep(1500 * time.Millisecond)
	resumed := w.cont()
	job := c.waitEnded(first.RunID, 15*time.Second)

	o, _ := c.watch.Obs(first.RunID)
	after := firstGrantAfter(o, resumed)
	row.Recovery = dur(max(0, after.Sub(resumed)))
	row.figure("paused %s after a renewal reached Redis; first renewal %s after SIGCONT; longest gap between renewals at Redis %s",
		ms(stopped.Sub(renewed)), ms(max(0, after.Sub(resumed))), ms(maxRenewalGap(o)))

	keptLease(t, c, w, first, job, o, "a pause")

	st, _ := c.tally(t, row, first.Scheduled(), first.Scheduled().Add(5*time.Second))
	wantNoStaleWrites(t, st)
}

// 3b. The winner is frozen for twice its lease. Another replica takes the
// next run with a higher token once Redis' lease has expired. The frozen
// one's job, in its own process group under its supervisor (a process the
// freeze does not stop), is stopped by the supervisor before that lease
// ends (SPEC: no process of the job alive by the time Redis could give the
// slot away): it writes nothing after its lease. Until 2026-11-27 it ran on
// and wrote until the winner resumed, fenced only by its token.
func TestScenario03bPauseLongerThanLease(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "3b", "winner SIGSTOP 6 s (2 × lease)")
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Sleep: 15 * time.Second, KillGrace: termGrace}})
	first, w, stopped, next := freezeWinnerPastLease(t, c)
	resumed := w.cont()
	job := c.waitEnded(first.RunID, 5*time.Second)
	o, _ := c.watch.Obs(first.RunID)
	g, _ := c.watch.Obs(next.RunID)

	row.Recovery = dur(next.Start.Sub(stopped))
	row.figure("lease expired at Redis pause+%s; %s took over at pause+%s (token %d > %d); the frozen winner's job stopped by its supervisor %s before that lease ended",
		dur(o.Expiry.Sub(stopped)), next.Replica, dur(next.Start.Sub(stopped)), next.Token, first.Token, ms(o.End().Sub(job.End)))

	if next.Token <= first.Token {
		t.Errorf("the new holder's token %d is not above the frozen one's %d", next.Token, first.Token)
	}
	if len(g.Grants) > 0 && g.Granted().Before(o.End()) {
		t.Errorf("the slot was granted again at %s, before the frozen holder's lease ended at %s", g.Granted(), o.End())
	}
	if job.EndReason != "term" {
		t.Errorf("the frozen winner's job ended %q, want term (stopped)", job.EndReason)
	}
	if !job.End.Before(o.End()) {
		t.Errorf("the frozen winner's job ended at %s, after its lease ended at Redis at %s", job.End, o.End())
	}
	// On SIGCONT it says so: its watchdog declares the lease lost, or the
	// run's close finds that the cluster closed the run meanwhile, whichever
	// comes first (the job had ended during the freeze).
	var lost []logRec
	testkit.WaitFor(t, 5*time.Second, "the resumed winner to log its lease lost", func() bool {
		lost = append(w.logs("lease lost"), w.logs("frozen past its lease")...)
		return len(lost) > 0
	})
	if lost[0].Time.Before(resumed.Add(-50 * time.Millisecond)) {
		t.Errorf("lease lost logged at %s, before SIGCONT at %s", lost[0].Time, resumed)
	}
	checkRecord(t, c, first.RunID, scheduler.LeaseLost)

	st, _ := c.tally(t, row, first.Scheduled(), next.Scheduled().Add(-time.Second))
	row.figure("stale writes by the frozen holder: %d after its lease, %d after the new holder wrote, all %d refused",
		st.Stale, st.Harmful, st.Harmful-st.HarmfulAccepted)
	if st.Stale > 0 || st.HarmfulAccepted > 0 || st.LegitRejected > 0 {
		t.Errorf("writes: %+v", st)
	}
	if !w.alive() {
		t.Errorf("the paused replica exited")
	}
}

// freezeWinnerPastLease freezes the replica running c's first run right
// after a renewal, waits for another replica's run, and keeps it frozen for
// twice the lease; the caller resumes it (w.cont).
func freezeWinnerPastLease(t *testing.T, c *cluster) (first runRec, w *replica, stopped time.Time, next runRec) {
	t.Helper()
	lease := c.cfg.Job.Lease
	first = c.firstRun()
	w = c.replica(first.Replica)
	c.watch.freshRenewal(t, first.RunID, 3*lease)
	stopped = w.stop()
	next = c.waitRun(lease+5*time.Second, "another replica's run", func(r runRec) bool {
		return r.Start.After(stopped) && r.Replica != w.id
	})
	sleepUntil(stopped.Add(2 * lease))
	return first, w, stopped, next
}

// 3c. As 3b, with `on_lease_lost: continue`: the job is let run past its
// lease (neither the replica nor its supervisor stops it), so the frozen
// one's job keeps running and writing beside the next holder, and only its
// fencing token keeps its writes out: the sink refuses every one made after
// the new holder's.
func TestScenario03cPauseLongerThanLeaseJobContinues(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "3c", "winner SIGSTOP 6 s (2 × lease), `on_lease_lost: continue`")
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Sleep: 9 * time.Second, YAML: "on_lease_lost: continue"}})
	first, w, stopped, next := freezeWinnerPastLease(t, c)
	w.cont()
	c.waitEnded(first.RunID, 10*time.Second)
	o, _ := c.watch.Obs(first.RunID)
	g, _ := c.watch.Obs(next.RunID)
	row.Recovery = dur(next.Start.Sub(stopped))
	if next.Token <= first.Token {
		t.Errorf("the new holder's token %d is not above the frozen one's %d", next.Token, first.Token)
	}
	if len(g.Grants) > 0 && g.Granted().Before(o.End()) {
		t.Errorf("the slot was granted again at %s, before the frozen holder's lease ended at %s", g.Granted(), o.End())
	}
	st, _ := c.tally(t, row, first.Scheduled(), next.Scheduled().Add(-time.Second))
	row.figure("%s took over at pause+%s (token %d > %d); the frozen holder's job ran on: %d writes after its lease, %d after the new holder's, all %d refused",
		next.Replica, dur(next.Start.Sub(stopped)), next.Token, first.Token, st.Stale, st.Harmful, st.Harmful-st.HarmfulAccepted)
	if st.Harmful == 0 {
		t.Errorf("the frozen holder's job made no write after the new holder's: the scenario did not test fencing (%+v)", st)
	}
	if st.HarmfulAccepted > 0 || st.LegitRejected > 0 {
		t.Errorf("writes: %+v", st)
	}
}
