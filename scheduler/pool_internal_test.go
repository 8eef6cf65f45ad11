package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
)

// A job's keys, every kind the scripts derive, are the same whether the
// table puts it in a pool or not (its state is identified by its name
// alone), and all hash to its own slot; the pool's key is apart.
func TestPooledJobKeysAreTheJobsOwn(t *testing.T) {
	kinds := luaKinds(t)
	pooled, plain := &store{prefix: "app:x"}, &store{prefix: "app:x"}
	pooled.placePools(poolJobs([]Job{{Name: "a.b-c", Pool: "exports", PoolSize: 2}, {Name: "z", Pool: "exports", PoolSize: 2}}))
	plain.placePools(poolJobs([]Job{{Name: "a.b-c"}, {Name: "z"}}))
	for _, job := range []string{"a.b-c", "z"} {
		if m := pooled.metaKey(job); m != "app:x:{"+job+"}:meta" || m != plain.metaKey(job) {
			t.Errorf("meta key of %s: %q in a pool, %q out of it", job, m, plain.metaKey(job))
		}
		for _, k := range kinds {
			if a, b := pooled.key(job, k+"x"), plain.key(job, k+"x"); a != b || keySlot(a) != keySlot(job) {
				t.Errorf("job %s key %s: %q in a pool, %q out of it, slot %d, the job's %d", job, k, a, b, keySlot(a), keySlot(job))
			}
		}
	}
	if k := pooled.poolKey("exports"); k != "app:x:{pool:exports}:held" {
		t.Errorf("pool key %q", k)
	}
}

// On Redis Cluster replicas racing for one pooled run share one pool hold:
// one whose claim did not start the run gives back only its own share, so
// the run another replica's claim started keeps its pool slot, and the
// pool stays full for other jobs.
func TestClusterPoolHoldSharedByRacers(t *testing.T) {
	c := redistest.StartCluster(t, 3, nil).Client(t, nil)
	s, err := newStore(c, backendConfig{prefix: "pl"})
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
	loser, winner := claimOf(a, at, kindScheduled, "o1"), claimOf(a, at, kindScheduled, "o2")
	// Both take the hold; the loser's claim is answered without a start
	// (say, later: claimed ahead while the job's slots were busy)...
	if err := s.takePools(ctx, []*storeClaim{&loser.storeClaim, &winner.storeClaim}, func(r *storeClaim) string { return r.id }); err != nil {
		t.Fatal(err)
	}
	if loser.pgrant != '1' || winner.pgrant != '1' {
		t.Fatalf("grants %q %q", loser.pgrant, winner.pgrant)
	}
	s.settlePools(ctx, storeClaims(loser), []claimRes{{status: answerLater}})
	// ... and the winner's starts the run, with the hold it took before.
	res, err := s.claimAcked(ctx, "r2", 2*time.Second, 3*time.Second, storeClaims(winner))
	if err != nil {
		t.Fatal(err)
	}
	s.settlePools(ctx, storeClaims(winner), res)
	if res[0].status != answerStarted || res[0].pool != "p" {
		t.Fatalf("winner's claim: %+v", res)
	}
	if n := c.ZCard(ctx, s.poolKey("p")).Val(); n != 1 {
		t.Errorf("%d pool slots held, want the winner's 1", n)
	}
	other, err := s.claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(claimOf(b, at, kindScheduled, "o3")))
	if err != nil || other[0].status != answerSkippedOverlap {
		t.Errorf("another job of the full pool: %+v, %v; want skipped_overlap", other, err)
	}
	winner.pool, winner.poolMember = res[0].pool, res[0].poolMember
	if _, err := s.complete(ctx, []completeReq{{r: &winner.storeClaim, replica: "r2", outcome: Succeeded, attempts: 1}}); err != nil {
		t.Fatal(err)
	}
	if n := c.ZCard(ctx, s.poolKey("p")).Val(); n != 0 {
		t.Errorf("%d pool slots held after the run ended", n)
	}
}
