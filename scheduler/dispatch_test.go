package scheduler_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/scheduler"
)

// slowClaims delays the scheduled claims a replica sends (the first by
// first, the others by rest), as a saturated Redis answers them late, and
// notes how many were in flight at once and which instants they carried.
type slowClaims struct {
	first, rest time.Duration

	mu       sync.Mutex
	calls    int
	inFlight int
	most     int
	widest   int           // the most scheduled runs one call carried
	claimed  map[int64]int // scheduled instant (ms) -> claims of it sent as scheduled
}

func (*slowClaims) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *slowClaims) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !isClaimRequest(cmd) {
			return next(ctx, cmd)
		}
		args := cmd.Args()
		keys := args[2].(int)
		var scheduled []int64
		for i := range keys {
			terms := fmt.Sprint(args[3+keys+scheduler.ClaimHead+3*i+2])
			if f := strings.SplitN(terms, "|", 3); f[0] == "s" && len(f) == 3 {
				ms, _ := strconv.ParseInt(f[1], 10, 64)
				scheduled = append(scheduled, ms)
			}
		}
		if len(scheduled) == 0 {
			return next(ctx, cmd)
		}
		h.mu.Lock()
		h.calls++
		delay := h.rest
		if h.calls == 1 {
			delay = h.first
		}
		h.inFlight++
		h.most = max(h.most, h.inFlight)
		h.widest = max(h.widest, len(scheduled))
		for _, ms := range scheduled {
			h.claimed[ms]++
		}
		h.mu.Unlock()
		time.Sleep(delay) // Redis busy with everyone else's work
		err := next(ctx, cmd)
		h.mu.Lock()
		h.inFlight--
		h.mu.Unlock()
		return err
	}
}
func (*slowClaims) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A replica whose claims Redis answers later than the job's period sends
// one batch at a time: the runs due meanwhile wait and go out together in
// the next call, and those whose starting deadline passed while they
// waited are recorded missed without being claimed. Before, each instant's
// batch went out on its own, however many were still unanswered: on a
// saturated Redis they all shared it and were all answered late, and the
// backlog never drained (3 × 10,000 jobs collapsed). Every
// instant is still decided exactly once.
func TestSlowClaimsGoOutOneBatchAtATime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		rdb := c.client()
		table := []scheduler.Job{{Name: "busy", Schedule: "* * * * * *", StartingDeadline: 2 * time.Second,
			Handler: c.ledger.Job(nil)}}
		establish(t, rdb, table)
		hook := &slowClaims{first: 7 * time.Second, rest: 1500 * time.Millisecond, claimed: map[int64]int{}}
		rdb.AddHook(hook)
		s, err := scheduler.New(schedtest.RedisStore(t, rdb), table, scheduler.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		stop := c.run(s)
		time.Sleep(14 * time.Second)
		stop()
		synctest.Wait()

		hook.mu.Lock()
		defer hook.mu.Unlock()
		if hook.most != 1 {
			t.Errorf("%d scheduled claim calls in flight at once; want 1 at a time", hook.most)
		}
		seen := map[int64]scheduler.Run{}
		for _, r := range c.history("busy") {
			ms := r.ScheduledAt.UnixMilli()
			if o, dup := seen[ms]; dup {
				t.Errorf("instant %s decided twice: %s and %s", r.ScheduledAt, o.Outcome, r.Outcome)
			}
			seen[ms] = r
		}
		// The first claim (the instant the replica starts in) is answered
		// 7 s late: the next four instants' 2 s deadlines passed meanwhile
		// on the replica's clock. They are not sent as claims but queued as
		// misses, which Redis decides on its own clock (within the deadline
		// and the max clock skew, 2 s, it starts them): the first two are
		// missed by then.
		base := start.Truncate(time.Second)
		for k := 1; k <= 4; k++ {
			sec := base.Add(time.Duration(k) * time.Second)
			ms := sec.UnixMilli()
			if hook.claimed[ms] > 0 {
				t.Errorf("instant %s claimed after its starting deadline passed; want it queued as a miss", sec)
			}
			if r, ok := seen[ms]; !ok || k <= 2 && r.Outcome != scheduler.Missed {
				t.Errorf("instant %s, past its deadline before it was sent: recorded %v (%v), want missed", sec, r.Outcome, ok)
			}
		}
		for ms, n := range hook.claimed {
			if n > 1 {
				t.Errorf("instant %d claimed %d times as scheduled", ms, n)
			}
		}
		if len(c.ledger.Entries()) == 0 {
			t.Error("nothing ran")
		}
	})
}

// The runs that waited go out at most one instant's worth at a time (the
// most that came due at once; here one run, the floor lowered to it), the
// oldest first: a pipeline is answered only when all of it is, so a batch
// of several instants would start the runs Redis decided first seconds
// after their decision, and hold back the drop of those whose deadline
// passes meanwhile. Each instant is still decided once.
func TestHeldRunsGoOutOneInstantAtATime(t *testing.T) {
	defer scheduler.SetHeldBatchMin(1)()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		rdb := c.client()
		table := []scheduler.Job{{Name: "busy", Schedule: "* * * * * *", StartingDeadline: 2 * time.Second,
			Handler: c.ledger.Job(nil)}}
		establish(t, rdb, table)
		hook := &slowClaims{first: 7 * time.Second, rest: 1500 * time.Millisecond, claimed: map[int64]int{}}
		rdb.AddHook(hook)
		s, err := scheduler.New(schedtest.RedisStore(t, rdb), table, scheduler.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		stop := c.run(s)
		time.Sleep(14 * time.Second)
		stop()
		synctest.Wait()

		hook.mu.Lock()
		defer hook.mu.Unlock()
		if hook.widest != 1 || hook.most != 1 {
			t.Errorf("claim calls carried up to %d scheduled runs, %d in flight at once; want 1 and 1", hook.widest, hook.most)
		}
		seen := map[int64]bool{}
		for _, r := range c.history("busy") {
			ms := r.ScheduledAt.UnixMilli()
			if seen[ms] {
				t.Errorf("instant %s decided twice", r.ScheduledAt)
			}
			seen[ms] = true
		}
		if len(c.ledger.Entries()) == 0 {
			t.Error("nothing ran")
		}
	})
}
