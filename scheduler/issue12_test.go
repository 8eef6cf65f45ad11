package scheduler_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// A manual run queued behind a run that lasts longer than the lease runs
// when the slot frees: its lease counts from its admission, not from the
// claim that queued it (issue 12, defect 1).
func TestQueuedRunLeaseStartsAtAdmission(t *testing.T) {
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
