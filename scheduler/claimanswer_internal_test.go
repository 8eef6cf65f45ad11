package scheduler

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// expireSlot makes run id's lease run out now, as if its holder had stopped
// renewing it, and lets a heartbeat (sync.lua) reap it: the cluster closes
// it lease_lost.
func expireSlot(t *testing.T, s *store.Redis, c *redis.Client, j *jobState, id string) {
	t.Helper()
	ctx := context.Background()
	if err := c.ZAdd(ctx, s.Key(j.Name, "slots"), redis.Z{Score: 1, Member: id}).Err(); err != nil {
		t.Fatal(err)
	}
	known, fence := j.memo.snapshot()
	if _, err := s.Sync(ctx, "other", 2*time.Second, time.Hour, []store.SyncReq{{Job: j.spec, Known: known, Fence: fence}}); err != nil {
		t.Fatal(err)
	}
}

// recordOf reads run id's record and its newest history entry.
func recordOf(t *testing.T, s *store.Redis, c *redis.Client, j *jobState, id string) (map[string]string, map[string]string) {
	t.Helper()
	ctx := context.Background()
	rec, err := c.HGetAll(ctx, s.Key(j.Name, "run:"+id[len(j.Name)+1:])).Result()
	if err != nil {
		t.Fatal(err)
	}
	items, err := c.LRange(ctx, s.Key(j.Name, "history"), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		var e map[string]string
		if json.Unmarshal([]byte(it), &e) == nil && e["id"] == id {
			return rec, e
		}
	}
	return rec, nil
}

// neverStarted checks that id's record and history entry say it was
// missed, never started.
func neverStarted(t *testing.T, s *store.Redis, c *redis.Client, j *jobState, id string) {
	t.Helper()
	rec, h := recordOf(t, s, c, j, id)
	if rec["outcome"] != string(Missed) || !strings.HasPrefix(rec["error"], "never started") {
		t.Errorf("record: outcome %q error %q; want missed, \"never started...\"", rec["outcome"], rec["error"])
	}
	if h == nil || h["outcome"] != string(Missed) || !strings.HasPrefix(h["error"], "never started") {
		t.Errorf("history entry %v; want outcome missed, error \"never started...\"", h)
	}
}

// A claim whose answer came after the client's deadline, asked again with
// the same owner token after its lease ran out and the cluster closed the
// run lease_lost: the run never ran, and its record says so (found by
// the seeded search: seeds 1, 14, 18).
func TestLateClaimAnswerNeverStarted(t *testing.T) {
	s, c := benchStore(t)
	ctx := context.Background()
	j := testJob(t, s, "late", "@every 1h", nil)
	seed(t, c, j)
	at := time.Now().Truncate(time.Second)
	r := claimOf(j, at, 's', "owner-1")
	res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(r))
	if err != nil || res[0].Status != "started" {
		t.Fatalf("first claim: %+v, %v", res, err) // its answer never reaches the replica
	}
	expireSlot(t, s, c, j, r.ID)
	if rec, _ := recordOf(t, s, c, j, r.ID); rec["outcome"] != string(LeaseLost) {
		t.Fatalf("after the lease ran out: outcome %q, want lease_lost", rec["outcome"])
	}

	// Another replica's claim is a lost race: the record is not touched.
	res, err = s.Claim(ctx, "r2", 2*time.Second, 3*time.Second, storeClaims(claimOf(j, at, 's', "owner-2")))
	if err != nil || res[0].Status != "decided" || res[0].Outcome != string(LeaseLost) {
		t.Fatalf("other replica's claim: %+v, %v; want decided lease_lost", res, err)
	}

	res, err = s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(r))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status != store.Answer(Missed) {
		t.Errorf("retried claim: %+v; want missed", res[0])
	}
	neverStarted(t, s, c, j, r.ID)
	// Asked once more (another lost answer): still missed, one history entry.
	if res, err = s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(r)); err != nil || res[0].Status != store.Answer(Missed) {
		t.Errorf("claim asked a third time: %+v, %v; want missed", res, err)
	}
	if n, _ := c.LLen(ctx, s.Key(j.Name, "history")).Result(); n != 1 {
		t.Errorf("%d history entries, want 1", n)
	}
}

// A run that started and whose holder then died (it never asks again) stays
// lease_lost; so does one its holder closed itself.
func TestLeaseLostStaysForAHolderThatClosedIt(t *testing.T) {
	s, c := benchStore(t)
	ctx := context.Background()
	j := testJob(t, s, "ran", "@every 1h", nil)
	seed(t, c, j)
	at := time.Now().Truncate(time.Second)
	r := claimOf(j, at, 's', "owner-1")
	if res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(r)); err != nil || res[0].Status != "started" {
		t.Fatalf("claim: %+v, %v", res, err)
	}
	expireSlot(t, s, c, j, r.ID)
	// The holder closes it (it ran): the cluster's lease_lost stands.
	rk := s.Key(j.Name, "run:"+r.ID[len(j.Name)+1:])
	if err := c.HSet(ctx, rk, "closed_by", "holder").Err(); err != nil {
		t.Fatal(err)
	}
	res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(r))
	if err != nil || res[0].Status != "decided" {
		t.Fatalf("claim after the holder closed it: %+v, %v; want decided", res, err)
	}
	if rec, _ := recordOf(t, s, c, j, r.ID); rec["outcome"] != string(LeaseLost) {
		t.Errorf("outcome %q, want lease_lost", rec["outcome"])
	}
}

// The same for a queued run (overlap: wait): an admission whose answer was
// lost, polled again after the lease it granted ran out (the search's seeds
// 39, 151).
func TestLateAdmitAnswerNeverStarted(t *testing.T) {
	s, c := benchStore(t)
	ctx := context.Background()
	j := testJob(t, s, "queued", "@every 1s", func(j *Job) { j.Overlap = OverlapWait; j.MaxWait = time.Hour })
	seed(t, c, j)
	at := time.Now().Truncate(time.Second)
	first := claimOf(j, at, 's', "owner-1")
	if res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(first)); err != nil || res[0].Status != "started" {
		t.Fatalf("first run: %+v, %v", res, err)
	}
	second := claimOf(j, at.Add(time.Second), 's', "owner-2")
	second.Fire = time.Now() // due now, whatever the clock says
	res, err := s.Claim(ctx, "r2", 2*time.Second, 3*time.Second, storeClaims(second))
	if err != nil || res[0].Status != "waiting" {
		t.Fatalf("second run: %+v, %v; want waiting", res, err)
	}
	// The first run's slot frees; an admission starts the second, but its
	// answer is lost.
	if err := c.ZRem(ctx, s.Key(j.Name, "slots"), first.ID).Err(); err != nil {
		t.Fatal(err)
	}
	if st, _, err := admitOne(s, ctx, &second, 3*time.Second, 0); err != nil || st != "started" {
		t.Fatalf("admission: %q, %v; want started", st, err)
	}
	expireSlot(t, s, c, j, second.ID)
	st, _, err := admitOne(s, ctx, &second, 3*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st != store.AnswerMissed {
		t.Errorf("polled again: %q; want missed", st)
	}
	neverStarted(t, s, c, j, second.ID)
}

// A run decided before its instant (recorded missed after a loss, whose
// floor lies ahead) keeps its record until its instant + retention: "too
// old to decide" counts from the instant, and until then a late claim must
// find the run decided (the search's seed 167).
func TestRecordDecidedAheadKeptFromItsInstant(t *testing.T) {
	s, c := benchStore(t)
	ctx := context.Background()
	j := testJob(t, s, "ahead", "@every 1m", nil)
	seed(t, c, j)
	now := time.Now()
	if err := c.HSet(ctx, j.metaKey, "floor", now.Add(time.Hour).UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	at := now.Truncate(time.Minute).Add(30 * time.Minute)
	r := claimOf(j, at, 's', "owner-1")
	res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(r))
	if err != nil || res[0].Status != store.Answer(Missed) {
		t.Fatalf("claim under the floor: %+v, %v; want missed", res, err)
	}
	ttl, err := c.PTTL(ctx, s.Key(j.Name, "run:"+r.ID[len(j.Name)+1:])).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := time.Until(at) + j.retention(at) - time.Minute // generous: the test may be slow
	if ttl < want {
		t.Errorf("record expires in %s, before its instant + retention (%s from now)", ttl, time.Until(at)+j.retention(at))
	}

	// The cluster's closings keep it as long: a run claimed ahead whose
	// lease the cluster closes before its instant.
	if err := c.HSet(ctx, j.metaKey, "floor", "0").Err(); err != nil {
		t.Fatal(err)
	}
	at2 := at.Add(time.Minute)
	r2 := claimOf(j, at2, 's', "owner-2")
	r2.Fire = time.Now().Add(time.Second) // claimed ahead of its instant, by the store's clock
	s.ClaimAhead = 2 * time.Second
	res, err = s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(r2))
	if err != nil || res[0].Status != "started" {
		t.Fatalf("claim ahead: %+v, %v; want started", res, err)
	}
	rk2 := s.Key(j.Name, "run:"+r2.ID[len(j.Name)+1:])
	expireSlot(t, s, c, j, r2.ID)
	if rec, _ := recordOf(t, s, c, j, r2.ID); rec["outcome"] != string(LeaseLost) {
		t.Fatalf("outcome %q, want lease_lost", rec["outcome"])
	}
	want = time.Until(at2) + j.retention(at2) - time.Minute
	if ttl, _ := c.PTTL(ctx, rk2).Result(); ttl < want {
		t.Errorf("closed lease_lost before its instant: record expires in %s, before its instant + retention (%s from now)", ttl, time.Until(at2)+j.retention(at2))
	}
}

// A replica that lost the race for a run learns the winner's fencing token
// from the answer, as a heartbeat would teach it: a failover to a copy that
// missed the winner's claim is noticed at the loser's next claim, which
// records the run missed instead of starting it a second time (the
// failover window, narrowed; found by seed 3).
func TestLostRaceTeachesTheToken(t *testing.T) {
	s, c := benchStore(t)
	ctx := context.Background()
	winner := testJob(t, s, "raced", "@every 1s", nil)
	loser := testJob(t, s, "raced", "@every 1s", nil)
	seed(t, c, winner)
	seed(t, c, loser)
	copyFence, err := c.HGet(ctx, winner.metaKey, "fence").Int64()
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	at := time.Now().Truncate(time.Second)
	won, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(claimOf(winner, at, 's', "owner-1")))
	if err != nil || won[0].Status != "started" {
		t.Fatalf("winner: %+v, %v", won, err)
	}
	lost, err := s.Claim(ctx, "r2", 2*time.Second, 3*time.Second, storeClaims(claimOf(loser, at, 's', "owner-2")))
	if err != nil || lost[0].Status != "decided" {
		t.Fatalf("loser: %+v, %v", lost, err)
	}
	if lost[0].Fence != won[0].Fence || lost[0].Replica != "r1" || lost[0].Outcome != string(Running) {
		t.Fatalf("lost race answered %+v; want the winner's token %d, running by r1", lost[0], won[0].Fence)
	}
	loser.memo.observe(lost[0].Epoch, lost[0].Fence) // as handle does

	// A failover to a copy taken before the winner's claim: its record and
	// token are gone; the epoch survives.
	rk := s.Key(winner.Name, "run:"+runID(winner.Name, at)[len(winner.Name)+1:])
	if err := c.Del(ctx, rk, s.Key(winner.Name, "slots")).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, winner.metaKey, "fence", copyFence).Err(); err != nil {
		t.Fatal(err)
	}
	again, err := s.Claim(ctx, "r2", 2*time.Second, 3*time.Second, storeClaims(claimOf(loser, at, 's', "owner-3")))
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Status == "started" {
		t.Fatalf("the loser started the run again on the stale copy: %+v", again[0])
	}
	if again[0].Status != store.Answer(Missed) {
		t.Errorf("the loser's claim on the stale copy: %+v; want missed (the loss noticed)", again[0])
	}
}

// A queue place the store still holds for a run scheduled before its
// data-loss floor, whose waiter stopped polling, is recorded missed for the
// loss: after a failover to a stale copy, the run may have been admitted
// and run on the lost primary, and its replica is not gone (the
// failover window: the copy's stale waiting entries).
func TestStaleQueuePlaceAfterLoss(t *testing.T) {
	s, c := benchStore(t)
	ctx := context.Background()
	j := testJob(t, s, "stale", "@every 1s", func(j *Job) { j.Overlap = OverlapWait; j.MaxWait = time.Hour })
	seed(t, c, j)
	at := time.Now().Truncate(time.Second)
	first := claimOf(j, at, 's', "owner-1")
	if res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(first)); err != nil || res[0].Status != "started" {
		t.Fatalf("first run: %+v, %v", res, err)
	}
	queued := func(sched time.Time, owner string) claimReq {
		r := claimOf(j, sched, 's', owner)
		r.Fire = time.Now()
		res, err := s.Claim(ctx, "r2", 2*time.Second, 3*time.Second, storeClaims(r))
		if err != nil || res[0].Status != "waiting" {
			t.Fatalf("%s: %+v, %v; want waiting", r.ID, res, err)
		}
		return r
	}
	before, after := queued(at.Add(time.Second), "owner-2"), queued(at.Add(2*time.Second), "owner-3")
	// The loss noticed: the floor lies between the two.
	if err := c.HSet(ctx, j.metaKey, "floor", at.Add(1500*time.Millisecond).UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []claimReq{before, after} {
		if err := c.ZAdd(ctx, s.Key(j.Name, "waiting"), redis.Z{Score: 1, Member: r.ID}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	known, fence := j.memo.snapshot()
	if _, err := s.Sync(ctx, "r3", 2*time.Second, time.Hour, []store.SyncReq{{Job: j.spec, Known: known, Fence: fence}}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := recordOf(t, s, c, j, before.ID); rec["outcome"] != string(Missed) || !strings.HasPrefix(rec["error"], "Redis lost data") {
		t.Errorf("before the floor: outcome %q error %q; want missed for the loss", rec["outcome"], rec["error"])
	}
	if rec, _ := recordOf(t, s, c, j, after.ID); rec["outcome"] != string(Missed) || rec["error"] != "its replica stopped waiting for a slot" {
		t.Errorf("after the floor: outcome %q error %q; want missed, its replica stopped waiting", rec["outcome"], rec["error"])
	}
}

// A holder that asks again only after the lease_lost event of its run is due
// (15 s after the cluster's close) finds the run recorded lease_lost, as
// that event says, when the job notifies lease_lost: one run, one final
// event, the one its record says (the part a
// hold alone cannot close). Before the event is due, or for a job that does not
// notify lease_lost, the run is recorded missed, never started, as before.
func TestLeaseLostFinalOnceItsEventIsDue(t *testing.T) {
	for _, c := range []struct {
		name          string
		notify, after bool // the job notifies lease_lost; the holder asks after the event is due
		ask           string
		want          Outcome
	}{
		{"notified, asked after the hold", true, true, "claim", LeaseLost},
		{"notified, asked within the hold", true, false, "claim", Missed},
		{"not notified, asked after the hold", false, true, "claim", Missed},
		{"notified, closed after the hold", true, true, "complete", LeaseLost},
		{"notified, closed within the hold", true, false, "complete", Missed},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, rc := benchStore(t)
			ctx := context.Background()
			j := testJob(t, s, "held", "@every 1h", nil)
			seed(t, rc, j)
			if c.notify {
				if err := rc.Set(ctx, s.Key(j.Name, "notify:on"), `{"on":{"lease_lost":["ops"],"missed":["ops"]},"max":100}`, 0).Err(); err != nil {
					t.Fatal(err)
				}
				if err := rc.HSet(ctx, s.MetaKey(j.Name), "notify", "1").Err(); err != nil {
					t.Fatal(err)
				}
			}
			at := time.Now().Truncate(time.Second)
			r := claimOf(j, at, 's', "owner-1")
			if res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(r)); err != nil || res[0].Status != "started" {
				t.Fatalf("first claim: %+v, %v", res, err) // its answer never reaches the replica
			}
			expireSlot(t, s, rc, j, r.ID)
			rk := s.Key(j.Name, "run:"+r.ID[len(j.Name)+1:])
			if c.after {
				// The close happened 16 s ago on the server's clock.
				fin, err := rc.HGet(ctx, rk, "finished").Int64()
				if err != nil {
					t.Fatal(err)
				}
				if err := rc.HSet(ctx, rk, "finished", fin-16000).Err(); err != nil {
					t.Fatal(err)
				}
			}
			switch c.ask {
			case "claim":
				res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(r))
				if err != nil {
					t.Fatal(err)
				}
				want := store.Answer(Missed)
				if c.want == LeaseLost {
					want = store.AnswerDecided
				}
				if res[0].Status != want {
					t.Errorf("claim asked again: %+v; want %s", res[0], want)
				}
			case "complete":
				// The answer came late: the holder says it never started.
				if _, err := s.Complete(ctx, []store.CompleteReq{{R: &r.StoreClaim, Replica: "r1", Outcome: Missed, Attempts: 0,
					ErrText: "never started: its claim was answered after its lease"}}); err != nil {
					t.Fatal(err)
				}
			}
			rec, h := recordOf(t, s, rc, j, r.ID)
			if rec["outcome"] != string(c.want) || h == nil || h["outcome"] != string(c.want) {
				t.Errorf("record outcome %q, history entry %v; want %s", rec["outcome"], h, c.want)
			}
			events, err := rc.ZRange(ctx, s.Key(j.Name, "notify:q"), 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			if c.notify && (len(events) != 1 || !strings.HasSuffix(events[0], ":"+string(c.want))) {
				t.Errorf("queued events %q; want one, %s", events, c.want)
			}
		})
	}
}
