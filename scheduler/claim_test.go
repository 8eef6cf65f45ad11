package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/schedtest"
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

// Pausing a job stops the runs already queued for a slot: scheduled ones are
// recorded skipped_paused instead of starting; a manual run still runs
// (issue 12, defect 10).
func TestPauseStopsQueuedRuns(t *testing.T) {
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

// Redis' memory is bounded: a job's pending manual requests (ErrQueueFull
// beyond MaxPendingManual), its history (history_limit at most
// MaxHistoryLimit) and each record's error text (2 KiB) (issue 12,
// defect 11).
func TestStoreMemoryIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		ctx := context.Background()
		for i := range scheduler.MaxPendingManual {
			if _, err := c.ctl.Trigger(ctx, "nobody"); err != nil {
				t.Fatalf("trigger %d: %v", i, err)
			}
		}
		if _, err := c.ctl.Trigger(ctx, "nobody"); !errors.Is(err, scheduler.ErrQueueFull) {
			t.Errorf("trigger beyond the bound: %v, want ErrQueueFull", err)
		}
		if st, _ := c.ctl.Status(ctx, "nobody", 1); st.PendingManual != scheduler.MaxPendingManual {
			t.Errorf("%d pending, want %d", st.PendingManual, scheduler.MaxPendingManual)
		}

		big := scheduler.Job{Name: "h", Schedule: "@every 1s", HistoryLimit: scheduler.MaxHistoryLimit + 1, Handler: c.ledger.Job(nil)}
		if err := scheduler.ValidateTable([]scheduler.Job{big}); err == nil || !strings.Contains(err.Error(), "jobs[0].HistoryLimit") {
			t.Errorf("history_limit %d accepted: %v", big.HistoryLimit, err)
		}

		c.replicas(1, []scheduler.Job{{Name: "loud", Schedule: "@every 1s", Handler: c.ledger.Job(func(context.Context) error {
			return errors.New(strings.Repeat("é", 10000))
		})}})
		time.Sleep(6 * time.Second)
		c.stop()
		h := c.history("loud")
		if len(h) == 0 {
			t.Fatal("no runs recorded")
		}
		for _, r := range h {
			if len(r.Error) > 2048 || !utf8.ValidString(r.Error) || !strings.HasSuffix(r.Error, "(truncated)") {
				t.Errorf("record error of %d bytes (valid UTF-8: %v), want at most 2048, marked truncated", len(r.Error), utf8.ValidString(r.Error))
			}
		}
	})
}

// Redis loses its data while every replica is down; a replica that starts
// afresh must not run again a run that already ran: a job state created
// afresh is a possible loss, and the instants before its floor are recorded
// missed (issue 12, defect 2).
func TestFreshStateAfterLossDoesNotRerun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.fresh = true
		table := []scheduler.Job{{Name: "once", Schedule: "@every 5s", Handler: c.ledger.Job(nil)}}
		_, stop := c.replica("a", table)
		time.Sleep(11 * time.Second) // runs at 5s and 10s
		stop()
		c.m.FlushAll()
		c.replica("b", table) // remembers nothing; 10s is inside its starting deadline
		time.Sleep(12 * time.Second)
		c.stop()
		if d := c.ledger.Duplicates(); len(d) > 0 {
			t.Errorf("runs started again after the store lost its data: %v", d)
		}
		starts := c.ledger.Starts()
		if starts[id("once", time.Unix(946684815, 0))] != 1 {
			t.Errorf("the first instant past the floor (15s) did not run: %v", starts)
		}
	})
}

// A manual run queued on a replica that stops (gracefully, or dies: here its
// connection to Redis is cut) goes back to the pending requests, and another
// replica runs it, once (issue 12, defect 5).
func TestQueuedManualRunSurvivesItsReplica(t *testing.T) {
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

// heldClaimAnswers holds the answer of every claim Redis ran for 2 s, and
// drops it if the caller's context ended meanwhile, as go-redis does with a
// context that is done while it reads.
type heldClaimAnswers struct{}

func (heldClaimAnswers) DialHook(next redis.DialHook) redis.DialHook { return next }
func (heldClaimAnswers) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && isClaim(cmd) {
			time.Sleep(2 * time.Second)
			if ctx.Err() != nil {
				cmd.SetErr(ctx.Err())
				return ctx.Err()
			}
		}
		return err
	}
}
func (heldClaimAnswers) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A shutdown while a claim's answer is on its way keeps the answer: a
// scheduled run won then starts within the grace period, a manual one goes
// back to the pending requests and another replica runs it (issue 12,
// defect 8).
func TestShutdownKeepsClaimAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		table := []scheduler.Job{
			{Name: "s", Schedule: "@every 10s", Handler: c.ledger.Job(nil)},
			{Name: "m", Schedule: "@yearly", Handler: c.ledger.Job(nil)},
		}
		establish(t, c.client(), table)
		rdb := c.client()
		rdb.AddHook(heldClaimAnswers{})
		a, err := scheduler.New(schedtest.RedisStore(t, rdb), table, scheduler.WithReplicaID("a"), scheduler.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		stopA := c.run(a)
		time.Sleep(9 * time.Second)
		manual, err := c.ctl.Trigger(context.Background(), "m")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond) // a has claimed s@10s and the manual run; the answers are held
		stopA()
		c.replica("b", table[1:])
		time.Sleep(10 * time.Second)
		c.stop()
		starts := c.ledger.Starts()
		if n := starts[id("s", time.Unix(946684810, 0))]; n != 1 {
			t.Errorf("the scheduled run won during shutdown started %d times, want once", n)
		}
		if starts[manual] != 1 {
			t.Errorf("the manual run claimed during shutdown started %d times, want once", starts[manual])
		}
		for _, r := range c.history("s") {
			if r.Outcome != scheduler.Succeeded {
				t.Errorf("%s: %s (%s)", r.ID, r.Outcome, r.Error)
			}
		}
	})
}

// lateClaims holds every claim before Redis runs it (before) and its answer
// after (after).
type lateClaims struct{ before, after time.Duration }

func (lateClaims) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h lateClaims) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		claim := isClaimRequest(cmd)
		if claim {
			time.Sleep(h.before)
		}
		err := next(ctx, cmd)
		if claim {
			time.Sleep(h.after)
		}
		return err
	}
}
func (lateClaims) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// isClaimRequest tells a claim call by its shape before it ran.
func isClaimRequest(cmd redis.Cmder) bool {
	if n := cmd.Name(); n != "evalsha" && n != "eval" {
		return false
	}
	args := cmd.Args()
	keys, _ := args[2].(int)
	if keys <= 0 || len(args) != 3+keys+scheduler.ClaimHead+3*keys {
		return false
	}
	terms, _ := args[len(args)-1].(string)
	return strings.Count(terms, "|") >= 15
}

// A claim answered after the lease the replica may count on, while Redis
// still holds the slot, takes the lease back and runs; one that truly
// cannot start is recorded missed, saying it never ran (issue 12,
// defect 12).
func TestLateClaimAnswer(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after time.Duration
		want          scheduler.Outcome
	}{
		{"taken back", time.Second, 2100 * time.Millisecond, scheduler.Succeeded},
		{"never started", 0, 3500 * time.Millisecond, scheduler.Missed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t)
				rdb := c.client()
				rdb.AddHook(lateClaims{tc.before, tc.after})
				var logs logBuffer
				runAlone(t, rdb, []scheduler.Job{{Name: "late", Schedule: "@every 10s", Lease: 3 * time.Second,
					Handler: c.ledger.Job(nil)}}, 25*time.Second, scheduler.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
				// "run started" is what operators and the fault suite
				// count as a start: a run that never started does not log it.
				if started := strings.Count(logs.String(), `msg="run started"`); (tc.want == scheduler.Succeeded) != (started > 0) {
					t.Errorf("%d runs logged started", started)
				}
				h := c.history("late")
				if len(h) < 2 {
					t.Fatalf("%d records, want at least 2", len(h))
				}
				for _, r := range h {
					if r.Outcome != tc.want || r.Decision != scheduler.Started {
						t.Errorf("%s: decision %s, outcome %s (%s); want started, %s", r.ID, r.Decision, r.Outcome, r.Error, tc.want)
					}
					if tc.want == scheduler.Missed && !strings.Contains(r.Error, "never started") {
						t.Errorf("%s: error %q does not say it never started", r.ID, r.Error)
					}
				}
				if n := len(c.ledger.Entries()); (tc.want == scheduler.Succeeded) != (n >= 2) {
					t.Errorf("%d runs executed", n)
				}
			})
		})
	}
}

// roundTrips counts a client's round trips: a command alone or a pipeline.
type roundTrips struct{ n atomic.Int64 }

func (c *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// A trigger (the request, its bound, its hint) is one round trip once the
// script is loaded.
func TestTriggerIsOneRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		rdb := c.client()
		trips := &roundTrips{}
		rdb.AddHook(trips)
		ctl := schedtest.RedisStore(t, rdb).Control()
		ctx := context.Background()
		if _, err := ctl.Trigger(ctx, "j"); err != nil { // loads the script
			t.Fatal(err)
		}
		before := trips.n.Load()
		if _, err := ctl.Trigger(ctx, "j"); err != nil {
			t.Fatal(err)
		}
		if n := trips.n.Load() - before; n != 1 {
			t.Errorf("a trigger took %d round trips, want 1", n)
		}
		if st, _ := ctl.Status(ctx, "j", 1); st.PendingManual != 2 {
			t.Errorf("%d requests pending, want 2", st.PendingManual)
		}
	})
}

// logBuffer collects a logger's output from many goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
