package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// fleet runs scheduler replicas until the test ends, with a ledger of what
// their jobs did and, when set, a Control to read the store's history.
type fleet struct {
	t      *testing.T
	ledger *testkit.Ledger
	ctl    *scheduler.Control
	mu     sync.Mutex
	stops  []func()
	// fresh: replicas find their jobs' state absent, as in a brand-new
	// cluster (or one whose store lost its data), and the data-loss floor
	// holds off the first instants. By default a job's state is
	// established before its first replica starts: the tests are about an
	// established cluster.
	fresh bool
}

// establish gives every job of table an established state in the store
// behind rdb (a job's meta with an epoch, as a cluster that has run before
// leaves it), unless it has one already.
func establish(t testing.TB, rdb redis.Cmdable, table []scheduler.Job) {
	t.Helper()
	for _, j := range table {
		tag := "{" + j.Name + "}"
		if err := rdb.HSetNX(context.Background(), "solocron:"+tag+":meta", "epoch", "established").Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func newFleet(t *testing.T) *fleet {
	f := &fleet{t: t, ledger: testkit.NewLedger()}
	t.Cleanup(f.stop)
	return f
}

// run starts s; the returned function stops it and waits for its shutdown.
func (f *fleet) run(s *scheduler.Scheduler) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	f.mu.Lock()
	f.stops = append(f.stops, stop)
	f.mu.Unlock()
	return stop
}

// stop stops every replica still running and waits for them.
func (f *fleet) stop() {
	f.mu.Lock()
	stops := f.stops
	f.stops = nil
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range stops {
		wg.Go(s)
	}
	wg.Wait()
}

func (f *fleet) history(job string) []scheduler.Run {
	f.t.Helper()
	h, err := f.ctl.History(context.Background(), job, 1000)
	if err != nil {
		f.t.Fatal(err)
	}
	return h
}

// outcomes counts a job's history by outcome.
func (f *fleet) outcomes(job string) map[scheduler.Outcome]int {
	n := map[scheduler.Outcome]int{}
	for _, r := range f.history(job) {
		n[r.Outcome]++
	}
	return n
}

// cluster is a set of replicas sharing one in-process store, for tests that
// run inside a testing/synctest bubble (fake time).
type cluster struct {
	*fleet
	m *miniredis.Miniredis
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	m, c := redistest.MiniPipe(t)
	ctl := schedtest.RedisStore(t, c).Control()
	f := newFleet(t)
	f.ctl = ctl
	return &cluster{fleet: f, m: m}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// client returns a new client of the store, as a new replica would have.
func (c *cluster) client() *redis.Client { return redistest.PipeClient(c.t, c.m) }

// replica starts one replica; stop stops it (and waits for its shutdown).
func (c *cluster) replica(name string, table []scheduler.Job, opts ...scheduler.Option) (s *scheduler.Scheduler, stop func()) {
	c.t.Helper()
	opts = append([]scheduler.Option{scheduler.WithReplicaID(name), scheduler.WithLogger(quiet)}, opts...)
	rdb := c.client()
	if !c.fresh {
		establish(c.t, rdb, table)
	}
	s, err := scheduler.New(schedtest.RedisStore(c.t, rdb), table, opts...)
	if err != nil {
		c.t.Fatal(err)
	}
	return s, c.run(s)
}

// replicas starts n replicas with the same table.
func (c *cluster) replicas(n int, table []scheduler.Job, opts ...scheduler.Option) {
	c.t.Helper()
	for i := range n {
		c.replica(fmt.Sprintf("r%d", i), table, opts...)
	}
}

// sleepJob sleeps d (fake time) or until cancelled.
func sleepJob(d time.Duration) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func id(job string, at time.Time) string { return job + "@" + at.UTC().Format(time.RFC3339) }

// runAlone runs one scheduler on rdb (a client the test has hooked) with
// table for d, then stops it and waits for it to end.
func runAlone(t *testing.T, rdb *redis.Client, table []scheduler.Job, d time.Duration, opts ...scheduler.Option) {
	t.Helper()
	establish(t, rdb, table)
	s, err := scheduler.New(schedtest.RedisStore(t, rdb), table, append([]scheduler.Option{scheduler.WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = s.Run(ctx) })
	time.Sleep(d)
	cancel()
	wg.Wait()
}
