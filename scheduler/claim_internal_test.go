package scheduler

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// testJob returns a job state on s's store; mod changes the spec before
// its defaults are applied.
func testJob(t testing.TB, s *store.Redis, name, sched string, mod func(*Job)) *jobState {
	t.Helper()
	spec := Job{Name: name, Schedule: sched, Handler: jobs.Func(func(context.Context) error { return nil })}
	if mod != nil {
		mod(&spec)
	}
	j, err := newJobState(spec.withDefaults(), s.MetaKey(name), &memo{}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// seed gives j's job an established state in the store (an epoch its
// replica knows), as a cluster that has run for a while has: no data-loss
// floor applies to it.
func seed(t testing.TB, c *redis.Client, j *jobState) {
	t.Helper()
	if err := c.HSet(context.Background(), j.metaKey, "epoch", "e0", "floor", "0", "guarded", "0").Err(); err != nil {
		t.Fatal(err)
	}
	j.memo.observe("e0", 0)
}

// claimOf is a claim of j's run at sched, as the replica would send it.
func claimOf(j *jobState, sched time.Time, kind store.RunKind, owner string) claimReq {
	id := runID(j.Name, sched)
	r := newClaimReq(j, store.StoreClaim{ID: id, Suffix: id[len(j.Name)+1:], Kind: kind, Sched: sched, Fire: j.fire(sched),
		Owner: owner, Overlap: j.Overlap, MaxWait: j.MaxWait})
	r.Known, r.FenceFloor = j.memo.snapshot()
	return r
}

// dirty reads Redis' count of writes since the last save.
func dirty(t testing.TB, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "persistence").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "rdb_changes_since_last_save:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("no rdb_changes_since_last_save in INFO persistence")
	return 0
}

// A retried claim answered "started" from the replica's own earlier record
// writes, so that a WAIT after it covers the first call's writes.
func TestRetriedClaimAnswerIsAWrite(t *testing.T) {
	s, c := benchStore(t)
	ctx := context.Background()
	j := testJob(t, s, "retried", "@every 1h", nil)
	seed(t, c, j)
	at := time.Now().Truncate(time.Second)
	r := claimOf(j, at, 's', "owner-1")
	res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(r))
	if err != nil || res[0].Status != "started" {
		t.Fatalf("first claim: %+v, %v", res, err)
	}
	before := dirty(t, c)
	res, err = s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(r))
	if err != nil || res[0].Status != "started" {
		t.Fatalf("retried claim: %+v, %v", res, err)
	}
	if after := dirty(t, c); after <= before {
		t.Errorf("the retried claim answered started without a write (%d writes before, %d after)", before, after)
	}
}

// A replica whose clock runs ahead asks to record a run missed that Redis'
// clock says is still in the future: Redis' clock decides, and nothing is
// recorded.
func TestMissedIsDecidedByRedisClock(t *testing.T) {
	s, c := benchStore(t)
	ctx := context.Background()
	j := testJob(t, s, "ahead", "@every 1m", nil)
	seed(t, c, j)
	future := time.Now().Add(time.Hour).Truncate(time.Minute)
	res, err := s.Claim(ctx, "fast", 2*time.Second, 3*time.Second, storeClaims(claimOf(j, future, 'x', "o1")))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status == store.Answer(Missed) {
		t.Fatalf("a run an hour ahead on Redis' clock was recorded missed")
	}
	if res[0].Status != "early" {
		t.Errorf("answer %+v, want early", res[0])
	}
	if n, _ := c.Exists(ctx, s.Key(j.Name, "run:"+runID(j.Name, future)[len(j.Name)+1:])).Result(); n != 0 {
		t.Error("a record was written for a future run")
	}
	// Past its deadline on Redis' clock, it is recorded missed.
	past := time.Now().Truncate(time.Minute).Add(-time.Minute) // an instant, past its deadline, within its retention
	res, err = s.Claim(ctx, "fast", 2*time.Second, 3*time.Second, storeClaims(claimOf(j, past, 'x', "o2")))
	if err != nil || res[0].Status != store.Answer(Missed) {
		t.Errorf("past run: %+v, %v; want missed", res, err)
	}
}

// A catch-up claim relies on the last decided instant its replica read at a
// heartbeat; once a record retention has passed since (a replica frozen in
// between), what was decided after that reading may have expired, and the
// claim is refused.
func TestCatchupRefusedOnceItsReadingIsStale(t *testing.T) {
	s, c := benchStore(t)
	ctx := context.Background()
	j := testJob(t, s, "cu", "@every 1m", func(j *Job) { j.CatchupWindow = time.Hour })
	seed(t, c, j)
	now := time.Now()
	gap := now.Truncate(time.Minute).Add(-2 * time.Minute) // missed, inside the window
	stale := claimOf(j, gap, 'c', "o1")
	stale.Base, stale.ReadAt = gap.Add(-time.Minute), now.Add(-time.Hour)
	res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(stale))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status != "refused" {
		t.Fatalf("catch-up read an hour ago: %+v, want refused", res[0])
	}
	fresh := claimOf(j, gap, 'c', "o2")
	fresh.Base, fresh.ReadAt = gap.Add(-time.Minute), now
	res, err = s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(fresh))
	if err != nil || res[0].Status != "started" {
		t.Fatalf("catch-up read just now: %+v, %v; want started", res, err)
	}
}

// A loss is noticed once: after Redis lost a job's state, the replicas'
// higher tokens (seen before the loss) raise the store's token but draw no
// new epoch and no later floor.
func TestLossNoticedOnce(t *testing.T) {
	s, c := benchStore(t)
	ctx := context.Background()
	j := testJob(t, s, "once", "@every 1s", nil)
	seed(t, c, j)
	at := time.Now().Truncate(time.Second)
	res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(claimOf(j, at, 's', "o1")))
	if err != nil || res[0].Status != "started" {
		t.Fatalf("claim: %+v, %v", res, err)
	}
	j.memo.observe(res[0].Epoch, res[0].Fence)
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	known, fence := j.memo.snapshot()
	sr, err := s.Sync(ctx, "r1", 2*time.Second, time.Hour, []store.SyncReq{{Job: j.spec, Known: known, Fence: fence}})
	if err != nil {
		t.Fatal(err)
	}
	if sr[0].Epoch == known || sr[0].Fence < fence {
		t.Fatalf("after the loss: epoch %s (known %s), token %d (seen %d)", sr[0].Epoch, known, sr[0].Fence, fence)
	}
	floor := sr[0].Floor
	// Another replica, which saw a higher token before the loss.
	other := claimOf(j, at.Add(time.Hour), 's', "o2") // answered early, with the epoch
	other.Known, other.FenceFloor = "", fence+1000
	res, err = s.Claim(ctx, "r2", 2*time.Second, 3*time.Second, storeClaims(other))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Epoch != sr[0].Epoch {
		t.Errorf("a second replica's token drew a new epoch %s after the loss was noticed (%s)", res[0].Epoch, sr[0].Epoch)
	}
	f, _ := c.HGet(ctx, j.metaKey, "floor").Int64()
	if f != floor.UnixMilli() {
		t.Errorf("floor moved from %d to %d", floor.UnixMilli(), f)
	}
}
