package scheduler_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/scheduler"
)

// Redis loses its data while every replica is down; a replica that starts
// afresh must not run again a run that already ran: a job state created
// afresh is a possible loss, and the instants before its floor are recorded
// missed.
func TestFreshStateAfterLossDoesNotRerun(t *testing.T) {
	t.Parallel()
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
// back to the pending requests and another replica runs it.
func TestShutdownKeepsClaimAnswers(t *testing.T) {
	t.Parallel()
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
	terms := fmt.Sprint(args[len(args)-1]) // a store.ArgRef: its String is its text
	return strings.Count(terms, "|") >= 15
}

// A claim answered after the lease the replica may count on, while Redis
// still holds the slot, takes the lease back and runs; one that truly
// cannot start is recorded missed, saying it never ran.
func TestLateClaimAnswer(t *testing.T) {
	t.Parallel()
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
