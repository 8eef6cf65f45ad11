package scheduler_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/scheduler"
)

// A replica alone, whose wall clock steps an hour (ahead or back) for 5 s
// and is then set right, as NTP does after a VM resumes: it claims nothing
// while its clock disagrees with Redis', resumes within a second or two of
// the clock coming back (starting, late, the latest instant whose starting
// deadline has not passed, as a replica starting then would), runs every instant after that once, and neither
// catches up on the instants a wrong clock called past nor writes records
// for them.
func TestClockStepHoldsClaimsThenResumes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		step time.Duration
	}{{"ahead", time.Hour}, {"back", -time.Hour}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t)
				var off atomic.Int64
				clk := scheduler.ClockFunc(func() time.Time { return time.Now().Add(time.Duration(off.Load())) })
				table := []scheduler.Job{{Name: "tick", Schedule: "@every 1s", CatchupWindow: 2 * time.Hour,
					Catchup: scheduler.CatchupAll, Handler: c.ledger.Job(sleepJob(100 * time.Millisecond))}}
				c.replica("alone", table, scheduler.WithClock(clk))

				time.Sleep(5*time.Second + 500*time.Millisecond)
				off.Store(int64(tc.step))
				stepped := time.Now()
				time.Sleep(5 * time.Second)
				off.Store(0)
				back := time.Now()
				time.Sleep(6 * time.Second)
				c.stop()

				var first time.Time
				for _, e := range c.ledger.Entries() {
					if e.Start.After(stepped) && e.Start.Before(back) {
						t.Errorf("%s started while the replica's clock was %s off", e.RunID, tc.step)
					}
					if e.Start.After(back) && (first.IsZero() || e.Start.Before(first)) {
						first = e.Start
					}
				}
				if first.IsZero() || first.Sub(back) > 2*time.Second {
					t.Fatalf("first run after the clock came back started at %v (clock back at %v)", first, back)
				}
				starts := c.ledger.Starts()
				for at := back.Add(2 * time.Second).Truncate(time.Second); at.Before(back.Add(5 * time.Second)); at = at.Add(time.Second) {
					if id := "tick@" + at.UTC().Format(time.RFC3339); starts[id] != 1 {
						t.Errorf("%s started %d times, want once", id, starts[id])
					}
				}
				for _, r := range c.history("tick") {
					if r.Kind == scheduler.KindCatchup {
						t.Errorf("catch-up run %s: nothing was missed", r.ID)
					}
					if r.ScheduledAt.Before(stepped.Add(-time.Minute)) || r.ScheduledAt.After(back.Add(time.Minute)) {
						t.Errorf("record %s (%s) for an instant the wrong clock made up", r.ID, r.Outcome)
					}
				}
				if d := c.ledger.Duplicates(); len(d) > 0 {
					t.Errorf("duplicates: %v", d)
				}
			})
		})
	}
}

// A replica that starts with its clock an hour ahead must not take the hour
// of instants its clock calls past for missed runs: catch-up waits for a
// clock that agrees with Redis'.
func TestClockAheadAtStartCatchesNothingUp(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		table := []scheduler.Job{{Name: "cu", Schedule: "@every 10s", StartingDeadline: 2 * time.Second,
			CatchupWindow: 2 * time.Hour, Catchup: scheduler.CatchupAll, Handler: c.ledger.Job(nil)}}
		_, stop := c.replica("a", table)
		time.Sleep(25 * time.Second)
		stop()
		before := len(c.ledger.Entries())
		c.replica("ahead", table, scheduler.WithClock(skewed(time.Hour)))
		time.Sleep(30 * time.Second)
		c.stop()
		now := time.Now()
		for _, e := range c.ledger.Entries()[before:] {
			t.Errorf("%s ran on %s (scheduled %s from now)", e.RunID, e.Replica, e.Scheduled.Sub(now))
		}
		for _, r := range c.history("cu") {
			if r.ScheduledAt.After(now) {
				t.Errorf("record %s (%s, %s) for an instant still to come", r.ID, r.Kind, r.Outcome)
			}
		}
	})
}

func skewed(off time.Duration) scheduler.Clock {
	return scheduler.ClockFunc(func() time.Time { return time.Now().Add(off) })
}

// slowClockReads holds the answer to every heartbeat's reading of Redis'
// clock (the pipeline with TIME) for 3 s, as a client that does not honour
// its context's deadline would during a failover.
type slowClockReads struct{}

func (slowClockReads) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (slowClockReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (slowClockReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if c.Name() == "time" {
				time.Sleep(3 * time.Second)
				break
			}
		}
		return err
	}
}

// A slow answer is a poor reading of Redis' clock (Redis read it somewhere
// within the round trip): it must not make a replica whose clock is right
// distrust it and stop claiming.
func TestSlowClockReadingsDoNotHoldClaims(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		rdb := c.client()
		rdb.AddHook(slowClockReads{})
		table := []scheduler.Job{{Name: "tick", Schedule: "@every 1s", Handler: c.ledger.Job(nil)}}
		s, err := scheduler.New(schedtest.RedisStore(t, rdb), table, scheduler.WithReplicaID("alone"), scheduler.WithLogger(quiet),
			scheduler.WithMaxClockSkew(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		start := time.Now()
		time.Sleep(20 * time.Second)
		cancel()
		<-done
		starts := c.ledger.Starts()
		for at := start.Add(5 * time.Second).Truncate(time.Second); at.Before(start.Add(19 * time.Second)); at = at.Add(time.Second) {
			if id := "tick@" + at.UTC().Format(time.RFC3339); starts[id] != 1 {
				t.Errorf("%s started %d times, want once", id, starts[id])
			}
		}
	})
}

// slowClaimAnswers delays the answer to every claim call by 30 ms after
// Redis ran it, as a batch of thousands of runs does: Redis reads its clock
// when the script starts and answers when it has decided them all.
type slowClaimAnswers struct{}

func (slowClaimAnswers) DialHook(next redis.DialHook) redis.DialHook { return next }
func (slowClaimAnswers) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if isClaim(cmd) {
			time.Sleep(30 * time.Millisecond)
		}
		return err
	}
}
func (slowClaimAnswers) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if isClaim(c) {
				time.Sleep(30 * time.Millisecond)
				break
			}
		}
		return err
	}
}

func isClaim(cmd redis.Cmder) bool { return claimCalls().count(cmd) }

// A claim's answer that comes back late (a big batch) still starts the job
// at its instant on Redis' clock, placed by the heartbeat's reading of it,
// not at "answer time + instant − the clock Redis read when it began".
func TestSlowClaimAnswerStillStartsAtTheInstant(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		rdb := c.client()
		rdb.AddHook(slowClaimAnswers{})
		table := []scheduler.Job{{Name: "tick", Schedule: "@every 1s", Handler: c.ledger.Job(nil)}}
		runAlone(t, rdb, table, 10*time.Second, scheduler.WithReplicaID("alone"))
		entries := c.ledger.Entries()
		if len(entries) < 8 {
			t.Fatalf("only %d runs", len(entries))
		}
		for _, e := range entries[2:] { // from once the heartbeat has read Redis' clock
			if d := e.Start.Sub(e.Scheduled); d != 0 {
				t.Errorf("%s started %s after its instant", e.RunID, d)
			}
		}
	})
}
