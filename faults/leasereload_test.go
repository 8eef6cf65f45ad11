//go:build faults

package faults_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// reloadLease rewrites every replica's table with lease d and reloads it
// (SIGHUP), waiting until each has.
func (c *cluster) reloadLease(d time.Duration) {
	c.t.Helper()
	c.cfg.Job.Lease = d
	for _, r := range c.Replicas() {
		before := len(r.logs("table reloaded"))
		c.table(r.id, c.redis.Addr())
		_ = r.cmd.Process.Signal(syscall.SIGHUP)
		testkit.WaitFor(c.t, 10*time.Second, r.id+" to reload", func() bool { return len(r.logs("table reloaded")) > before })
	}
}

// 24. A SIGHUP changes the job's lease while a run holds it, then its
// replica freezes for 4.5 s: between the two leases.
//   - 6 s → 3 s: the run keeps the lease it was claimed with (6 s): nobody
//     else starts while it holds, and it succeeds.
//   - 3 s → 6 s: the run keeps its 3 s lease: Redis lets it go 3 s after
//     its last renewal, another replica takes over, and the frozen replica
//     cancels its job as soon as it resumes, its record lease_lost.
//
// Asserted besides: never two valid holders at Redis, tokens rising, no
// run id started twice.
func TestScenario24LeaseReloadedMidRun(t *testing.T) {
	t.Parallel()
	bound(t, 75*time.Second)
	row := report(t, "24", "a SIGHUP changes the lease (6 s → 3 s, then 3 s → 6 s) while a run holds it; its replica then freezes 4.5 s")
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Sleep: 12 * time.Second, Lease: 6 * time.Second}})

	// 6 s → 3 s.
	first := c.firstRun()
	w := c.replica(first.Replica)
	c.reloadLease(3 * time.Second)
	c.watch.freshRenewal(t, first.RunID, 10*time.Second)
	stopped := w.stop()
	time.Sleep(4500 * time.Millisecond)
	w.cont()
	job := c.waitEnded(first.RunID, 15*time.Second)
	if others := othersStarted(c.led.Runs(), stopped, job.End, w.id); len(others) > 0 {
		t.Errorf("runs started while %s held a 6 s lease it froze 4.5 s of: %v", w.id, others)
	}
	if job.EndReason != "ok" {
		t.Errorf("the run claimed with a 6 s lease ended %q after a 4.5 s freeze, want ok", job.EndReason)
	}
	checkRecord(t, c, first.RunID, scheduler.Succeeded)

	// 3 s → 6 s: the next run is claimed with a 3 s lease.
	second := c.waitRun(15*time.Second, "a run claimed with the 3 s lease", func(r runRec) bool { return r.Start.After(job.End) })
	w2 := c.replica(second.Replica)
	c.reloadLease(6 * time.Second)
	// The watcher counts grants back from a 6 s lease: wait for the
	// expiry to move on instead (a renewal), then freeze.
	o0, _ := c.watch.Obs(second.RunID)
	testkit.WaitFor(t, 5*time.Second, "a renewal of "+second.RunID, func() bool {
		o, _ := c.watch.Obs(second.RunID)
		return o.Expiry.After(o0.Expiry)
	})
	stopped2 := w2.stop()
	next := c.waitRun(10*time.Second, "another replica's run", func(r runRec) bool { return r.Start.After(stopped2) && r.Replica != w2.id })
	sleepUntil(stopped2.Add(4500 * time.Millisecond))
	resumed2 := w2.cont()
	job2 := c.waitEnded(second.RunID, 5*time.Second)
	o, _ := c.watch.Obs(second.RunID)
	if job2.EndReason != "term" || job2.End.Sub(resumed2) > time.Second {
		t.Errorf("the frozen holder's job ended %q %s after SIGCONT; want cancelled at once", job2.EndReason, job2.End.Sub(resumed2))
	}
	if next.Start.Before(o.End()) {
		t.Errorf("%s started at %s, before %s's lease ended at Redis (%s)", next.RunID, next.Start, second.RunID, o.End())
	}
	if next.Token <= second.Token {
		t.Errorf("token %d after %d", next.Token, second.Token)
	}
	checkRecord(t, c, second.RunID, scheduler.LeaseLost)
	if m := c.watch.MaxValid(); m > 1 {
		t.Errorf("%d valid holders at Redis at once", m)
	}
	if dups := duplicates(c.led.Runs()); len(dups) > 0 {
		t.Errorf("duplicate starts: %v", dups)
	}
	if bad := tokensRise(c.led.Runs()); bad != "" {
		t.Errorf("tokens: %s", bad)
	}
	row.Runs = len(starts(c.led.Runs()))
	row.figure("6 s → 3 s: no takeover during a 4.5 s freeze, the run succeeded; 3 s → 6 s: lease ended at Redis %s into the freeze, %s took over %s in, the frozen job stopped %s after SIGCONT",
		dur(o.End().Sub(stopped2)), next.Replica, dur(next.Start.Sub(stopped2)), ms(job2.End.Sub(resumed2)))
}
