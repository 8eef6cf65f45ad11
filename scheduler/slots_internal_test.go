package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// slotStore is a store on a fresh real redis-server, and Redis' time now.
func slotStore(t *testing.T) (*store.Redis, *redis.Client, time.Time) {
	t.Helper()
	c := redistest.Start(t).Client(t, nil)
	s, err := store.NewRedis(c, store.BackendConfig{Prefix: "sl"})
	if err != nil {
		t.Fatal(err)
	}
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return s, c, now.Truncate(time.Second)
}

// One run of a claim batch whose claim fails in Redis (its job's meta key
// holds something else) is answered refused; the others of the batch are
// decided as if it were not there, and it leaves no record behind.
func TestClaimBatchIsolatesAFailingRun(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		s, c, now := slotStore(t)
		batchWithAFailingRun(t, s, c, now)
	})
	t.Run("miniredis", func(t *testing.T) { // the embedded store's engine
		m := miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: m.Addr()})
		s, err := store.NewRedis(c, store.BackendConfig{Prefix: "sl"})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().Truncate(time.Second)
		m.SetTime(now)
		batchWithAFailingRun(t, s, c, now)
	})
}

func batchWithAFailingRun(t *testing.T, s *store.Redis, c *redis.Client, now time.Time) {
	ctx := context.Background()
	var js []*jobState
	for _, name := range []string{"normal", "bad", "other"} {
		j := testJob(t, s, name, "@every 1s", func(j *Job) { j.StartingDeadline = time.Minute })
		seed(t, c, j)
		js = append(js, j)
	}
	if err := c.Del(ctx, js[1].metaKey).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, js[1].metaKey, "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	at := now.Add(-time.Second)
	reqs := []claimReq{claimOf(js[0], at, store.RunScheduled, "o1"), claimOf(js[1], at, store.RunScheduled, "o2"), claimOf(js[2], at, store.RunScheduled, "o3")}
	res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(reqs...))
	if err != nil {
		t.Fatalf("the batch failed as a whole: %v", err)
	}
	if res[0].Status != store.AnswerStarted || res[2].Status != store.AnswerStarted {
		t.Errorf("the good runs of the batch: %+v, %+v; want both started", res[0], res[2])
	}
	if res[1].Status != store.AnswerRefused || !strings.Contains(res[1].Reason, "WRONGTYPE") {
		t.Errorf("the failing run: %+v; want refused, saying why", res[1])
	}
	if n := c.Exists(ctx, s.Key("bad", "run:"+reqs[1].Suffix), s.Key("bad", "slots")).Val(); n != 0 {
		t.Errorf("the failing run left %d keys behind", n)
	}
}

// Slot numbers are recorded at every concurrency, 1 included: raising the
// limit while a run holds slot 1 gives the next run slot 2, lowering and
// raising it again (N→1→N) never gives a held number, the lowest free
// number goes first, and each slot's tokens rise. The claim's cost does not
// depend on the limit: a limit of a million is as cheap as one of 2.
func TestSlotNumbersAcrossLimitChanges(t *testing.T) {
	s, c, now := slotStore(t)
	ctx := context.Background()
	at := func(limit int) *jobState {
		j := testJob(t, s, "slow", "@every 1s", func(j *Job) {
			j.Concurrency, j.StartingDeadline, j.Lease = limit, time.Hour, time.Minute
		})
		j.memo.observe("e0", 0)
		return j
	}
	seed(t, c, at(1))
	held := map[int]string{}
	top := map[int]int64{}
	var reqs []claimReq
	claim := func(limit, k int, want store.Answer) store.ClaimRes {
		t.Helper()
		r := claimOf(at(limit), now.Add(time.Duration(k-100)*time.Second), store.RunScheduled, "o"+time.Duration(k).String())
		res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(r))
		if err != nil {
			t.Fatal(err)
		}
		got := res[0]
		if got.Status != want {
			t.Fatalf("claim %d at limit %d: %+v, want %s", k, limit, got, want)
		}
		if got.Status == store.AnswerStarted {
			if other, ok := held[got.Slot]; ok {
				t.Errorf("claim %d at limit %d: slot %d, held by %s", k, limit, got.Slot, other)
			}
			if got.Fence <= top[got.Slot] {
				t.Errorf("slot %d: token %d not above %d", got.Slot, got.Fence, top[got.Slot])
			}
			held[got.Slot], top[got.Slot] = r.ID, got.Fence
			r.Slot = got.Slot
			reqs = append(reqs, r)
		}
		return got
	}
	end := func(slot int) {
		t.Helper()
		for i, r := range reqs {
			if r.Slot == slot && held[slot] == r.ID {
				if _, err := s.Complete(ctx, []store.CompleteReq{{R: &reqs[i].StoreClaim, Replica: "r1", Outcome: Succeeded, Attempts: 1}}); err != nil {
					t.Fatal(err)
				}
				delete(held, slot)
				return
			}
		}
		t.Fatalf("no run holds slot %d", slot)
	}
	if r := claim(1, 1, store.AnswerStarted); r.Slot != 1 {
		t.Errorf("first run: slot %d", r.Slot)
	}
	claim(1, 2, store.AnswerSkippedOverlap)
	if r := claim(2, 3, store.AnswerStarted); r.Slot != 2 { // 1→2 while slot 1 is held
		t.Errorf("after raising the limit to 2 while slot 1 is held: slot %d, want 2", r.Slot)
	}
	claim(1, 4, store.AnswerSkippedOverlap) // a replica still at 1
	if r := claim(3, 5, store.AnswerStarted); r.Slot != 3 {
		t.Errorf("limit 3: slot %d, want 3", r.Slot)
	}
	end(1)
	claim(1, 6, store.AnswerSkippedOverlap) // 2 held, limit 1
	if r := claim(3, 7, store.AnswerStarted); r.Slot != 1 {
		t.Errorf("slot 1 free again: slot %d, want the lowest free, 1", r.Slot)
	}
	end(2)
	end(3)
	if r := claim(1000000, 8, store.AnswerStarted); r.Slot != 2 {
		t.Errorf("limit 1000000: slot %d, want 2", r.Slot)
	}
	end(1)
	end(2)
	if n := c.Exists(ctx, s.Key("slow", "nums"), s.Key("slow", "slots")).Val(); n != 0 {
		t.Errorf("%d slot keys left once no run holds a slot", n)
	}
	if r := claim(2, 9, store.AnswerStarted); r.Slot != 1 {
		t.Errorf("numbers start again from 1 once no run holds a slot: slot %d", r.Slot)
	}
}
