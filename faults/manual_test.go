//go:build faults

package faults_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// manualRecord reads the record of a manual run (nil while there is none).
func (c *cluster) manualRecord(id string) *scheduler.Run {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.ctl.Get(ctx, id)
	if err != nil {
		return nil
	}
	return r
}

// describe prints a record for a failure message.
func describe(r *scheduler.Run) string {
	if r == nil {
		return "no record"
	}
	return fmt.Sprintf("decision %q, outcome %q, replica %q, error %q", r.Decision, r.Outcome, r.Replica, r.Error)
}

// trigger asks the cluster for a manual run of the job and returns its id.
func (c *cluster) trigger() string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := c.ctl.Trigger(ctx, jobName)
	if err != nil {
		c.t.Fatalf("trigger: %v", err)
	}
	return id
}

// 13. `scheduler trigger` on a job whose run in flight lasts longer than the
// lease (5 s, lease 3 s): the manual run queues for the slot and is admitted
// when the run ends, more than a lease after it was claimed. Its lease
// starts at its admission, so it runs — once, to the end (4 s, renewed on
// the way).
func TestScenario13TriggerOnBusyJob(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "13", "`scheduler trigger` while a run holds the slot for 5 s (> lease 3 s)")
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Sleep: 5 * time.Second,
		Extra: []string{"-manual-sleep", "4s"}}}) // longer than the lease: renewed after its admission
	lease := c.cfg.Job.Lease

	first := c.firstRun()
	sleepUntil(first.Start.Add(300 * time.Millisecond))
	asked := time.Now()
	out, code, _ := runCLIWithin(t, 40*time.Second, "trigger", jobName, "--wait", "25s", "--config", c.table("cli", c.redis.Addr()))
	if code != 0 {
		t.Fatalf("scheduler trigger exited %d:\n%s", code, out)
	}
	id, answer, _ := strings.Cut(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(id, jobName+"@manual-") {
		t.Fatalf("scheduler trigger printed %q, want a manual run id first", out)
	}
	rec := c.manualRecord(id)
	row.figure("trigger answered %q", strings.TrimSpace(answer))

	run, ran := c.led.Run(id)
	if !ran {
		row.figure("the manual run never started: %s", describe(rec))
		t.Fatalf("the manual run %s never started (%s); trigger answered:\n%s", id, describe(rec), out)
	}
	prev := c.waitEnded(first.RunID, 10*time.Second)
	run = c.waitEnded(id, 15*time.Second)
	waited := run.Start.Sub(asked)
	row.Recovery = dur(waited)
	row.figure("asked at run+%s; the manual run started %s after the request, %s after the run in flight ended, on %s",
		ms(asked.Sub(first.Start)), dur(waited), ms(run.Start.Sub(prev.End)), run.Replica)

	if waited <= lease {
		t.Errorf("the manual run waited %s, not longer than the lease %s: the scenario did not test a long wait", waited, lease)
	}
	if run.EndReason != "ok" {
		t.Errorf("the manual run ended %q, want ok (it must keep its lease for its whole run)", run.EndReason)
	}
	if run.Start.Before(prev.End) {
		t.Errorf("the manual run started at %s, before the run in flight ended at %s", run.Start, prev.End)
	}
	if n := starts(c.led.Runs())[id]; n != 1 {
		t.Errorf("the manual run started %d times", n)
	}
	checkRecord(t, c, id, scheduler.Succeeded)
	for _, r := range c.Replicas() {
		if lost := r.logs("lease lost"); len(lost) > 0 {
			t.Errorf("%s lost a lease: %v", r.id, lost[0].Fields)
		}
	}
	st, got := c.tally(t, row, first.Scheduled(), run.End.Truncate(time.Second).Add(-time.Second))
	row.figure("instants meanwhile: %s", decisionSummary(got))
	wantNoStaleWrites(t, st)
}

// queuedManualLost triggers a manual run while a 4 s run holds the slot,
// waits until a replica holds the request queued for the slot, then stops
// that replica with stop (SIGTERM or SIGKILL). Another replica must run the
// request, once.
func queuedManualLost(t *testing.T, row *row, how string, stop func(*replica) time.Time) {
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Sleep: 4 * time.Second,
		Extra: []string{"-manual-sleep", "1s"}}})

	first := c.firstRun()
	sleepUntil(first.Start.Add(300 * time.Millisecond))
	asked := time.Now()
	id := c.trigger()
	var queued *scheduler.Run
	testkit.WaitFor(t, 3*time.Second, id+" queued on a replica", func() bool {
		queued = c.manualRecord(id)
		return queued != nil && queued.Outcome == scheduler.Waiting && queued.Replica != ""
	})
	victim := c.replica(queued.Replica)
	killed := stop(victim)
	row.figure("request queued on %s %s after the trigger; %s %s (the run in flight is on %s)",
		victim.id, ms(killed.Sub(asked)), how, victim.id, first.Replica)

	var run runRec
	ok := false
	testkit.WaitFor(t, 20*time.Second, id+" to run or be given up", func() bool {
		if run, ok = c.led.Run(id); ok {
			return true
		}
		// Closed for good, without a start, and nobody queued it again.
		rec := c.manualRecord(id)
		return rec != nil && rec.Outcome != scheduler.Waiting && rec.Outcome != scheduler.Running &&
			rec.Outcome != "" && time.Since(killed) > 12*time.Second
	})
	if !ok {
		rec := c.manualRecord(id)
		row.figure("the request was lost: %s", describe(rec))
		t.Fatalf("the manual run %s queued on %s never ran after %s %s: %s", id, victim.id, how, victim.id, describe(rec))
	}
	run = c.waitEnded(id, 15*time.Second)
	row.Recovery = dur(run.Start.Sub(killed))
	row.figure("run by %s %s after the signal, token %d", run.Replica, dur(run.Start.Sub(killed)), run.Token)

	if run.Replica == victim.id {
		t.Errorf("the manual run ran on %s, the replica that was stopped", run.Replica)
	}
	if run.EndReason != "ok" {
		t.Errorf("the manual run ended %q, want ok", run.EndReason)
	}
	if n := starts(c.led.Runs())[id]; n != 1 {
		t.Errorf("the manual run started %d times, want once", n)
	}
	checkRecord(t, c, id, scheduler.Succeeded)
	st, got := c.tally(t, row, first.Scheduled(), run.End.Truncate(time.Second).Add(-time.Second))
	row.figure("instants meanwhile: %s", decisionSummary(got))
	if st.HarmfulAccepted > 0 || st.LegitRejected > 0 {
		t.Errorf("writes: %+v", st)
	}
}

// 15a. A manual run waits for the slot on a replica that is then shut down
// (SIGTERM): the request goes back to the pending requests, and another
// replica runs it, once.
func TestScenario15aQueuedManualReplicaStopped(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "15a", "SIGTERM to the replica holding a queued manual run")
	queuedManualLost(t, row, "SIGTERM to", (*replica).term)
}

// 15b. As 15a, with the replica killed (SIGKILL): its queue place expires
// (waiter TTL, 3 s) and another replica runs the request, once.
func TestScenario15bQueuedManualReplicaKilled(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "15b", "kill -9 of the replica holding a queued manual run")
	queuedManualLost(t, row, "kill -9 of", (*replica).kill9)
}
