package store

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
)

// backendKinds are the stores the conformance suite runs against: the
// embedded default's engine (miniredis), a real redis-server, Redis Cluster
// and Redlock over three masters. A new kind of backend is added here.
var backendKinds = []struct {
	name  string
	store func(t *testing.T, cfg BackendConfig) Backend
}{
	{"miniredis", func(t *testing.T, cfg BackendConfig) Backend {
		_, c := redistest.Mini(t)
		return redisBackend(t, c, cfg)
	}},
	{"redis-server", func(t *testing.T, cfg BackendConfig) Backend {
		return redisBackend(t, redistest.Start(t).Client(t, nil), cfg)
	}},
	{"cluster", func(t *testing.T, cfg BackendConfig) Backend {
		return redisBackend(t, redistest.StartCluster(t, 3, nil).Client(t, nil), cfg)
	}},
	{"redlock", func(t *testing.T, cfg BackendConfig) Backend {
		var cs []redis.UniversalClient
		for _, m := range redistest.StartMasters(t, 3, nil) {
			cs = append(cs, m.Client(t, nil))
		}
		rl, err := NewRedlock(cs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return rl
	}},
}

// redisBackend is NewRedis, failing t on error.
func redisBackend(t *testing.T, c redis.UniversalClient, cfg BackendConfig) Backend {
	t.Helper()
	s, err := NewRedis(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBackendConformance is what the engine relies on from a store
// (backend), asserted through the backend interface alone on every kind of
// store: one run's life from claim to record, and the pause, status and
// cancel beside it.
func TestBackendConformance(t *testing.T) {
	for _, k := range backendKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel() // each waits for its instants on the real clock
			// As a scheduler with WithMaxClockSkew(conformanceSkew) opens
			// it: claims go out at most half the skew ahead.
			testBackend(t, k.store(t, BackendConfig{Prefix: "conf", Pools: &PoolPlace{}, Skew: conformanceSkew, MaxAhead: conformanceSkew / 2}))
		})
	}
}

// conformanceSkew is the suite's max clock skew: small, so that the
// instants after a job's state was created come soon.
const conformanceSkew = 100 * time.Millisecond

func testBackend(t *testing.T, b Backend) {
	ctx := context.Background()
	if err := b.Preload(ctx); err != nil {
		t.Fatalf("preload: %v", err)
	}
	const skew, ttl = conformanceSkew, 3 * time.Second
	// Job "conf" every hour, as the engine passes it with its defaults.
	const deadline = 10 * time.Second
	j := &JobSpec{Name: "conf", MetaKey: b.MetaKey("conf"), Lease: 10 * time.Second, Concurrency: 1,
		StartingDeadline: deadline, ManualRetention: 2*skew + 2*deadline + time.Minute, HistoryLimit: 20}
	// What the engine's job state remembers of the store's answers: the
	// job state's epoch and the highest fencing token seen.
	var epoch string
	var floor int64
	claimOf := func(sched time.Time, kind RunKind, owner string) StoreClaim {
		id := j.Name + "@" + sched.UTC().Format(time.RFC3339)
		return StoreClaim{Job: j, ID: id, Suffix: id[len(j.Name)+1:], Kind: kind, Sched: sched, Fire: sched,
			Owner: owner, Overlap: OverlapSkip, MaxWait: deadline, Known: epoch, FenceFloor: floor, Retention: 2 * time.Hour}
	}
	claim := func(replica string, r StoreClaim) ClaimRes {
		t.Helper()
		res, err := b.Claim(ctx, replica, skew, ttl, []StoreClaim{r})
		if err != nil {
			t.Fatalf("claim by %s: %v", replica, err)
		}
		if len(res) != 1 {
			t.Fatalf("claim by %s: %d answers for 1 run", replica, len(res))
		}
		if res[0].Epoch != "" {
			epoch = res[0].Epoch
		}
		floor = max(floor, res[0].Fence)
		return res[0]
	}
	// A manual request creates the job's state; instants due before it
	// existed (and within the skew after) never start. Three instants after
	// that, a second apart (run ids have the second's precision), are
	// claimed once all three are due, within their starting deadline.
	if err := b.Trigger(ctx, j.Name, j.Name+"@manual-conformance"); err != nil {
		t.Fatalf("trigger: %v", err)
	}
	at := time.Now().Add(1500 * time.Millisecond).Truncate(time.Second)
	time.Sleep(time.Until(at.Add(2*time.Second + skew)))

	// One run, exactly once: the first claim starts it with a fencing
	// token, a racing claim of the same instant finds it decided.
	won := claimOf(at, RunScheduled, "owner-1")
	res := claim("r1", won)
	if res.Status != AnswerStarted || res.Fence <= 0 {
		t.Fatalf("first claim: %+v; want started with a fencing token", res)
	}
	first := res.Fence
	if res = claim("r2", claimOf(at, RunScheduled, "owner-2")); res.Status != AnswerDecided || res.Replica != "r1" {
		t.Errorf("racing claim: %+v; want decided by r1", res)
	}

	// Its lease: renewed for its holder, lost to anyone else.
	leases, err := b.Renew(ctx, []RenewReq{{Job: j, ID: won.ID, Owner: "owner-1"}, {Job: j, ID: won.ID, Owner: "owner-2"}})
	if err != nil || len(leases) != 2 {
		t.Fatalf("renew: %v, %v", leases, err)
	}
	if leases[0] != LeaseOK || leases[1] != LeaseLostAnswer {
		t.Errorf("renewals by the holder and by another: %v; want [ok lost]", leases)
	}

	// A retry's attempt gets a higher token; another owner gets none.
	next, err := b.Attempt(ctx, j, won.ID, "owner-1", 2, floor)
	if err != nil || next <= first {
		t.Errorf("attempt 2: token %d, %v; want above %d", next, err, first)
	}
	if n, err := b.Attempt(ctx, j, won.ID, "owner-2", 2, floor); err != nil || n != 0 {
		t.Errorf("attempt by another owner: token %d, %v; want 0", n, err)
	}

	// Its close: recorded once for its holder; the record is what Control
	// reads back.
	done := []CompleteReq{{R: &won, Replica: "r1", Outcome: Succeeded, Attempts: 2, Output: "out"}}
	closed, err := b.Complete(ctx, done)
	if err != nil || len(closed) != 1 || closed[0] != CloseOK {
		t.Fatalf("complete: %v, %v; want [ok]", closed, err)
	}
	// A close asked again (its answer lost) is answered ok again; a close
	// by another owner is refused.
	if closed, err = b.Complete(ctx, done); err != nil || closed[0] != CloseOK {
		t.Errorf("close asked again: %v, %v; want [ok]", closed, err)
	}
	other := won
	other.Owner = "owner-2"
	if closed, err = b.Complete(ctx, []CompleteReq{{R: &other, Replica: "r2", Outcome: Failed, Attempts: 1}}); err != nil || closed[0] == CloseOK {
		t.Errorf("close by another owner: %v, %v; want it refused", closed, err)
	}
	run, err := b.Get(ctx, j.Name, won.Suffix)
	if err != nil || run == nil {
		t.Fatalf("get: %v, %v", run, err)
	}
	if run.Outcome != Succeeded || run.Replica != "r1" || run.Attempts != 2 || run.FencingToken < first {
		t.Errorf("record: outcome %q by %q, %d attempts, token %d; want succeeded by r1, 2 attempts, token ≥ %d",
			run.Outcome, run.Replica, run.Attempts, run.FencingToken, first)
	}
	hist, err := b.History(ctx, j.Name, 10)
	if err != nil || len(hist) != 1 || hist[0].ID != won.ID || hist[0].Outcome != Succeeded {
		t.Errorf("history: %+v, %v; want the one run, succeeded", hist, err)
	}

	// Paused, the next instant is decided skipped_paused, not started;
	// resumed, the one after starts.
	if err := b.SetPaused(ctx, j.Name, true, "conformance"); err != nil {
		t.Fatal(err)
	}
	if res = claim("r1", claimOf(at.Add(time.Second), RunScheduled, "owner-3")); res.Status != AnswerSkippedPaused {
		t.Errorf("claim while paused: %+v; want skipped_paused", res)
	}
	if st, err := b.Status(ctx, j.Name, 1); err != nil || !st.Paused || st.PausedWhy != "conformance" {
		t.Errorf("status while paused: %+v, %v; want paused, why %q", st, err, "conformance")
	}
	if err := b.SetPaused(ctx, j.Name, false, ""); err != nil {
		t.Fatal(err)
	}
	last := claimOf(at.Add(2*time.Second), RunScheduled, "owner-4")
	res = claim("r2", last)
	if res.Status != AnswerStarted || res.Fence <= next {
		t.Fatalf("claim once resumed: %+v; want started with a token above %d", res, next)
	}
	if st, err := b.Status(ctx, j.Name, 1); err != nil || st.Paused || len(st.Running) != 1 || st.Running[0].ID != last.ID {
		t.Errorf("status once resumed: %+v, %v; want not paused, %s running", st, err, last.ID)
	}

	// An operator's cancel: asked of the running run, which its holder
	// learns at its next renewal; a run that ended is not cancelled.
	if a, _, err := b.Cancel(ctx, j.Name, last.ID, "op"); err != nil || a != CancelAsked {
		t.Errorf("cancel of the running run: %q, %v; want asked", a, err)
	}
	if leases, err := b.Renew(ctx, []RenewReq{{Job: j, ID: last.ID, Owner: "owner-4"}}); err != nil || leases[0] != LeaseCancelled {
		t.Errorf("renewal of a cancelled run: %v, %v; want [cancelled]", leases, err)
	}
	if a, o, err := b.Cancel(ctx, j.Name, won.ID, "op"); err != nil || a != CancelEnded || o != Succeeded {
		t.Errorf("cancel of the run that ended: %q %q, %v; want ended succeeded", a, o, err)
	}
}
