package scheduler_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// The runs a replica holds renew together: 100 long runs started at the
// same instant renew in one round trip per renewal tick between them (one
// pipeline of script calls of up to 64 runs each), not one each, and every
// one of them keeps its lease.
func TestRenewalsOfRunsStartedTogetherAreOneRoundTrip(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		var table []scheduler.Job
		for i := range 100 {
			table = append(table, scheduler.Job{Name: fmt.Sprintf("long%03d", i), Schedule: "@every 1h",
				Lease: 3 * time.Second, Handler: c.ledger.Job(sleepJob(10 * time.Second))})
		}
		counter := renewCalls()
		rdb := c.client()
		rdb.AddHook(counter)
		runAlone(t, rdb, table, 15*time.Second) // the runs due at start-up, 10 s each

		entries := c.ledger.Entries()
		if len(entries) != 100 {
			t.Fatalf("%d runs, want 100", len(entries))
		}
		for _, e := range entries {
			if e.Err != nil {
				t.Errorf("%s: %v", e.RunID, e.Err)
			}
		}
		// A 3 s lease renews every second: about 10 ticks in a 10 s run.
		trips, runs := counter.trips.Load(), counter.runs.Load()
		t.Logf("%d round trips for %d renewals", trips, runs)
		if runs < 100*8 {
			t.Fatalf("only %d renewals for 100 runs of 10 s with a 3 s lease", runs)
		}
		if trips > 12 {
			t.Errorf("%d round trips for %d renewals; want one per renewal tick (about 10)", trips, runs)
		}
	})
}
