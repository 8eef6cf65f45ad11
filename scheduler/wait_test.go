package scheduler_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/scheduler"
)

// A manual run queued behind a run that lasts longer than the lease runs
// when the slot frees: its lease counts from its admission, not from the
// claim that queued it.
func TestQueuedRunLeaseStartsAtAdmission(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.replicas(2, []scheduler.Job{{Name: "busy", Schedule: "@yearly", Lease: 3 * time.Second,
			Handler: c.ledger.Job(sleepJob(10 * time.Second))}})
		ctx := context.Background()
		first, err := c.ctl.Trigger(ctx, "busy")
		if err != nil {
			t.Fatal(err)
		}
		<-c.ledger.Started()
		second, err := c.ctl.Trigger(ctx, "busy")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Second)
		c.stop()
		starts := c.ledger.Starts()
		if starts[first] != 1 || starts[second] != 1 {
			t.Errorf("starts: %s %d, %s %d; want each once", first, starts[first], second, starts[second])
		}
		for _, r := range c.history("busy") {
			if r.Outcome != scheduler.Succeeded {
				t.Errorf("run %s: %s (%s), want succeeded", r.ID, r.Outcome, r.Error)
			}
		}
	})
}

// Pausing a job stops the runs already queued for a slot: scheduled ones are
// recorded skipped_paused instead of starting; a manual run still runs.
func TestPauseStopsQueuedRuns(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.replicas(2, []scheduler.Job{{Name: "q", Schedule: "@every 1s", Overlap: scheduler.OverlapWait,
			MaxWait: time.Minute, Handler: c.ledger.Job(sleepJob(1500 * time.Millisecond))}})
		ctx := context.Background()
		time.Sleep(12 * time.Second) // arrivals every second, each holding the slot 1.5s: a queue builds
		if err := c.ctl.Pause(ctx, "q"); err != nil {
			t.Fatal(err)
		}
		pausedAt := time.Now()
		manual, err := c.ctl.Trigger(ctx, "q")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Second)
		c.stop()
		for _, e := range c.ledger.Entries() {
			if e.RunID != manual && e.Start.After(pausedAt.Add(time.Second)) {
				t.Errorf("%s started %s after the pause", e.RunID, e.Start.Sub(pausedAt))
			}
		}
		if n := c.ledger.Starts()[manual]; n != 1 {
			t.Errorf("manual run started %d times, want once", n)
		}
		if o := c.outcomes("q"); o[scheduler.SkippedPaused] < 3 {
			t.Errorf("outcomes %v: want the queued runs skipped_paused", o)
		}
	})
}

// A manual run queued on a replica that stops (gracefully, or dies: here its
// connection to Redis is cut) goes back to the pending requests, and another
// replica runs it, once.
func TestQueuedManualRunSurvivesItsReplica(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"stop", "crash"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t)
				table := []scheduler.Job{{Name: "m", Schedule: "@yearly", Lease: 3 * time.Second,
					Handler: c.ledger.Job(sleepJob(5 * time.Second))}}
				establish(t, c.client(), table)
				rdb := c.client()
				a, err := scheduler.New(schedtest.RedisStore(t, rdb), table, scheduler.WithReplicaID("a"), scheduler.WithLogger(quiet))
				if err != nil {
					t.Fatal(err)
				}
				stopA := c.run(a)
				ctx := context.Background()
				first, _ := c.ctl.Trigger(ctx, "m")
				<-c.ledger.Started() // first runs on a, 5s
				queued, _ := c.ctl.Trigger(ctx, "m")
				time.Sleep(2 * time.Second) // a queues it
				c.replica("b", table)
				if how == "stop" {
					stopA()
				} else {
					_ = rdb.Close() // a can no longer reach Redis: dead to the cluster
				}
				time.Sleep(30 * time.Second)
				c.stop()
				starts := c.ledger.Starts()
				if starts[queued] != 1 {
					t.Fatalf("queued manual run started %d times, want once", starts[queued])
				}
				for _, e := range c.ledger.Entries() {
					if e.RunID == queued && e.Replica != "b" {
						t.Errorf("queued run ran on %s, want b", e.Replica)
					}
				}
				if how == "stop" && starts[first] != 1 {
					t.Errorf("first run started %d times", starts[first])
				}
				for _, r := range c.history("m") {
					if r.ID == queued && r.Outcome != scheduler.Succeeded {
						t.Errorf("queued run recorded %s (%s)", r.Outcome, r.Error)
					}
					if r.Decision == "" {
						t.Errorf("record %s has an empty decision", r.ID)
					}
				}
			})
		})
	}
}
