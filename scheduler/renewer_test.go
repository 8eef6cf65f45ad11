package scheduler_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/scheduler"
)

// renewCounter counts the round trips that carried renew script calls Redis
// executed (the renew script's shape: no global arguments, 3 per run), and
// the renewals in them.
type renewCounter struct {
	trips, runs atomic.Int64
}

func (c *renewCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *renewCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if c.count(cmd) > 0 {
			c.trips.Add(1)
		}
		return err
	}
}
func (c *renewCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		n := 0
		for _, cmd := range cmds {
			n += c.count(cmd)
		}
		if n > 0 {
			c.trips.Add(1)
		}
		return err
	}
}

// count returns the renewals in cmd (0 if it is not a renew call).
func (c *renewCounter) count(cmd redis.Cmder) int {
	if n := cmd.Name(); (n != "evalsha" && n != "eval") || cmd.Err() != nil {
		return 0
	}
	args := cmd.Args()
	keys, _ := args[2].(int)
	if keys > 0 && len(args)-3-keys == 3*keys {
		c.runs.Add(int64(keys))
		return keys
	}
	return 0
}

// The runs a replica holds renew together: 100 long runs started at the
// same instant renew in one round trip per renewal tick between them (one
// pipeline of script calls of up to 64 runs each), not one each, and every
// one of them keeps its lease.
func TestRenewalsOfRunsStartedTogetherAreOneRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		var table []scheduler.Job
		for i := range 100 {
			table = append(table, scheduler.Job{Name: fmt.Sprintf("long%03d", i), Schedule: "@every 1h",
				Lease: 3 * time.Second, Handler: c.ledger.Job(sleepJob(10 * time.Second))})
		}
		var counter renewCounter
		rdb := c.client()
		rdb.AddHook(&counter)
		s, err := scheduler.New(rdb, table, scheduler.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = s.Run(ctx) })
		time.Sleep(15 * time.Second) // the runs due at start-up, 10 s each
		cancel()
		wg.Wait()

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
