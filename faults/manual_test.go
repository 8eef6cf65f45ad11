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
// request, once. With link, the replicas reach Redis through proxies, stop
// impairs the replica (its link or itself) and heals it before it returns,
// and the replica itself may run the request once it can again.
func queuedManualLost(t *testing.T, row *row, how string, stop func(*replica) time.Time, link bool) {
	c := newCluster(t, clusterConfig{Replicas: 3, Proxies: link, Job: jobSpec{Sleep: 4 * time.Second,
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

	if run.Replica == victim.id && !link {
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
	queuedManualLost(t, row, "SIGTERM to", (*replica).term, false)
}

// 15b. As 15a, with the replica killed (SIGKILL): its queue place expires
// (waiter TTL, 3 s) and another replica runs the request, once.
func TestScenario15bQueuedManualReplicaKilled(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "15b", "kill -9 of the replica holding a queued manual run")
	queuedManualLost(t, row, "kill -9 of", (*replica).kill9, false)
}

// 15c–15f. As 15a, with the replica holding the queued manual run frozen
// (SIGSTOP) for 6 s (twice the lease), or its link to Redis black-holed,
// one way (commands reach Redis, no answer comes back) or resetting every
// connection for as long: the request runs once, on whichever replica.
func TestScenario15cQueuedManualReplicaFrozen(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "15c", "SIGSTOP (6 s) of the replica holding a queued manual run")
	queuedManualLost(t, row, "SIGSTOP 6 s of", func(r *replica) time.Time {
		at := r.stop()
		time.Sleep(6 * time.Second)
		r.cont()
		return at
	}, true)
}

func TestScenario15dQueuedManualLinkBlackHole(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "15d", "black hole (6 s) on the link of the replica holding a queued manual run")
	queuedManualLost(t, row, "a 6 s black hole on the link of", linkCut(modeBlackHole, 6*time.Second), true)
}

func TestScenario15eQueuedManualLinkOneWay(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "15e", "one-way link (6 s) of the replica holding a queued manual run")
	queuedManualLost(t, row, "a 6 s one-way cut on the link of", linkCut(modeMute, 6*time.Second), true)
}

func TestScenario15fQueuedManualLinkReset(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "15f", "resets (6 s) on the link of the replica holding a queued manual run")
	queuedManualLost(t, row, "6 s of resets on the link of", linkCut(modeReset, 6*time.Second), true)
}

// linkCut puts a replica's link in mode for d, returning when it started.
func linkCut(mode proxyMode, d time.Duration) func(*replica) time.Time {
	return func(r *replica) time.Time {
		at := time.Now()
		r.px.SetMode(mode)
		time.Sleep(d)
		r.px.SetMode(modePass)
		return at
	}
}

// 15g. As 15a, with the replica's link to Redis black-holed first: it
// cannot hand the request back on its way out (SIGTERM), and exits after
// its shutdown grace; its queue place expires, and another replica runs the
// request, once.
func TestScenario15gQueuedManualStoppedCutOff(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "15g", "SIGTERM to the replica holding a queued manual run, its link to Redis black-holed")
	queuedManualLost(t, row, "a black hole, then SIGTERM, to", func(r *replica) time.Time {
		r.px.SetMode(modeBlackHole)
		at := r.term()
		select {
		case <-r.done:
		case <-time.After(15 * time.Second):
			t.Errorf("%s did not exit within 15 s of SIGTERM, cut off from Redis", r.id)
		}
		r.px.SetMode(modePass)
		return at
	}, true)
}

// 15h. As 15e, the one-way cut lasting 20 s: the cut-off replica's polls
// keep reaching Redis while it hears nothing back.
func TestScenario15hQueuedManualLinkOneWayLong(t *testing.T) {
	t.Parallel()
	bound(t, 75*time.Second)
	row := report(t, "15h", "one-way link (20 s) of the replica holding a queued manual run")
	queuedManualLost(t, row, "a 20 s one-way cut on the link of", linkCut(modeMute, 20*time.Second), true)
}
