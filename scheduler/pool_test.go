package scheduler_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// inFlight counts the runs of any job in flight at once, and the most ever.
type inFlight struct {
	now, max atomic.Int64
	runs     atomic.Int64
}

func (f *inFlight) job(d time.Duration) jobs.Func {
	return func(ctx context.Context) error {
		n := f.now.Add(1)
		defer f.now.Add(-1)
		f.runs.Add(1)
		for m := f.max.Load(); n > m && !f.max.CompareAndSwap(m, n); m = f.max.Load() {
		}
		return sleepJob(d)(ctx)
	}
}

func pooled(name string, f *inFlight, run time.Duration, overlap scheduler.Overlap, size int) scheduler.Job {
	j := scheduler.Job{Name: name, Schedule: "@every 2s", Handler: f.job(run), Overlap: overlap,
		Concurrency: 5, Pool: "exports", PoolSize: size, Lease: time.Second} // runs outlast the lease: renewals keep both slots
	if overlap == scheduler.OverlapWait {
		j.MaxWait = time.Minute
	}
	return j
}

func heldKey() string { return "solocron:{pool:exports}:held" }

// poolPair runs jobs a and b, sharing the pool of 1, on n replicas for d
// (in a synctest bubble), stops them, and checks that never two of their
// runs were in flight at once.
func poolPair(t *testing.T, run time.Duration, overlap scheduler.Overlap, n int, d time.Duration) (*cluster, *inFlight) {
	t.Helper()
	c := newCluster(t)
	f := new(inFlight)
	table := []scheduler.Job{pooled("a", f, run, overlap, 1), pooled("b", f, run, overlap, 1)}
	c.ctl.UseTable(table)
	c.replicas(n, table)
	time.Sleep(d)
	c.stop()
	if m := f.max.Load(); m != 1 {
		t.Errorf("%d runs of the pool's jobs in flight at once, want 1", m)
	}
	return c, f
}

// Two jobs sharing a pool of 1, on three replicas, each with slots of its
// own to spare: never two runs at once; the runs the pool had no room for
// are skipped, saying so.
func TestPoolOfOneRunsOneJobAtATime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, f := poolPair(t, 3*time.Second, scheduler.OverlapSkip, 3, 30*time.Second)
		if f.runs.Load() < 6 {
			t.Errorf("only %d runs", f.runs.Load())
		}
		skipped := 0
		for _, job := range []string{"a", "b"} {
			for _, r := range c.history(job) {
				if r.Outcome == scheduler.SkippedOverlap {
					skipped++
					if !strings.Contains(r.Error, "pool exports") {
						t.Errorf("%s skipped with %q; want the pool named", r.ID, r.Error)
					}
				}
			}
		}
		if skipped == 0 {
			t.Error("nothing skipped: the pool was never full")
		}
	})
}

// overlap: wait with the pool full: every run of both jobs runs, one at a
// time, none skipped.
func TestPoolFullWaits(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, _ := poolPair(t, 700*time.Millisecond, scheduler.OverlapWait, 2, 21*time.Second)
		for _, job := range []string{"a", "b"} {
			out := c.outcomes(job)
			if out[scheduler.Succeeded] < 9 || out[scheduler.SkippedOverlap] != 0 {
				t.Errorf("job %s: %v; want every run succeeded after waiting", job, out)
			}
		}
	})
}

// A holder that died keeps its pool slot until its lease ends, and not a
// moment longer: then the pool's jobs run again.
func TestPoolSlotOfADeadHolderComesBackAfterItsLease(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		var f inFlight
		table := []scheduler.Job{pooled("a", &f, 100*time.Millisecond, scheduler.OverlapSkip, 1)}
		// A run of another job of the pool, on a replica that died: its
		// slot in the pool expires in 10s (Redis' clock).
		rdb := c.client()
		ctx := context.Background()
		t0 := time.Now()
		if err := rdb.ZAdd(ctx, heldKey(), redis.Z{Score: float64(t0.Add(10 * time.Second).UnixMilli()), Member: "gone@2026-01-01T00:00:00Z"}).Err(); err != nil {
			t.Fatal(err)
		}
		c.replicas(2, table)
		time.Sleep(9 * time.Second)
		if n := f.runs.Load(); n != 0 {
			t.Errorf("%d runs while the dead holder's lease lasted", n)
		}
		time.Sleep(7 * time.Second)
		c.stop()
		if n := f.runs.Load(); n < 2 {
			t.Errorf("%d runs after the dead holder's lease ended, want its slot back", n)
		}
		if n := rdb.ZCard(ctx, heldKey()).Val(); n != 0 {
			t.Errorf("%d pool slots still held after every run ended", n)
		}
	})
}

// Reload changing the pool's size: the new size holds from the next claim.
func TestPoolReloadChangesItsSize(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		var f inFlight
		var table []scheduler.Job
		for _, n := range []string{"a", "b", "c"} {
			table = append(table, pooled(n, &f, 5*time.Second, scheduler.OverlapSkip, 1))
		}
		s, _ := c.replica("r0", table)
		time.Sleep(12 * time.Second)
		if m := f.max.Load(); m != 1 {
			t.Fatalf("%d in flight with a pool of 1", m)
		}
		// resize reloads the table with the pool at size, lets the runs
		// started before end for settle, then counts the most in flight
		// for 12s.
		resize := func(size int, settle time.Duration) {
			for i := range table {
				table[i].PoolSize = size
			}
			if err := s.Reload(table); err != nil {
				t.Fatal(err)
			}
			if settle > 0 {
				time.Sleep(settle)
			}
			f.max.Store(f.now.Load())
			time.Sleep(12 * time.Second)
		}
		resize(3, 0)
		if m := f.max.Load(); m != 3 {
			t.Errorf("%d in flight at most after the pool grew to 3, want 3", m)
		}
		resize(2, 6*time.Second) // the runs started under 3 end first
		c.stop()
		if m := f.max.Load(); m != 2 {
			t.Errorf("%d in flight at most after the pool shrank to 2, want 2", m)
		}
	})
}

// The same on real servers: a standalone redis-server and a Redis Cluster,
// three replicas, two jobs of a pool of 1 with 400ms runs every second.
// The two run one after the other in the test's own parallel slot: a
// parallel subtest of a parallel test waits behind every other parallel
// test of the package, and ended the package's run.
func TestPoolOnRedisAndCluster(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		client func(t *testing.T) redis.UniversalClient
	}{
		{"standalone", func(t *testing.T) redis.UniversalClient { return redistest.Start(t).Client(t, nil) }},
		{"cluster", func(t *testing.T) redis.UniversalClient { return redistest.StartCluster(t, 3, nil).Client(t, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f inFlight
			table := []scheduler.Job{}
			for _, n := range []string{"a", "b"} {
				table = append(table, scheduler.Job{Name: n, Schedule: "* * * * * *", Handler: f.job(400 * time.Millisecond),
					Concurrency: 2, Overlap: scheduler.OverlapWait, MaxWait: 10 * time.Second, Pool: "exports", PoolSize: 1})
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			probe := tc.client(t) // one server (or cluster); the replicas share its client
			for i := range 3 {
				s, err := scheduler.New(schedtest.RedisStore(t, probe), table, replicaOpts(i, scheduler.WithLogger(quiet))...)
				if err != nil {
					t.Fatal(err)
				}
				wg.Go(func() { _ = s.Run(ctx) })
			}
			deadline := time.Now().Add(20 * time.Second)
			for f.runs.Load() < 8 && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			cancel()
			wg.Wait()
			if m := f.max.Load(); m != 1 {
				t.Errorf("%d runs in flight at once, want 1", m)
			}
			if n := f.runs.Load(); n < 8 {
				t.Errorf("only %d runs in 20s", n)
			}
			if n := probe.ZCard(context.Background(), heldKey()).Val(); n != 0 {
				t.Errorf("%d pool slots held after every replica stopped", n)
			}
		})
	}
}

// Redlock refuses pools: each master would count the pool's slots apart.
func TestRedlockRefusesPools(t *testing.T) {
	var cs []redis.UniversalClient
	for range 3 {
		_, c := redistest.MiniPipe(t)
		cs = append(cs, c)
	}
	var f inFlight
	_, err := scheduler.New(schedtest.RedlockStore(t, cs), []scheduler.Job{pooled("a", &f, time.Second, scheduler.OverlapSkip, 2)})
	if err == nil || !strings.Contains(err.Error(), `jobs[0].Pool: a Redlock store cannot hold pool "exports"`) {
		t.Errorf("New: %v", err)
	}
}

// Bad pools in a table: Validate names the field.
func TestPoolValidation(t *testing.T) {
	h := jobs.Func(func(context.Context) error { return nil })
	for _, tc := range []struct {
		jobs []scheduler.Job
		want string
	}{
		{[]scheduler.Job{{Name: "a", Schedule: "@hourly", Handler: h, Pool: "p"}}, `Pool: pool "p" needs a size of at least 1 slot`},
		{[]scheduler.Job{{Name: "a", Schedule: "@hourly", Handler: h, PoolSize: 2}}, `Pool: is empty, but PoolSize is set (2)`},
		{[]scheduler.Job{{Name: "a", Schedule: "@hourly", Handler: h, Pool: "p:q", PoolSize: 1}}, `"p:q" is not a valid pool name`},
		{[]scheduler.Job{{Name: "a", Schedule: "@hourly", Handler: h, Pool: "p", PoolSize: 1},
			{Name: "b", Schedule: "@hourly", Handler: h, Pool: "p", PoolSize: 2}}, `pool "p" has size 2 here but 1 in jobs[0]`},
	} {
		err := scheduler.ValidateTable(tc.jobs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %s", err, tc.want)
		}
	}
}

// Status, Statuses and Overview show the pool's use: its size, the slots
// held and by which runs, of whichever job.
func TestPoolUseInStatus(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		var f inFlight
		table := []scheduler.Job{pooled("a", &f, time.Minute, scheduler.OverlapSkip, 2),
			pooled("b", &f, time.Minute, scheduler.OverlapSkip, 2), {Name: "solo", Schedule: "@hourly", Handler: f.job(0)}}
		c.ctl.UseTable(table)
		c.replicas(2, table)
		time.Sleep(5 * time.Second)
		ctx := context.Background()
		st, err := c.ctl.Status(ctx, "b", 1)
		if err != nil {
			t.Fatal(err)
		}
		sts, err := c.ctl.Statuses(ctx, []string{"a", "b", "solo"}, 1)
		if err != nil {
			t.Fatal(err)
		}
		ov, err := c.ctl.Overview(ctx, []string{"a", "b", "solo"}, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []*scheduler.PoolUse{st.Pool, sts[0].Pool, sts[1].Pool, ov[0].Pool, ov[1].Pool} {
			if p == nil || p.Name != "exports" || p.Size != 2 || p.Used != 2 || len(p.Holders) != 2 {
				t.Fatalf("pool use %+v; want exports, 2 of 2 held", p)
			}
			for _, h := range p.Holders {
				if !strings.HasPrefix(h, "a@") && !strings.HasPrefix(h, "b@") {
					t.Errorf("holder %q", h)
				}
			}
		}
		if sts[2].Pool != nil || ov[2].Pool != nil {
			t.Errorf("a job in no pool shows pool use %+v %+v", sts[2].Pool, ov[2].Pool)
		}
		c.stop()
	})
}
