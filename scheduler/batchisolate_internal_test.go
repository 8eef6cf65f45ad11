package scheduler

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/scheduler/internal/store"
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
		s, err := store.NewRedis(c, store.BackendConfig{Prefix: "sl"})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().Truncate(time.Second)
		m.SetTime(now)
		leaseBatchWithAFailingRun(t, s, c, now)
	})
}

func leaseBatchWithAFailingRun(t *testing.T, s *store.Redis, c *redis.Client, now time.Time) {
	ctx := context.Background()
	var reqs []claimReq
	for i, name := range []string{"normal", "bad", "other"} {
		j := testJob(t, s, name, "@every 1s", func(j *Job) { j.StartingDeadline, j.Lease = time.Minute, time.Minute })
		seed(t, c, j)
		reqs = append(reqs, claimOf(j, now.Add(-time.Second), store.RunScheduled, fmt.Sprintf("o%d", i)))
	}
	res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(reqs...))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Status != store.AnswerStarted {
			t.Fatalf("claim of %s: %+v; want started", reqs[i].ID, r)
		}
	}
	bad := s.Key("bad", "run:"+reqs[1].Suffix)
	if err := c.Del(ctx, bad).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, bad, "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}

	var rn []store.RenewReq
	for _, r := range reqs {
		rn = append(rn, store.RenewReq{Job: r.j.spec, ID: r.ID, Owner: r.Owner})
	}
	la, err := s.Renew(ctx, rn)
	if err != nil {
		t.Errorf("the renewal batch failed as a whole: %v", err)
	} else if want := []store.LeaseAnswer{store.LeaseOK, store.LeaseLostAnswer, store.LeaseOK}; !slices.Equal(la, want) {
		t.Errorf("renewals %v; want %v", la, want)
	}

	ua, err := s.Undo(ctx, 3*time.Second, []store.UndoReq{{Job: reqs[0].Job, ID: reqs[0].ID, Owner: reqs[0].Owner, Mode: store.UndoDrop},
		{Job: reqs[1].Job, ID: reqs[1].ID, Owner: reqs[1].Owner, Mode: store.UndoDrop}})
	if err != nil {
		t.Errorf("the undo batch failed as a whole: %v", err)
	} else if want := []store.UndoAnswer{store.UndoDropped, store.UndoKept}; !slices.Equal(ua, want) {
		t.Errorf("undos %v; want %v", ua, want)
	}

	ca, err := s.Complete(ctx, []store.CompleteReq{{R: &reqs[1].StoreClaim, Replica: "r1", Outcome: Succeeded, Attempts: 1},
		{R: &reqs[2].StoreClaim, Replica: "r1", Outcome: Succeeded, Attempts: 1}})
	if err != nil {
		t.Errorf("the close batch failed as a whole: %v", err)
	} else if want := []store.CloseAnswer{store.CloseLost, store.CloseOK}; !slices.Equal(ca, want) {
		t.Errorf("closes %v; want %v", ca, want)
	}
	if o := c.HGet(ctx, s.Key("other", "run:"+reqs[2].Suffix), "outcome").Val(); o != string(Succeeded) {
		t.Errorf("the good run's record says %q; want it closed succeeded", o)
	}
}
