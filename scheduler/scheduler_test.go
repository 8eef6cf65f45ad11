package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/lockprovider"
	"github.com/solocron/solocron/scheduler"
)

// The concurrency limit holds across replicas: a job that lasts longer than
// its interval never has more than `concurrency` runs in flight, and the
// runs that find every slot busy are recorded skipped_overlap.
func TestOverlapSkipNeverExceedsConcurrency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.replicas(3, []scheduler.Job{{Name: "slow", Schedule: "@every 1s", Concurrency: 2,
			Handler: c.ledger.Job(sleepJob(3500 * time.Millisecond))}})
		time.Sleep(60 * time.Second)
		c.stop()
		if got := c.ledger.MaxInFlight("slow"); got != 2 {
			t.Errorf("max runs in flight = %d, want exactly the concurrency, 2", got)
		}
		o := c.outcomes("slow")
		if o[scheduler.SkippedOverlap] < 20 || o[scheduler.Succeeded] < 20 {
			t.Errorf("outcomes %v: want both skips and successes", o)
		}
		if d := c.ledger.Duplicates(); len(d) > 0 {
			t.Errorf("duplicates: %v", d)
		}
	})
}

// overlap: wait queues runs first come, first served, across replicas.
func TestOverlapWaitAdmitsInOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		table := []scheduler.Job{{Name: "queue", Schedule: "@every 1s", Concurrency: 1,
			Overlap: scheduler.OverlapWait, MaxWait: time.Minute, StartingDeadline: 2 * time.Second,
			Handler: c.ledger.Job(sleepJob(1500 * time.Millisecond))}}
		var stops []func()
		for _, name := range []string{"a", "b", "c"} {
			_, stop := c.replica(name, table)
			stops = append(stops, stop)
		}
		time.Sleep(12 * time.Second) // 12 arrivals, each needs 1.5s of the single slot
		if err := c.ctl.Pause(context.Background(), "queue"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute) // the queue is recorded skipped_paused
		c.stop()
		entries := c.ledger.Entries()
		if len(entries) < 7 {
			t.Fatalf("only %d runs started", len(entries))
		}
		for i := 1; i < len(entries); i++ {
			if entries[i].Scheduled.Before(entries[i-1].Scheduled) {
				t.Errorf("run %s started after %s: not first come, first served", entries[i-1].RunID, entries[i].RunID)
			}
		}
		if got := c.ledger.MaxInFlight("queue"); got != 1 {
			t.Errorf("max in flight = %d, want 1", got)
		}
		if o := c.outcomes("queue"); o[scheduler.SkippedOverlap] != 0 || o[scheduler.Missed] != 0 {
			t.Errorf("outcomes %v: nothing should be dropped within max_wait", o)
		}
	})
}

// overlap: replace cancels the oldest run in flight, on whichever replica
// it runs, and closes it as replaced.
func TestOverlapReplaceCancelsOlderRun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		causes := make(chan error, 10)
		c.replicas(3, []scheduler.Job{{Name: "rep", Schedule: "@every 10s", Overlap: scheduler.OverlapReplace,
			Lease: 3 * time.Second,
			Handler: c.ledger.Job(func(ctx context.Context) error {
				<-ctx.Done() // runs until told to stop
				causes <- context.Cause(ctx)
				return ctx.Err()
			})}})
		time.Sleep(25 * time.Second) // instants at 0s (maybe), 10s, 20s
		c.stop()
		runs := c.ledger.Runs("rep")
		if len(runs) < 2 {
			t.Fatalf("%d runs; want a second one to replace the first", len(runs))
		}
		first := <-causes
		if !errors.Is(first, scheduler.ErrReplaced) || !errors.Is(first, lockprovider.ErrLeaseLost) {
			t.Fatalf("the older run was cancelled with %v, want ErrReplaced (a kind of ErrLeaseLost)", first)
		}
		h := c.history("rep")
		var replaced int
		for _, r := range h {
			if r.Outcome == scheduler.Replaced {
				replaced++
				if !strings.Contains(r.Error, "replaced by rep@") {
					t.Errorf("replaced record error = %q", r.Error)
				}
			}
		}
		if replaced != len(runs)-1 {
			t.Errorf("%d runs recorded replaced, want %d (all but the last)", replaced, len(runs)-1)
		}
		if got := c.ledger.MaxInFlight("rep"); got > 2 {
			t.Errorf("%d runs in flight at once", got)
		}
	})
}

// catchup: latest runs the most recent instant missed while every replica
// was down, once; catchup: all runs each of them, oldest first.
func TestCatchupAfterAllReplicasWereDown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy scheduler.Catchup
		want   int
	}{{scheduler.CatchupLatest, 1}, {scheduler.CatchupAll, 5}} {
		t.Run(string(tc.policy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t)
				table := []scheduler.Job{{Name: "cu", Schedule: "@every 10s", StartingDeadline: 2 * time.Second,
					CatchupWindow: 10 * time.Minute, Catchup: tc.policy, Handler: c.ledger.Job(nil)}}
				_, stop := c.replica("a", table)
				time.Sleep(25 * time.Second) // runs at 10s and 20s
				stop()
				before := len(c.ledger.Runs("cu"))
				downAt := time.Now()
				time.Sleep(55 * time.Second) // everyone down: 30s..70s missed; 80s is due at the restart
				c.replica("b", table)
				time.Sleep(time.Second)
				c.stop()

				var catchups []scheduler.Run
				for _, r := range c.history("cu") {
					if r.Kind == scheduler.KindCatchup {
						catchups = append(catchups, r)
					}
				}
				if len(catchups) != tc.want {
					t.Fatalf("%d catch-up runs, want %d: %+v", len(catchups), tc.want, catchups)
				}
				latest := downAt.Add(45 * time.Second).Truncate(10 * time.Second) // 70s
				if !catchups[0].ScheduledAt.Equal(latest) {
					t.Errorf("newest catch-up run is for %s, want %s", catchups[0].ScheduledAt, latest)
				}
				for _, r := range catchups {
					if r.Outcome != scheduler.Succeeded {
						t.Errorf("catch-up run %s: %s", r.ID, r.Outcome)
					}
				}
				for _, r := range c.history("cu") {
					t.Logf("%s %s %s %s", r.ID, r.Kind, r.Outcome, r.Error)
				}
				if after := len(c.ledger.Runs("cu")); after-before != tc.want+1 {
					t.Errorf("%d runs after restart, want %d catch-up + the one due", after-before, tc.want)
				}
				if d := c.ledger.Duplicates(); len(d) > 0 {
					t.Errorf("duplicates: %v", d)
				}
			})
		})
	}
}

// Jitter delays each run by an amount derived from its run id: replicas with
// different start times and clocks agree, and runs are spread out.
func TestJitterIsIdenticalAcrossReplicas(t *testing.T) {
	t.Parallel()
	testkit.Long(t) // two clusters, ten minutes of runs each
	synctest.Test(t, func(t *testing.T) {
		offsets := map[string]time.Duration{}
		for cluster := range 2 { // two independent clusters must agree run by run
			c := newCluster(t)
			c.replicas(2+cluster, []scheduler.Job{{Name: "jit", Schedule: "@every 1m", Jitter: 30 * time.Second, Handler: c.ledger.Job(nil)}})
			time.Sleep(10 * time.Minute)
			c.stop()
			for _, e := range c.ledger.Runs("jit") {
				off := e.Start.Sub(e.Scheduled)
				if off < 0 || off >= 30*time.Second {
					t.Errorf("%s started %s after its instant, outside [0, 30s)", e.RunID, off)
				}
				if prev, ok := offsets[e.RunID]; ok && prev != off {
					t.Errorf("%s: jitter %s in one cluster, %s in the other", e.RunID, prev, off)
				}
				offsets[e.RunID] = off
			}
		}
		distinct := map[time.Duration]bool{}
		for _, off := range offsets {
			distinct[off] = true
		}
		if len(distinct) < 5 {
			t.Errorf("only %d distinct jitters over %d runs: not spread", len(distinct), len(offsets))
		}
	})
}

// Retries happen inside the same run, each attempt with a higher fencing
// token.
func TestRetriesGetRisingFencingTokens(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		var calls atomic.Int64
		c.replicas(2, []scheduler.Job{{Name: "flaky", Schedule: "@every 1m", Retries: 3, RetryBackoff: time.Second,
			Handler: c.ledger.Job(func(ctx context.Context) error {
				if calls.Add(1)%3 != 0 {
					return errors.New("transient")
				}
				return nil
			})}})
		time.Sleep(90 * time.Second)
		c.stop()
		entries := c.ledger.Entries()
		if len(entries) < 3 {
			t.Fatalf("%d attempts", len(entries))
		}
		for i := 1; i < 3; i++ {
			if entries[i].RunID != entries[0].RunID || entries[i].Attempt != i+1 {
				t.Fatalf("attempt %d: %+v", i+1, entries[i])
			}
			if entries[i].Token <= entries[i-1].Token {
				t.Errorf("attempt %d token %d not above attempt %d's %d", i+1, entries[i].Token, i, entries[i-1].Token)
			}
		}
		h := c.history("flaky")
		last := h[len(h)-1] // oldest
		if last.Outcome != scheduler.Succeeded || last.Attempts != 3 || last.FencingToken != entries[2].Token {
			t.Errorf("record %+v; want succeeded after 3 attempts with the last token", last)
		}
	})
}

// A permanent error is not retried.
func TestPermanentErrorsAreNotRetried(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.replicas(1, []scheduler.Job{{Name: "perm", Schedule: "@every 1m", Retries: 5,
			Handler: c.ledger.Job(func(context.Context) error { return jobs.Permanent(errors.New("bad request")) })}})
		time.Sleep(30 * time.Second)
		c.stop()
		if n := len(c.ledger.Entries()); n != 1 {
			t.Errorf("%d attempts of a permanent failure, want 1", n)
		}
		if o := c.outcomes("perm"); o[scheduler.Failed] != 1 {
			t.Errorf("outcomes %v", o)
		}
	})
}

// A lease taken away (the slot reassigned behind the winner's back) cancels
// the winner's job with cause ErrLeaseLost at its next renewal.
func TestStolenLeaseCancelsWinner(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		causes := make(chan error, 1)
		c.replicas(1, []scheduler.Job{{Name: "steal", Schedule: "@every 1h", Lease: 3 * time.Second,
			Handler: c.ledger.Job(func(ctx context.Context) error {
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return ctx.Err()
			})}})
		e := <-c.ledger.Started()
		stolenAt := time.Now()
		rdb := c.client()
		if err := rdb.ZRem(context.Background(), "solocron:{steal}:slots", e.RunID).Err(); err != nil {
			t.Fatal(err)
		}
		cause := <-causes
		if !errors.Is(cause, lockprovider.ErrLeaseLost) {
			t.Fatalf("cause %v, want ErrLeaseLost", cause)
		}
		// A renewal waits up to a millisecond for others to share its call.
		if d := time.Since(stolenAt); d > time.Second+time.Millisecond {
			t.Errorf("noticed %s after the theft, want within a renewal interval (1s)", d)
		}
		c.stop()
		if o := c.outcomes("steal"); o[scheduler.LeaseLost] != 1 {
			t.Errorf("outcomes %v, want one lease_lost", o)
		}
	})
}

// When Redis stops answering, the lease runs out on the local clock and the
// job is cancelled before Redis could give the slot to anyone else.
func TestExpiredLeaseCancelsWinner(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		causes := make(chan error, 1)
		c.replicas(1, []scheduler.Job{{Name: "exp", Schedule: "@every 1h", Lease: 3 * time.Second,
			Handler: c.ledger.Job(func(ctx context.Context) error {
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return ctx.Err()
			})}})
		e := <-c.ledger.Started()
		c.m.SetError("LOADING injected: Redis is not answering")
		cause := <-causes
		lostAfter := time.Since(e.Start)
		c.m.SetError("")
		if !errors.Is(cause, lockprovider.ErrLeaseLost) {
			t.Fatalf("cause %v, want ErrLeaseLost", cause)
		}
		if lostAfter >= 3*time.Second {
			t.Errorf("job cancelled %s after start; the lease (3s) would have let another replica in", lostAfter)
		}
		time.Sleep(5 * time.Second)
		c.stop()
		if o := c.outcomes("exp"); o[scheduler.LeaseLost] != 1 {
			t.Errorf("outcomes %v, want one lease_lost", o)
		}
	})
}

// on_lease_lost: continue lets the job finish and records lease_lost.
func TestLeaseLostContinueLetsJobFinish(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.replicas(1, []scheduler.Job{{Name: "cont", Schedule: "@every 1h", Lease: 3 * time.Second,
			OnLeaseLost: scheduler.LeaseLostContinue, Handler: c.ledger.Job(sleepJob(10 * time.Second))}})
		e := <-c.ledger.Started()
		_ = c.client().ZRem(context.Background(), "solocron:{cont}:slots", e.RunID)
		time.Sleep(15 * time.Second)
		c.stop()
		got := c.ledger.Entries()[0]
		if got.Err != nil || got.End.Sub(got.Start) != 10*time.Second {
			t.Errorf("job ended after %s with %v; it should have run its full 10s", got.End.Sub(got.Start), got.Err)
		}
		h := c.history("cont")
		if len(h) != 1 || h[0].Outcome != scheduler.LeaseLost {
			t.Fatalf("history %+v", h)
		}
	})
}

// While Redis cannot be reached, nothing runs; runs whose starting deadline
// passes meanwhile are recorded missed — once — when Redis is back.
func TestStoreDownRecordsMissedNeverRuns(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.replicas(3, []scheduler.Job{{Name: "down", Schedule: "@every 10s", StartingDeadline: 2 * time.Second, Handler: c.ledger.Job(nil)}})
		time.Sleep(15 * time.Second) // runs at 10s
		c.m.SetError("LOADING injected: Redis is not answering")
		time.Sleep(20 * time.Second) // 20s and 30s fall in the outage
		c.m.SetError("")
		time.Sleep(5 * time.Second)
		c.stop()
		base := time.Now().Add(-40 * time.Second).Truncate(10 * time.Second)
		starts := c.ledger.Starts()
		for _, at := range []time.Time{base.Add(20 * time.Second), base.Add(30 * time.Second)} {
			if starts[id("down", at)] != 0 {
				t.Errorf("%s ran without a claim", id("down", at))
			}
		}
		var missed []string
		for _, r := range c.history("down") {
			if r.Outcome == scheduler.Missed {
				missed = append(missed, r.ID)
			}
		}
		if len(missed) != 2 {
			t.Errorf("missed records %v, want the two instants of the outage, once each", missed)
		}
		if starts[id("down", base.Add(40*time.Second))] != 1 {
			t.Errorf("the first run after the outage did not run once")
		}
	})
}

// Pause and resume act on every replica, through the store.
func TestPauseAndResumeAcrossReplicas(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.replicas(3, []scheduler.Job{{Name: "p", Schedule: "@every 1s", Handler: c.ledger.Job(nil)}})
		time.Sleep(5500 * time.Millisecond)
		ctx := context.Background()
		if err := c.ctl.Pause(ctx, "p"); err != nil {
			t.Fatal(err)
		}
		pausedAt := time.Now()
		time.Sleep(10 * time.Second)
		if err := c.ctl.Resume(ctx, "p"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		c.stop()
		for _, e := range c.ledger.Runs("p") {
			if e.Scheduled.After(pausedAt) && e.Scheduled.Before(pausedAt.Add(10*time.Second)) {
				t.Errorf("%s ran while paused", e.RunID)
			}
		}
		if o := c.outcomes("p"); o[scheduler.SkippedPaused] != 10 || o[scheduler.Succeeded] < 9 {
			t.Errorf("outcomes %v: want 10 skipped_paused and runs before and after", o)
		}
		st, err := c.ctl.Status(ctx, "p", 5)
		if err != nil || st.Paused {
			t.Errorf("status %+v, %v", st, err)
		}
	})
}

// A triggered run runs exactly once across the cluster, even while the job
// is paused (a human asked for it).
func TestTriggerRunsExactlyOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.replicas(3, []scheduler.Job{{Name: "man", Schedule: "@yearly", Paused: true, Handler: c.ledger.Job(nil)}})
		var ids []string
		for range 20 {
			id, err := c.ctl.Trigger(context.Background(), "man")
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		time.Sleep(5 * time.Second)
		c.stop()
		starts := c.ledger.Starts()
		for _, id := range ids {
			if !strings.HasPrefix(id, "man@manual-") || starts[id] != 1 {
				t.Errorf("%s started %d times", id, starts[id])
			}
		}
		for _, r := range c.history("man") {
			if r.Kind == scheduler.KindManual && r.Outcome != scheduler.Succeeded {
				t.Errorf("record %+v", r)
			}
		}
		if _, err := c.ctl.Trigger(context.Background(), "bad{name}"); err == nil {
			t.Error("Trigger accepted an invalid job name")
		}
	})
}

// Redis losing its data (restart without persistence) must not make a
// lagging replica run again a run that already ran, and fencing tokens keep
// rising across the loss.
func TestDataLossNeverRerunsNorLowersTokens(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		table := []scheduler.Job{{Name: "loss", Schedule: "@every 1s", Handler: c.ledger.Job(sleepJob(200 * time.Millisecond))}}
		for i, off := range []time.Duration{-2 * time.Second, 0, 2 * time.Second} {
			c.replica(string(rune('a'+i)), table, scheduler.WithClock(scheduler.ClockFunc(func() time.Time { return time.Now().Add(off) })))
		}
		for i := range 5 {
			time.Sleep(10*time.Second + 300*time.Millisecond)
			c.m.FlushAll()
			t.Logf("flush %d at %s", i, time.Now().Format(time.TimeOnly))
		}
		time.Sleep(10 * time.Second)
		c.stop()
		if d := c.ledger.Duplicates(); len(d) > 0 {
			t.Errorf("runs started twice after data loss: %v", d)
		}
		var last int64
		for _, e := range c.ledger.Entries() {
			if e.Token <= last {
				t.Errorf("%s got token %d after %d", e.RunID, e.Token, last)
			}
			last = e.Token
		}
		// Each loss costs the instants before its floor (max skew + claim
		// ahead, 2.5s: about 3 of them), the first start too.
		if n := len(c.ledger.Runs("loss")); n < 42 {
			t.Errorf("only %d runs in 60s: runs must resume within seconds of a loss", n)
		}
	})
}

// The store keeps a job's last history_limit records.
func TestHistoryKeepsLastN(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.replicas(2, []scheduler.Job{{Name: "h", Schedule: "@every 1s", HistoryLimit: 5, Handler: c.ledger.Job(nil)}})
		time.Sleep(20 * time.Second)
		c.stop()
		h := c.history("h")
		if len(h) != 5 {
			t.Fatalf("%d records, want 5", len(h))
		}
		for i := 1; i < len(h); i++ {
			if !h[i].ScheduledAt.Before(h[i-1].ScheduledAt) {
				t.Errorf("history not newest first: %s then %s", h[i-1].ID, h[i].ID)
			}
		}
		r := h[0]
		if r.Replica == "" || r.FencingToken == 0 || r.StartedAt.IsZero() || r.FinishedAt.IsZero() || r.Attempts != 1 || r.Kind != scheduler.KindScheduled {
			t.Errorf("incomplete record %+v", r)
		}
	})
}

// Shutdown stops claiming, lets runs finish within the grace period, then
// cancels the rest with ErrShutdown and records them interrupted.
func TestShutdownDrainsThenInterrupts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		causes := make(chan error, 1)
		_, stop := c.replica("a", []scheduler.Job{
			{Name: "short", Schedule: "@every 1h", Handler: c.ledger.Job(sleepJob(5 * time.Second))},
			{Name: "long", Schedule: "@every 1h", Handler: c.ledger.Job(func(ctx context.Context) error {
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return ctx.Err()
			})},
		}, scheduler.WithShutdownGrace(10*time.Second))
		<-c.ledger.Started()
		<-c.ledger.Started()
		began := time.Now()
		stop()
		if d := time.Since(began); d != 10*time.Second {
			t.Errorf("shutdown took %s, want the 10s grace", d)
		}
		if cause := <-causes; !errors.Is(cause, scheduler.ErrShutdown) {
			t.Errorf("long job cancelled with %v, want ErrShutdown", cause)
		}
		if o := c.outcomes("short"); o[scheduler.Succeeded] != 1 {
			t.Errorf("short: %v", o)
		}
		if o := c.outcomes("long"); o[scheduler.Interrupted] != 1 {
			t.Errorf("long: %v", o)
		}
	})
}

// A timeout cancels the run with ErrTimeout: timed_out.
func TestTimeoutCancelsRun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.replicas(1, []scheduler.Job{{Name: "to", Schedule: "@every 1h", Timeout: 2 * time.Second,
			Handler: c.ledger.Job(func(ctx context.Context) error {
				<-ctx.Done()
				if !errors.Is(context.Cause(ctx), scheduler.ErrTimeout) {
					return errors.New("wrong cause")
				}
				return ctx.Err()
			})}})
		time.Sleep(5 * time.Second)
		c.stop()
		h := c.history("to")
		if len(h) != 1 || h[0].Outcome != scheduler.TimedOut || h[0].Duration() != 2*time.Second {
			t.Fatalf("history %+v", h)
		}
	})
}

// A panicking job is a failure, not a dead replica.
func TestPanicIsRecordedAsFailure(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.replicas(1, []scheduler.Job{{Name: "boom", Schedule: "@every 1h",
			Handler: jobs.Func(func(context.Context) error { panic("kaboom") })}})
		time.Sleep(2 * time.Second)
		c.stop()
		h := c.history("boom")
		if len(h) != 1 || h[0].Outcome != scheduler.Failed || !strings.Contains(h[0].Error, "kaboom") {
			t.Fatalf("history %+v", h)
		}
	})
}

// Reload applies a new table at once; an invalid one changes nothing.
func TestReloadIsAtomic(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		s, _ := c.replica("a", []scheduler.Job{{Name: "old", Schedule: "@every 1s", Handler: c.ledger.Job(nil)}})
		time.Sleep(3500 * time.Millisecond)
		bad := []scheduler.Job{{Name: "new", Schedule: "not a schedule", Handler: c.ledger.Job(nil)}, {Name: "x y"}}
		err := s.Reload(bad)
		var fe *scheduler.FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "jobs[0].Schedule") || !strings.Contains(err.Error(), "jobs[1].Name") {
			t.Fatalf("Reload(bad) = %v", err)
		}
		if got := s.Jobs(); len(got) != 1 || got[0].Name != "old" {
			t.Fatalf("a bad table changed the jobs: %+v", got)
		}
		if err := s.Reload([]scheduler.Job{{Name: "new", Schedule: "@every 1s", Handler: c.ledger.Job(nil)}}); err != nil {
			t.Fatal(err)
		}
		switched := time.Now()
		// A job new to the store starts with its first instant past the
		// data-loss floor (max skew + claim ahead: 2.5s).
		time.Sleep(5 * time.Second)
		c.stop()
		for _, e := range c.ledger.Entries() {
			if e.Job == "old" && e.Start.After(switched) {
				t.Errorf("old job ran after the reload: %s", e.RunID)
			}
		}
		if n := len(c.ledger.Runs("new")); n < 2 {
			t.Errorf("new job ran %d times", n)
		}
	})
}

// scriptCounter counts the calls of one of the package's scripts that Redis
// executed (not those refused with NOSCRIPT), told apart by their shape:
// how many arguments they carry for how many keys, and what kind. It counts
// the calls, the runs in them (one key per run) and the round trips that
// carried them.
type scriptCounter struct {
	shape              func(keys int, argv []any) bool
	calls, runs, trips atomic.Int64
}

// claimCalls counts claim calls: ClaimHead global arguments and 3 per run, the
// last of them the run's terms separated by '|'.
func claimCalls() *scriptCounter {
	return &scriptCounter{shape: func(keys int, argv []any) bool {
		if len(argv) != scheduler.ClaimHead+3*keys {
			return false
		}
		terms := fmt.Sprint(argv[len(argv)-1]) // a store.ArgRef: its String is its text
		return strings.Count(terms, "|") == 21 // 22 terms (claimReq.appendTerms)
	}}
}

// renewCalls counts renew calls: 3 arguments per run, the first a run id
// (job@instant), the last a number (the lease). The run id tells them from
// changed.lua's heartbeat call, which has the same count and kinds for its
// one key.
func renewCalls() *scriptCounter {
	return &scriptCounter{shape: func(keys int, argv []any) bool {
		if len(argv) != 3*keys {
			return false
		}
		id, _ := argv[0].(string)
		_, lease := argv[2].(int64)
		return lease && strings.Contains(id, "@")
	}}
}

func (c *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if c.count(cmd) {
			c.trips.Add(1)
		}
		return err
	}
}
func (c *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		any := false
		for _, cmd := range cmds {
			any = c.count(cmd) || any
		}
		if any {
			c.trips.Add(1)
		}
		return err
	}
}

func (c *scriptCounter) count(cmd redis.Cmder) bool {
	if n := cmd.Name(); (n != "evalsha" && n != "eval") || cmd.Err() != nil {
		return false
	}
	args := cmd.Args()
	keys, _ := args[2].(int)
	if keys > 0 && len(args) >= 3+keys && c.shape(keys, args[3+keys:]) {
		c.calls.Add(1)
		c.runs.Add(int64(keys))
		return true
	}
	return false
}

// Runs due at the same instant are claimed in one round trip: one script
// call decides them all.
func TestClaimsOfOneInstantAreOneRoundTrip(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		var table []scheduler.Job
		for i := range 20 {
			table = append(table, scheduler.Job{Name: "j" + string(rune('a'+i)), Schedule: "@every 10s", Handler: c.ledger.Job(nil)})
		}
		counter := claimCalls()
		rdb := c.client()
		rdb.AddHook(counter)
		runAlone(t, rdb, table, 35*time.Second) // instants at 10s, 20s, 30s (and maybe 0s)
		calls, runs := counter.calls.Load(), counter.runs.Load()
		if runs < 60 || calls != runs/20 {
			t.Errorf("%d claim calls for %d runs; want one call per instant (20 runs each)", calls, runs)
		}
		if n := len(c.ledger.Entries()); int64(n) != runs {
			t.Errorf("%d runs started, %d claimed", n, runs)
		}
	})
}

// lostReplies runs each matching command on the server, then reports a
// timeout instead of its reply — a reply lost on the way back — n times.
type lostReplies struct {
	match func(redis.Cmder) bool
	n     atomic.Int64
}

func (h *lostReplies) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *lostReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && h.match(cmd) && h.n.Add(-1) >= 0 {
			cmd.SetErr(errors.New("i/o timeout (reply lost)"))
			return cmd.Err()
		}
		return err
	}
}
func (h *lostReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// scriptPerRun matches a batched script call with n arguments per run and
// no global ones (complete.lua).
func scriptPerRun(n int) func(redis.Cmder) bool {
	return func(cmd redis.Cmder) bool {
		name := cmd.Name()
		if name != "evalsha" && name != "eval" {
			return false
		}
		args := cmd.Args()
		keys, _ := args[2].(int)
		return keys > 0 && len(args) == 3+keys+n*keys && !isClaim(cmd)
	}
}

func scriptWithArgs(n int) func(redis.Cmder) bool {
	return func(cmd redis.Cmder) bool {
		name := cmd.Name()
		return (name == "evalsha" || name == "eval") && len(cmd.Args()) == n
	}
}

// A claim, admission or close whose reply is lost after Redis executed it
// is retried; the retry must recognise the replica's own decision instead of
// taking it for someone else's — or the run would be started by nobody.
func TestLostRepliesAreRetriedIdempotently(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		job   scheduler.Job
		body  func(context.Context) error
		match func(redis.Cmder) bool
	}{
		// claim.lua with one run: EVALSHA sha 1 key + 6 + 3 args
		{"claim", scheduler.Job{Name: "c", Schedule: "@every 10s"}, nil, func(cmd redis.Cmder) bool {
			return isClaim(cmd) && len(cmd.Args()) == 3+1+scheduler.ClaimHead+3
		}},
		// complete.lua: EVALSHA sha k keys + 8 args per run.
		// A failing job: a retried close must not report its error twice.
		{"complete", scheduler.Job{Name: "c", Schedule: "@every 10s"},
			func(context.Context) error { return errors.New("boom") }, scriptPerRun(8)},
		// admit.lua: EVALSHA sha 1 key + 7 args + 3 per run (one queued).
		// Runs last 11s, so the run at 10s queues and polls admit (every
		// 100ms) before the first ends.
		{"admit", scheduler.Job{Name: "c", Schedule: "@every 10s", Overlap: scheduler.OverlapWait, MaxWait: time.Minute},
			sleepJob(11 * time.Second), func(cmd redis.Cmder) bool {
				rc, ok := cmd.(*redis.Cmd)
				if !ok || !scriptWithArgs(3+1+7+3)(cmd) {
					return false
				}
				rows, _ := rc.Val().([]any)
				if len(rows) != 1 {
					return false
				}
				v, _ := rows[0].([]any)                 // the admission itself, not a "still waiting"
				return len(v) == 3 && v[0] == "started" // token, slot
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t)
				tc.job.Handler = c.ledger.Job(tc.body)
				rdb := c.client()
				lost := &lostReplies{match: tc.match}
				lost.n.Store(1)
				rdb.AddHook(lost)
				establish(t, c.client(), []scheduler.Job{tc.job})
				s, err := scheduler.New(schedtest.RedisStore(t, rdb), []scheduler.Job{tc.job}, scheduler.WithLogger(quiet))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { _ = s.Run(ctx); close(done) }()
				time.Sleep(5 * time.Second)
				// Each closed run's own record (kept for its retention) agrees
				// with its history entry.
				for _, r := range c.history("c") {
					if rec, err := c.ctl.Get(context.Background(), r.ID); err != nil || rec == nil || rec.Error != r.Error || rec.Outcome != r.Outcome {
						t.Errorf("record %s = %+v, %v; history says %s %q", r.ID, rec, err, r.Outcome, r.Error)
					}
				}
				time.Sleep(20 * time.Second)
				cancel()
				<-done
				if lost.n.Load() > 0 {
					t.Fatal("no reply was lost: the test did not exercise anything")
				}
				runs := c.ledger.Runs("c")
				if len(runs) != 3 {
					t.Errorf("%d runs in 25s of an every-10s job, want 3", len(runs))
				}
				for _, r := range c.history("c") {
					ok := r.Outcome == scheduler.Succeeded && r.Error == "" || r.Outcome == scheduler.Failed && r.Error == "boom"
					if !ok {
						t.Errorf("history %s: %s %q", r.ID, r.Outcome, r.Error)
					}
				}
			})
		})
	}
}

// Runs are claimed a little before their instant (WithClaimAhead) and the
// winner starts the job at the instant itself: with 3 replicas racing for
// 50 runs per instant, every job starts exactly on time (fake time: no
// scheduling noise), and its record says it started at its instant.
func TestClaimAheadStartsJobsAtTheirInstant(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		var table []scheduler.Job
		for i := range 50 {
			table = append(table, scheduler.Job{Name: fmt.Sprintf("j%02d", i), Schedule: "@every 1s", Handler: c.ledger.Job(nil)})
		}
		c.replicas(3, table)
		time.Sleep(10 * time.Second)
		c.stop()
		entries := c.ledger.Entries()
		if len(entries) < 450 {
			t.Fatalf("only %d runs", len(entries))
		}
		for _, e := range entries {
			if !e.Start.Equal(e.Scheduled) {
				t.Fatalf("%s started %s after its instant", e.RunID, e.Start.Sub(e.Scheduled))
			}
		}
		for _, r := range c.history("j00") {
			if !r.StartedAt.Equal(r.ScheduledAt) {
				t.Errorf("record %s says it started at %s, its instant is %s", r.ID, r.StartedAt, r.ScheduledAt)
			}
		}
		if d := c.ledger.Duplicates(); len(d) > 0 {
			t.Errorf("duplicates: %v", d)
		}
	})
}

// Runs claimed ahead that cannot start yet (paused here) are claimed again
// at their instant together, in one call, as they were claimed ahead: not
// one round trip each.
func TestPostponedClaimsGoAgainTogether(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		var table []scheduler.Job
		for i := range 20 {
			table = append(table, scheduler.Job{Name: fmt.Sprintf("p%02d", i), Schedule: "@every 10s", Paused: true, Handler: c.ledger.Job(nil)})
		}
		counter := claimCalls()
		rdb := c.client()
		rdb.AddHook(counter)
		runAlone(t, rdb, table, 35*time.Second, scheduler.WithClaimAhead(250*time.Millisecond)) // instants at 10s, 20s, 30s
		calls, runs := counter.calls.Load(), counter.runs.Load()
		// Each instant: 20 runs claimed ahead ("later"), then 20 at the
		// instant (skipped_paused). The instant at 0s is past at start.
		if runs < 120 || calls*20 != runs {
			t.Errorf("%d claim calls for %d runs; want one call per 20 runs", calls, runs)
		}
		for _, j := range table {
			for _, r := range c.history(j.Name) {
				if r.Outcome != scheduler.SkippedPaused {
					t.Errorf("%s: %s, want skipped_paused", r.ID, r.Outcome)
				}
			}
		}
	})
}

// A claim made ahead of the instant only ever starts a run. A job that
// lasts 950ms of every second is still running when the next run is claimed
// ahead; that run must not be skipped for overlap then: it is decided at its
// instant, when the slot is free, as without claiming ahead. Pauses, too,
// are decided at the instant.
func TestClaimAheadDecidesNothingElseEarly(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.replicas(3, []scheduler.Job{
			{Name: "busy", Schedule: "@every 1s", Handler: c.ledger.Job(sleepJob(950 * time.Millisecond))},
			{Name: "paused", Schedule: "@every 1s", Paused: true, Handler: c.ledger.Job(nil)},
		}, scheduler.WithClaimAhead(250*time.Millisecond))
		time.Sleep(20 * time.Second)
		c.stop()
		if o := c.outcomes("busy"); o[scheduler.SkippedOverlap] != 0 || o[scheduler.Succeeded] < 18 {
			t.Errorf("busy: %v; want every run started, none skipped", o)
		}
		// Decided at the instant, these start one claim round trip (plus
		// 1ms, so Redis' clock has reached the instant) after it.
		for _, e := range c.ledger.Runs("busy") {
			if late := e.Start.Sub(e.Scheduled); late < 0 || late > 5*time.Millisecond {
				t.Errorf("%s started %s after its instant", e.RunID, late)
			}
		}
		for _, r := range c.history("paused") {
			if r.Outcome != scheduler.SkippedPaused || r.FinishedAt.Before(r.ScheduledAt) {
				t.Errorf("paused job record %+v: want skipped_paused, decided at or after its instant", r)
			}
		}
		if n := len(c.ledger.Runs("paused")); n != 0 {
			t.Errorf("paused job ran %d times", n)
		}
	})
}

// "run started" is logged when the job starts, at its instant, not when the
// run was claimed ahead of it (it was logged up to the claim-ahead early,
// and for a run whose lease ran out before its instant, which never
// started: a manual one then runs elsewhere under the same run id, and the
// logs showed two starts).
func TestRunStartedLoggedAtTheStart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		logs := &startLogs{seen: &startsSeen{at: map[string]time.Time{}}}
		c.replicas(1, []scheduler.Job{{Name: "tick", Schedule: "@every 1s", Handler: c.ledger.Job(nil)}},
			scheduler.WithClaimAhead(250*time.Millisecond), scheduler.WithLogger(slog.New(logs)))
		time.Sleep(5 * time.Second)
		c.stop()
		entries := c.ledger.Entries()
		if len(entries) < 4 {
			t.Fatalf("only %d runs", len(entries))
		}
		logs.seen.mu.Lock()
		defer logs.seen.mu.Unlock()
		for _, e := range entries {
			at, ok := logs.seen.at[e.RunID]
			if !ok {
				t.Errorf("%s: no \"run started\" logged", e.RunID)
			} else if !at.Equal(e.Start) {
				t.Errorf("%s: \"run started\" logged %s before the job started", e.RunID, e.Start.Sub(at))
			}
		}
	})
}

// startLogs keeps when each run's "run started" was logged.
type startLogs struct {
	seen  *startsSeen
	attrs []slog.Attr
}

type startsSeen struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (*startLogs) Enabled(context.Context, slog.Level) bool { return true }
func (l *startLogs) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "run started" {
		return nil
	}
	id := ""
	for _, a := range l.attrs {
		if a.Key == "run_id" {
			id = a.Value.String()
		}
	}
	l.seen.mu.Lock()
	defer l.seen.mu.Unlock()
	l.seen.at[id] = r.Time
	return nil
}
func (l *startLogs) WithAttrs(as []slog.Attr) slog.Handler {
	return &startLogs{seen: l.seen, attrs: append(slices.Clone(l.attrs), as...)}
}
func (l *startLogs) WithGroup(string) slog.Handler { return l }
