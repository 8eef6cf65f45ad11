package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/scheduler"
)

// lateThenDown answers the first claim after the lease (after), and then
// Redis is unreachable for down: every call fails without running.
type lateThenDown struct {
	after, down time.Duration
	mu          sync.Mutex
	from, until time.Time
}

func (*lateThenDown) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *lateThenDown) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		now := time.Now()
		out := !h.from.IsZero() && !now.Before(h.from) && now.Before(h.until)
		h.mu.Unlock()
		if out {
			err := errors.New("test: Redis unreachable")
			cmd.SetErr(err)
			return err
		}
		claim := isClaimRequest(cmd)
		err := next(ctx, cmd)
		if claim {
			h.mu.Lock()
			first := h.from.IsZero()
			if first {
				h.from = time.Now().Add(h.after)
				h.until = h.from.Add(h.down)
			}
			h.mu.Unlock()
			if first {
				time.Sleep(h.after)
			}
		}
		return err
	}
}
func (*lateThenDown) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A claim answered after its lease, when Redis then stays away longer than
// the close timeout: the replica keeps saying the run never started until
// Redis is back, and the record says missed, not the cluster's lease_lost
// (the search's seed 76).
func TestLateClaimAnswerThenOutage(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		rdb := c.client()
		rdb.AddHook(&lateThenDown{after: 3500 * time.Millisecond, down: 9 * time.Second})
		runAlone(t, rdb, []scheduler.Job{{Name: "late", Schedule: "@every 10s", Lease: 3 * time.Second,
			Handler: c.ledger.Job(nil)}}, 35*time.Second)
		h := c.history("late")
		found := false
		for _, r := range h {
			if r.Outcome == scheduler.LeaseLost {
				t.Errorf("%s: recorded %s -> lease_lost (%s), but it never ran", r.ID, r.Decision, r.Error)
			}
			if r.Decision == scheduler.Started && r.Outcome == scheduler.Missed && strings.Contains(r.Error, "never started") {
				found = true
			}
		}
		if !found {
			t.Errorf("no record of the late claim's run says it never started: %+v", h)
		}
	})
}

// A claim answered just before its lease runs out (60 ms left), Redis then
// unreachable: no renewal can succeed, so the job must not start — it
// would be killed as it starts and recorded lease_lost though it barely
// ran (the fault suite's scenario 20, a Redis stall right after a claim).
// The run is recorded missed, "never started".
func TestClaimAnsweredAsItsLeaseEndsDoesNotStart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		rdb := c.client()
		lease := 3 * time.Second
		// The lease's local deadline is the claim's send + lease − drift
		// (1 % + 2 ms): answer 60 ms before it.
		after := lease - lease/100 - 2*time.Millisecond - 60*time.Millisecond
		rdb.AddHook(&lateThenDown{after: after, down: 9 * time.Second})
		runAlone(t, rdb, []scheduler.Job{{Name: "late", Schedule: "@every 10s", Lease: lease,
			Handler: c.ledger.Job(nil)}}, 35*time.Second)
		h := c.history("late")
		if len(h) == 0 {
			t.Fatal("no record")
		}
		first := h[len(h)-1]
		if n := c.ledger.Starts()[first.ID]; n != 0 {
			t.Errorf("%s started %d times with 60 ms of lease left and Redis away; its record: %s/%s (%s)", first.ID, n, first.Decision, first.Outcome, first.Error)
		}
		if first.Outcome != scheduler.Missed || !strings.Contains(first.Error, "never started") {
			t.Errorf("%s: recorded %s/%s (%s), want missed, never started", first.ID, first.Decision, first.Outcome, first.Error)
		}
	})
}
