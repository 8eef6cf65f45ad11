package scheduler

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// manualClaim is the claim of manual request id of j as a replica makes it
// from the pending requests (request time at).
func manualClaim(j *jobState, id, owner string, at time.Time) claimReq {
	r := newClaimReq(j, store.StoreClaim{ID: id, Suffix: id[len(j.Name)+1:], Kind: store.RunManual, Sched: at, Fire: at, Owner: owner,
		Overlap: OverlapWait, MaxWait: time.Hour})
	r.Known, r.FenceFloor = j.memo.snapshot()
	return r
}

// A manual run admitted by a poll whose answer never came, whose lease ran
// out and which the cluster closed lease_lost, never started: the next
// poll answers expired, and the hand-back takes the close back (history,
// failure streak, lease_lost event) and returns the request to the pending
// ones, to run once — not recorded missed.
func TestWaitExpiredManualAdmissionHandedBack(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	s, err := store.NewRedis(c, store.BackendConfig{Prefix: "wx"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const skew, ttl = 2 * time.Second, 3 * time.Second
	j := testJob(t, s, "mj", "@every 1h", func(j *Job) {
		j.Lease, j.StartingDeadline, j.Concurrency = 300*time.Millisecond, time.Minute, 1
	})
	seed(t, c, j)
	if err := c.Set(ctx, s.Key(j.Name, "notify:on"), `{"on":{"lease_lost":["ops"],"missed":["ops"]},"max":100}`, 0).Err(); err != nil {
		t.Fatal(err)
	}
	// A scheduled run holds the only slot.
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	busy := claimOf(j, now.Truncate(time.Millisecond), store.RunScheduled, "o-busy")
	if res, err := s.Claim(ctx, "r1", skew, ttl, storeClaims(busy)); err != nil || res[0].Status != store.AnswerStarted {
		t.Fatalf("scheduled claim: %+v, %v", res, err)
	}
	const id = "mj@manual-1"
	if err := s.Trigger(ctx, j.Name, id); err != nil {
		t.Fatal(err)
	}
	ms, err := c.ZScore(ctx, s.Key(j.Name, "manual"), id).Result()
	if err != nil {
		t.Fatal(err)
	}
	m := manualClaim(j, id, "o-m", time.UnixMilli(int64(ms)))
	if res, err := s.Claim(ctx, "r1", skew, ttl, storeClaims(m)); err != nil || res[0].Status != store.AnswerWaiting {
		t.Fatalf("manual claim with the slot busy: %+v, %v, want waiting", res, err)
	}
	if _, err := s.Complete(ctx, []store.CompleteReq{{R: &busy.StoreClaim, Replica: "r1", Outcome: Succeeded, Attempts: 1}}); err != nil {
		t.Fatal(err)
	}
	// The admission whose answer is lost.
	if st, _, err := admitOne(s, ctx, &m, ttl, 0); err != nil || st != store.AnswerStarted {
		t.Fatalf("admission: %q, %v", st, err)
	}
	// Its lease runs out; the next poll reaps it, closed lease_lost.
	deadline := time.Now().Add(5 * time.Second)
	var st store.Answer
	for time.Now().Before(deadline) {
		if st, _, err = admitOne(s, ctx, &m, ttl, 0); err != nil {
			t.Fatal(err)
		}
		if st != store.AnswerStarted {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st != store.AnswerExpired {
		t.Fatalf("poll after the lease ran out: %q, want %q", st, store.AnswerExpired)
	}
	ok, err := s.HandBack(ctx, &m.StoreClaim, ttl)
	if err != nil || !ok {
		t.Fatalf("hand back: %v, %v", ok, err)
	}
	if n, _ := c.Exists(ctx, s.Key(j.Name, "run:manual-1")).Result(); n != 0 {
		t.Errorf("the run's record is still there")
	}
	if _, err := c.ZScore(ctx, s.Key(j.Name, "manual"), id).Result(); err != nil {
		t.Errorf("the request is not pending again: %v", err)
	}
	hist, err := c.LRange(ctx, s.Key(j.Name, "history"), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hist {
		if strings.Contains(h, id) {
			t.Errorf("history keeps the closed run: %s", h)
		}
	}
	if f, _ := c.HGet(ctx, j.metaKey, "fails").Int(); f != 0 {
		t.Errorf("failure streak %d, want 0", f)
	}
	q, err := c.ZRange(ctx, s.Key(j.Name, "notify:q"), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range q {
		if strings.Contains(d, id) {
			t.Errorf("event still queued for the run handed back: %s", d)
		}
	}
	// Claimed again, it runs.
	m2 := manualClaim(j, id, "o-m2", time.UnixMilli(int64(ms)))
	if res, err := s.Claim(ctx, "r2", skew, ttl, storeClaims(m2)); err != nil || res[0].Status != store.AnswerStarted {
		t.Fatalf("the request claimed again: %+v, %v, want started", res, err)
	}
}

// One run, one event, matching its final record: a scheduled run admitted
// by a poll whose answer was lost, closed lease_lost by the cluster, then
// found never started (missed) has its held-back lease_lost event replaced
// by a missed one.
func TestNeverStartedRunNotifiesMissedOnly(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	s, err := store.NewRedis(c, store.BackendConfig{Prefix: "wn"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const skew, ttl = 2 * time.Second, 3 * time.Second
	j := testJob(t, s, "nj", "@every 1s", func(j *Job) {
		j.Lease, j.StartingDeadline, j.Concurrency = 300*time.Millisecond, time.Minute, 1
		j.Overlap, j.MaxWait = OverlapWait, time.Minute
	})
	seed(t, c, j)
	if err := c.Set(ctx, s.Key(j.Name, "notify:on"), `{"on":{"lease_lost":["ops"],"missed":["ops"]},"max":100}`, 0).Err(); err != nil {
		t.Fatal(err)
	}
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	at := now.Truncate(time.Second)
	busy := claimOf(j, at.Add(-time.Second), store.RunScheduled, "o-busy")
	queued := claimOf(j, at, store.RunScheduled, "o-q")
	res, err := s.Claim(ctx, "r1", skew, ttl, storeClaims(busy, queued))
	if err != nil || res[0].Status != store.AnswerStarted || res[1].Status != store.AnswerWaiting {
		t.Fatalf("claims: %+v, %v, want started and waiting", res, err)
	}
	// Subscribed: notify.go writes the meta's flag with the subscription,
	// once the job's state exists (the claim above created it).
	if err := c.HSet(ctx, s.MetaKey(j.Name), "notify", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, []store.CompleteReq{{R: &busy.StoreClaim, Replica: "r1", Outcome: Succeeded, Attempts: 1}}); err != nil {
		t.Fatal(err)
	}
	if st, _, err := admitOne(s, ctx, &queued, ttl, 0); err != nil || st != store.AnswerStarted {
		t.Fatalf("admission: %q, %v", st, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	var st store.Answer
	for time.Now().Before(deadline) {
		if st, _, err = admitOne(s, ctx, &queued, ttl, 0); err != nil {
			t.Fatal(err)
		}
		if st != store.AnswerStarted {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st != store.AnswerMissed {
		t.Fatalf("poll after the lease ran out: %q, want %q", st, store.AnswerMissed)
	}
	q, err := c.ZRange(ctx, s.Key(j.Name, "notify:q"), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := "ops " + queued.ID + ":missed"
	if len(q) != 1 || q[0] != want {
		t.Fatalf("queued events %q, want only %q", q, want)
	}
}

// admitOne polls one queued run.
func admitOne(s *store.Redis, ctx context.Context, r *claimReq, waiterTTL time.Duration, fenceFloor int64) (store.Answer, int64, error) {
	res, err := s.Admit(ctx, []*store.StoreClaim{&r.StoreClaim}, waiterTTL, fenceFloor)
	if err != nil {
		return "", 0, err
	}
	return res[0].Status, res[0].N, nil
}

// admitCounter counts the admit.lua calls a client sends, pipelined or not.
type admitCounter struct{ n atomic.Int64 }

func (a *admitCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (a *admitCounter) count(cmd redis.Cmder) {
	if args := cmd.Args(); len(args) > 1 && cmd.Name() == "evalsha" && args[1] == store.AdmitScript.Hash() {
		a.n.Add(1)
	}
}
func (a *admitCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		a.count(cmd)
		return next(ctx, cmd)
	}
}
func (a *admitCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			a.count(c)
		}
		return next(ctx, cmds)
	}
}

// At most MaxPendingManual manual runs of a job wait at once, pending or
// queued for a slot; and queued runs wait cheaply: each replica polls a
// job's queue once per poll interval, however many of its runs wait.
func TestManualRunsWaitBoundedAndCheaply(t *testing.T) {
	t.Parallel() // real time, little CPU (main_test.go)
	srv := redistest.Start(t)
	admits := &admitCounter{}
	release := make(chan struct{})
	var ran atomic.Int64
	job := Job{Name: "q", Schedule: "@every 1h", Concurrency: 1, Handler: jobs.Func(func(ctx context.Context) error {
		ran.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})}
	for i := range 2 {
		c := srv.Client(t, nil)
		c.AddHook(admits)
		s, err := New(redisStore(t, c), []Job{job}, WithReplicaID("r"+strconv.Itoa(i)), WithSyncInterval(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	c := srv.Client(t, nil)
	ctl, err := controlOf(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for limit := time.Now().Add(30 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(limit) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	trigger := func(n int) (accepted int) {
		t.Helper()
		for range n {
			_, err := ctl.Trigger(ctx, job.Name)
			switch {
			case err == nil:
				accepted++
			case !errors.Is(err, ErrQueueFull):
				t.Fatal(err)
			}
		}
		return accepted
	}
	defer close(release)
	if trigger(1) != 1 {
		t.Fatal("first trigger refused")
	}
	waitFor("the first manual run to start", func() bool { return ran.Load() == 1 })
	if got := trigger(60); got != 60 {
		t.Fatalf("%d of 60 triggers accepted, want all", got)
	}
	mqueue := ctl.store.(*store.Redis).Key(job.Name, "mqueue")
	waitFor("60 manual runs queued for the slot", func() bool { return c.ZCard(ctx, mqueue).Val() == 60 })
	if got := trigger(100); got != MaxPendingManual-60 {
		t.Errorf("%d more triggers accepted with 60 queued, want %d: at most %d wait", got, MaxPendingManual-60, MaxPendingManual)
	}
	before := admits.n.Load()
	start := time.Now()
	time.Sleep(time.Second)
	polls := float64(admits.n.Load()-before) / time.Since(start).Seconds()
	// Two replicas, one poll each per 100 ms: about 20 a second (one per
	// run would be a thousand).
	if polls > 40 {
		t.Errorf("%.0f admission polls a second with %d runs queued on 2 replicas, want at most 40", polls, MaxPendingManual)
	}
	t.Logf("%.0f admission polls a second with %d runs waiting on 2 replicas", polls, MaxPendingManual)
}

// The same for a manual run a claim started whose answer was lost: asked
// again after the cluster closed it lease_lost, the claim answers expired,
// and the hand-back returns the request to the pending ones.
func TestClaimExpiredManualRunHandedBack(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	s, err := store.NewRedis(c, store.BackendConfig{Prefix: "cx"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const skew, ttl = 2 * time.Second, 3 * time.Second
	j := testJob(t, s, "mj", "@every 1h", func(j *Job) { j.Lease = 300 * time.Millisecond })
	seed(t, c, j)
	const id = "mj@manual-1"
	if err := s.Trigger(ctx, j.Name, id); err != nil {
		t.Fatal(err)
	}
	ms, err := c.ZScore(ctx, s.Key(j.Name, "manual"), id).Result()
	if err != nil {
		t.Fatal(err)
	}
	m := manualClaim(j, id, "o-m", time.UnixMilli(int64(ms)))
	if res, err := s.Claim(ctx, "r1", skew, ttl, storeClaims(m)); err != nil || res[0].Status != store.AnswerStarted {
		t.Fatalf("manual claim: %+v, %v", res, err)
	}
	// Its answer lost, its lease runs out; another replica's poll reaps it.
	var res []store.ClaimRes
	for limit := time.Now().Add(5 * time.Second); time.Now().Before(limit); time.Sleep(50 * time.Millisecond) {
		other := manualClaim(j, "mj@manual-none", "o-x", time.Now())
		if _, _, err := admitOne(s, ctx, &other, ttl, 0); err != nil {
			t.Fatal(err)
		}
		if res, err = s.Claim(ctx, "r1", skew, ttl, storeClaims(m)); err != nil {
			t.Fatal(err)
		}
		if res[0].Status != store.AnswerStarted {
			break
		}
	}
	if res[0].Status != store.AnswerExpired {
		t.Fatalf("claim asked again after the lease ran out: %q, want %q", res[0].Status, store.AnswerExpired)
	}
	if ok, err := s.HandBack(ctx, &m.StoreClaim, ttl); err != nil || !ok {
		t.Fatalf("hand back: %v, %v", ok, err)
	}
	if _, err := c.ZScore(ctx, s.Key(j.Name, "manual"), id).Result(); err != nil {
		t.Errorf("the request is not pending again: %v", err)
	}
}
