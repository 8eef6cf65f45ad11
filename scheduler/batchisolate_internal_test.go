package scheduler

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// A renewal, close or undo batch with a run whose keys hold something else
// (its record is not a hash): that run is answered lost (renew, complete) or
// kept (undo), and the other runs of the batch are renewed, closed or taken
// back as if it were not there — as a claim batch does
// (TestClaimBatchIsolatesAFailingRun). Without it one broken run fails every
// batch it shares: its neighbours' leases are never renewed (lost) and their
// closes never land.
func TestLeaseBatchesIsolateAFailingRun(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		s, c, now := slotStore(t)
		leaseBatchWithAFailingRun(t, s, c, now)
	})
	t.Run("miniredis", func(t *testing.T) { // the embedded store's engine
		m := miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: m.Addr()})
		s, err := newStore(c, backendConfig{prefix: "sl"})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().Truncate(time.Second)
		m.SetTime(now)
		leaseBatchWithAFailingRun(t, s, c, now)
	})
}

func leaseBatchWithAFailingRun(t *testing.T, s *store, c *redis.Client, now time.Time) {
	ctx := context.Background()
	var reqs []claimReq
	for i, name := range []string{"normal", "bad", "other"} {
		j := testJob(t, s, name, "@every 1s", func(j *Job) { j.StartingDeadline, j.Lease = time.Minute, time.Minute })
		seed(t, c, j)
		reqs = append(reqs, claimOf(j, now.Add(-time.Second), kindScheduled, fmt.Sprintf("o%d", i)))
	}
	res, err := s.claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(reqs...))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.status != answerStarted {
			t.Fatalf("claim of %s: %+v; want started", reqs[i].id, r)
		}
	}
	bad := s.key("bad", "run:"+reqs[1].suffix)
	if err := c.Del(ctx, bad).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, bad, "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}

	var rn []renewReq
	for _, r := range reqs {
		rn = append(rn, renewReq{job: r.j.spec, id: r.id, owner: r.owner})
	}
	la, err := s.renew(ctx, rn)
	if err != nil {
		t.Errorf("the renewal batch failed as a whole: %v", err)
	} else if want := []leaseAnswer{leaseOK, leaseLost, leaseOK}; !slices.Equal(la, want) {
		t.Errorf("renewals %v; want %v", la, want)
	}

	ua, err := s.undo(ctx, 3*time.Second, []undoReq{{job: reqs[0].job, id: reqs[0].id, owner: reqs[0].owner, mode: undoDrop},
		{job: reqs[1].job, id: reqs[1].id, owner: reqs[1].owner, mode: undoDrop}})
	if err != nil {
		t.Errorf("the undo batch failed as a whole: %v", err)
	} else if want := []undoAnswer{undoDropped, undoKept}; !slices.Equal(ua, want) {
		t.Errorf("undos %v; want %v", ua, want)
	}

	ca, err := s.complete(ctx, []completeReq{{r: &reqs[1].storeClaim, replica: "r1", outcome: Succeeded, attempts: 1},
		{r: &reqs[2].storeClaim, replica: "r1", outcome: Succeeded, attempts: 1}})
	if err != nil {
		t.Errorf("the close batch failed as a whole: %v", err)
	} else if want := []closeAnswer{closeLost, closeOK}; !slices.Equal(ca, want) {
		t.Errorf("closes %v; want %v", ca, want)
	}
	if o := c.HGet(ctx, s.key("other", "run:"+reqs[2].suffix), "outcome").Val(); o != string(Succeeded) {
		t.Errorf("the good run's record says %q; want it closed succeeded", o)
	}
}
