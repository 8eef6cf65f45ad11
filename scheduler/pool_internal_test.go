package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// A job's keys, every kind the scripts derive, are the same whether the
// table puts it in a pool or not (its state is identified by its name
// alone), and all hash to its own slot; the pool's key is apart.
func TestPooledJobKeysAreTheJobsOwn(t *testing.T) {
	kinds := luaKinds(t)
	pooled, plain := &store.Redis{Prefix: "app:x"}, &store.Redis{Prefix: "app:x"}
	pooled.PlacePools(poolJobs([]Job{{Name: "a.b-c", Pool: "exports", PoolSize: 2}, {Name: "z", Pool: "exports", PoolSize: 2}}))
	plain.PlacePools(poolJobs([]Job{{Name: "a.b-c"}, {Name: "z"}}))
	for _, job := range []string{"a.b-c", "z"} {
		if m := pooled.MetaKey(job); m != "app:x:{"+job+"}:meta" || m != plain.MetaKey(job) {
			t.Errorf("meta key of %s: %q in a pool, %q out of it", job, m, plain.MetaKey(job))
		}
		for _, k := range kinds {
			if a, b := pooled.Key(job, k+"x"), plain.Key(job, k+"x"); a != b || keySlot(a) != keySlot(job) {
				t.Errorf("job %s key %s: %q in a pool, %q out of it, slot %d, the job's %d", job, k, a, b, keySlot(a), keySlot(job))
			}
		}
	}
	if k := pooled.PoolKey("exports"); k != "app:x:{pool:exports}:held" {
		t.Errorf("pool key %q", k)
	}
}

// On Redis Cluster replicas racing for one pooled run share one pool hold:
// one whose claim did not start the run gives back only its own share, so
// the run another replica's claim started keeps its pool slot, and the
// pool stays full for other jobs.
func TestClusterPoolHoldSharedByRacers(t *testing.T) {
	t.Parallel() // real time, little CPU (main_test.go)
	c := redistest.StartCluster(t, 3, nil).Client(t, nil)
	s, err := store.NewRedis(c, store.BackendConfig{Prefix: "pl"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mk := func(name string) *jobState {
		j := testJob(t, s, name, "@every 1s", func(j *Job) {
			j.Pool, j.PoolSize, j.StartingDeadline = "p", 1, time.Minute
		})
		if err := c.HSet(ctx, j.metaKey, "epoch", "e0", "floor", "0", "guarded", "0").Err(); err != nil {
			t.Fatal(err)
		}
		j.memo.observe("e0", 0)
		return j
	}
	a, b := mk("a"), mk("b")
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	at := now.Truncate(time.Second).Add(-time.Second)
	loser, winner := claimOf(a, at, store.RunScheduled, "o1"), claimOf(a, at, store.RunScheduled, "o2")
	// Both take the hold; the loser's claim is answered without a start
	// (say, later: claimed ahead while the job's slots were busy)...
	if err := s.TakePools(ctx, []*store.StoreClaim{&loser.StoreClaim, &winner.StoreClaim}, func(r *store.StoreClaim) string { return r.ID }); err != nil {
		t.Fatal(err)
	}
	if loser.Pgrant != '1' || winner.Pgrant != '1' {
		t.Fatalf("grants %q %q", loser.Pgrant, winner.Pgrant)
	}
	s.SettlePools(ctx, storeClaims(loser), []store.ClaimRes{{Status: store.AnswerLater}})
	// ... and the winner's starts the run, with the hold it took before.
	res, err := s.ClaimAcked(ctx, "r2", 2*time.Second, 3*time.Second, storeClaims(winner))
	if err != nil {
		t.Fatal(err)
	}
	s.SettlePools(ctx, storeClaims(winner), res)
	if res[0].Status != store.AnswerStarted || res[0].Pool != "p" {
		t.Fatalf("winner's claim: %+v", res)
	}
	if n := c.ZCard(ctx, s.PoolKey("p")).Val(); n != 1 {
		t.Errorf("%d pool slots held, want the winner's 1", n)
	}
	other, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(claimOf(b, at, store.RunScheduled, "o3")))
	if err != nil || other[0].Status != store.AnswerSkippedOverlap {
		t.Errorf("another job of the full pool: %+v, %v; want skipped_overlap", other, err)
	}
	winner.Pool, winner.PoolMember = res[0].Pool, res[0].PoolMember
	if _, err := s.Complete(ctx, []store.CompleteReq{{R: &winner.StoreClaim, Replica: "r2", Outcome: Succeeded, Attempts: 1}}); err != nil {
		t.Fatal(err)
	}
	if n := c.ZCard(ctx, s.PoolKey("p")).Val(); n != 0 {
		t.Errorf("%d pool slots held after the run ended", n)
	}
}
