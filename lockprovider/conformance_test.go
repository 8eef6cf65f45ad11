package lockprovider_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/lockprovider"
)

// backend is one Redis the conformance suite runs against.
type backend struct {
	name   string
	client redis.UniversalClient // shared by the cases of one backend
	// newClient returns a fresh client of the backend, closed at cleanup.
	newClient func(t testing.TB) redis.UniversalClient
	// onMasters runs f against every master (a single server, or each
	// master of a cluster): FLUSHALL and SCRIPT FLUSH must reach them all.
	onMasters func(ctx context.Context, f func(c *redis.Client) error) error
	seq       atomic.Int64
	// slow divides the attempt counts of the load cases: miniredis runs Lua
	// in an interpreter under the race detector at about 1k scripts/s, so it
	// gets the same cases with a twentieth of the attempts; a cluster client
	// pays for slot routing and three servers on two cores, a tenth. The
	// single real server carries the full load (50 goroutines × 2000; × 500
	// without SOLOCRON_FULL=1).
	slow int
}

// name returns a lock name no other case uses.
func (b *backend) unique(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, b.seq.Add(1))
}

func (b *backend) provider(t testing.TB, opts ...lockprovider.Option) *lockprovider.Redis {
	t.Helper()
	p, err := lockprovider.NewRedis(b.client, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (b *backend) flushAll(t *testing.T) {
	t.Helper()
	if err := b.onMasters(t.Context(), func(c *redis.Client) error { return c.FlushAll(t.Context()).Err() }); err != nil {
		t.Fatal(err)
	}
}

func (b *backend) scriptFlush(t *testing.T) {
	t.Helper()
	if err := b.onMasters(t.Context(), func(c *redis.Client) error { return c.ScriptFlush(t.Context()).Err() }); err != nil {
		t.Fatal(err)
	}
}

func single(c *redis.Client) func(context.Context, func(*redis.Client) error) error {
	return func(_ context.Context, f func(*redis.Client) error) error { return f(c) }
}

// backends starts every backend once: an in-process miniredis whose TTLs
// follow the real clock, a real redis-server, and a real 3-master Redis
// Cluster (every key of a primitive shares a hash tag, so scripts work there).
func backends(t *testing.T) []*backend {
	t.Helper()
	m, mc := redistest.Mini(t)
	m.ClockTTL(true)
	s := redistest.Start(t)
	sc := s.Client(t, nil)
	cl := redistest.StartCluster(t, 3, nil)
	cc := cl.Client(t, nil)
	return []*backend{
		{name: "miniredis", client: mc, slow: 20, onMasters: single(mc),
			newClient: func(t testing.TB) redis.UniversalClient {
				c := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
				t.Cleanup(func() { _ = c.Close() })
				return c
			}},
		{name: "redis-server", client: sc, slow: 1, onMasters: single(sc),
			newClient: func(t testing.TB) redis.UniversalClient { return s.Client(t, nil) }},
		{name: "redis-cluster", client: cc, slow: 10,
			onMasters: func(ctx context.Context, f func(*redis.Client) error) error {
				return cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error { return f(c) })
			},
			newClient: func(t testing.TB) redis.UniversalClient { return cl.Client(t, nil) }},
	}
}

var conformance = []struct {
	name string
	fn   func(t *testing.T, b *backend)
}{
	{"MutexExclusiveUnderContention", testMutexExclusive},
	{"MutexFencingTokensIncrease", testFencingIncrease},
	{"FencingTokensRiseAfterDataLoss", testFencingAfterFlush},
	{"StaleOwnerCannotRefreshOrRelease", testStaleOwner},
	{"RefreshRacingReleaseNeverResurrects", testRefreshRacingRelease},
	{"ExpiredLeaseFreesLock", testExpiry},
	{"AcquireBlocksUntilReleased", testAcquireBlocks},
	{"AcquireGivesUpWithContext", testAcquireGivesUp},
	{"KeepAliveRenewsPastTTL", testKeepAliveRenews},
	{"KeepAliveCancelsWithErrLeaseLost", testKeepAliveLost},
	{"EachAcquireIsOneCommand", testOneCommand},
	{"RecoversFromScriptFlush", testScriptFlush},
	{"SemaphoreNeverAboveLimit", testSemaphoreLimit},
	{"SemaphoreWaitersAdmittedFIFO", testSemaphoreFIFO},
	{"SemaphoreDeadHolderFreesSlot", testSemaphoreDeadHolder},
	{"SemaphoreLimitMismatch", testSemaphoreMismatch},
	{"ReentrantMutex", testReentrant},
	{"RWMutexReadersShareWriterExcludes", testRWMutex},
	{"RWMutexStaleReaderCannotRelease", testRWStaleReader},
	{"RWMutexWaitingWriterIsNotStarved", testRWWriterNotStarved},
	{"InvalidNames", testInvalidNames},
}

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		// The backends are separate servers: they run side by side. The
		// cases of one backend share it (one flushes it) and run in order.
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range conformance {
				t.Run(c.name, func(t *testing.T) { c.fn(t, b) })
			}
		})
	}
}

func mustAcquire(t *testing.T, l lockprovider.Locker, ttl time.Duration) *lockprovider.Lease {
	t.Helper()
	lease, err := l.TryAcquire(t.Context(), ttl)
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	return lease
}

func mustNotAcquire(t *testing.T, l lockprovider.Locker, ttl time.Duration) {
	t.Helper()
	lease, err := l.TryAcquire(t.Context(), ttl)
	if !errors.Is(err, lockprovider.ErrNotAcquired) {
		t.Fatalf("TryAcquire = %v, %v; want ErrNotAcquired", lease, err)
	}
}

// testMutexExclusive: 50 goroutines × 2000 attempts; never two holders at
// once, and each holder's fencing token is above every earlier holder's.
func testMutexExclusive(t *testing.T, b *backend) {
	m := b.provider(t).Mutex(b.unique("excl"))
	const workers = 50
	attempts := 2000 / b.slow
	if b.slow == 1 && !testkit.Full() {
		attempts = 500 // SOLOCRON_FULL=1 (as CI sets) plays all 2000; 25,000 attempts still contend
	}
	var holders, maxHolders, wins atomic.Int64
	var lastFence atomic.Int64
	var violations atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range attempts {
				lease, err := m.TryAcquire(context.Background(), 5*time.Second)
				if errors.Is(err, lockprovider.ErrNotAcquired) {
					continue
				}
				if err != nil {
					violations.Add(1)
					continue
				}
				n := holders.Add(1)
				if n > maxHolders.Load() {
					maxHolders.Store(n)
				}
				if f := lease.FencingToken(); f <= lastFence.Load() {
					violations.Add(1)
				} else {
					lastFence.Store(f)
				}
				wins.Add(1)
				holders.Add(-1)
				if err := lease.Release(context.Background()); err != nil {
					violations.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := maxHolders.Load(); got != 1 {
		t.Errorf("max concurrent holders = %d, want 1", got)
	}
	if v := violations.Load(); v != 0 {
		t.Errorf("%d violations (non-increasing fence or unexpected error)", v)
	}
	if wins.Load() < workers {
		t.Errorf("only %d acquisitions in %d attempts: contention test did not exercise the lock", wins.Load(), workers*attempts)
	}
	t.Logf("%d acquisitions out of %d attempts", wins.Load(), workers*attempts)
}

func testFencingIncrease(t *testing.T, b *backend) {
	p := b.provider(t)
	name := b.unique("fence")
	lockers := map[string]lockprovider.Locker{
		"mutex":     p.Mutex(name),
		"semaphore": p.Semaphore(name, 2),
		"reentrant": p.ReentrantMutex(name).Owner("o"),
		"rw-read":   p.RWMutex(name).Reader(),
		"rw-write":  p.RWMutex(name).Writer(),
	}
	var last int64
	for range 20 {
		for kind, l := range lockers {
			lease := mustAcquire(t, l, time.Second)
			if lease.FencingToken() <= last {
				t.Fatalf("%s: fencing token %d is not above the previous %d", kind, lease.FencingToken(), last)
			}
			last = lease.FencingToken()
			if err := lease.Release(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// testFencingAfterFlush: Redis forgetting everything (restart without
// persistence, FLUSHALL) must not make tokens go back.
func testFencingAfterFlush(t *testing.T, b *backend) {
	m := b.provider(t).Mutex(b.unique("flush"))
	before := mustAcquire(t, m, 10*time.Second)
	b.flushAll(t)
	if err := before.Refresh(t.Context()); !errors.Is(err, lockprovider.ErrLeaseLost) {
		t.Fatalf("Refresh after FLUSHALL = %v, want ErrLeaseLost (never re-create a lost key)", err)
	}
	after := mustAcquire(t, m, 10*time.Second)
	if after.FencingToken() <= before.FencingToken() {
		t.Fatalf("token after data loss %d is not above %d", after.FencingToken(), before.FencingToken())
	}
}

func testStaleOwner(t *testing.T, b *backend) {
	p := b.provider(t)
	for kind, l := range map[string]lockprovider.Locker{
		"mutex":     p.Mutex(b.unique("stale")),
		"semaphore": p.Semaphore(b.unique("stale"), 1),
		"rw-write":  p.RWMutex(b.unique("stale")).Writer(),
	} {
		t.Run(kind, func(t *testing.T) {
			old := mustAcquire(t, l, 150*time.Millisecond)
			var current *lockprovider.Lease
			testkit.WaitFor(t, 5*time.Second, "re-acquirable after expiry", func() bool {
				var err error
				current, err = l.TryAcquire(t.Context(), 10*time.Second)
				return err == nil
			})
			if err := old.Refresh(t.Context()); !errors.Is(err, lockprovider.ErrLeaseLost) {
				t.Errorf("stale Refresh = %v, want ErrLeaseLost", err)
			}
			if err := old.Release(t.Context()); !errors.Is(err, lockprovider.ErrLeaseLost) {
				t.Errorf("stale Release = %v, want ErrLeaseLost", err)
			}
			// The new owner's hold is untouched.
			mustNotAcquire(t, l, time.Second)
			if err := current.Refresh(t.Context()); err != nil {
				t.Errorf("new owner's Refresh = %v", err)
			}
			if err := current.Release(t.Context()); err != nil {
				t.Errorf("new owner's Release = %v", err)
			}
		})
	}
}

func testRefreshRacingRelease(t *testing.T, b *backend) {
	p := b.provider(t)
	name := b.unique("race")
	m := p.Mutex(name)
	for i := range 200 {
		lease := mustAcquire(t, m, 10*time.Second)
		var wg sync.WaitGroup
		wg.Go(func() { _ = lease.Refresh(context.Background()) })
		wg.Go(func() { _ = lease.Release(context.Background()) })
		wg.Wait()
		// Whatever the order, the lock is free afterwards: its key (the
		// name's fencing counter) holds the counter alone.
		v, err := b.client.Get(t.Context(), "lock:{"+name+"}:fence").Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(v, " ") {
			t.Fatalf("iteration %d: the hold %q survived a release that raced a refresh", i, v)
		}
	}
}

func testExpiry(t *testing.T, b *backend) {
	p := b.provider(t)
	re := p.ReentrantMutex(b.unique("exp"))
	for kind, pair := range map[string][2]lockprovider.Locker{
		"mutex":     {p.Mutex(b.unique("exp")), nil},
		"semaphore": {p.Semaphore(b.unique("exp"), 1), nil},
		"reentrant": {re.Owner("a"), re.Owner("b")}, // its owner would just re-enter
		"rw-write":  {p.RWMutex(b.unique("exp")).Writer(), nil},
	} {
		holder, other := pair[0], pair[1]
		if other == nil {
			other = holder
		}
		t.Run(kind, func(t *testing.T) {
			start := time.Now()
			mustAcquire(t, holder, 200*time.Millisecond)
			mustNotAcquire(t, other, time.Second)
			testkit.WaitFor(t, 5*time.Second, "free after the TTL", func() bool {
				_, err := other.TryAcquire(t.Context(), time.Second)
				return err == nil
			})
			if el := time.Since(start); el < 150*time.Millisecond {
				t.Errorf("free again after %s, before its 200ms TTL", el)
			}
		})
	}
}

func testAcquireBlocks(t *testing.T, b *backend) {
	p := b.provider(t)
	m := p.Mutex(b.unique("block"))
	held := mustAcquire(t, m, 10*time.Second)
	got := make(chan *lockprovider.Lease, 1)
	errs := make(chan error, 1)
	go func() {
		l, err := m.Acquire(context.Background(), time.Second, lockprovider.LinearBackoff(10*time.Millisecond))
		if err != nil {
			errs <- err
			return
		}
		got <- l
	}()
	select {
	case l := <-got:
		t.Fatalf("acquired %v while held", l)
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := held.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-got:
		if l.FencingToken() <= held.FencingToken() {
			t.Errorf("waiter's token %d not above %d", l.FencingToken(), held.FencingToken())
		}
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(5 * time.Second):
		t.Fatal("Acquire did not return after the release")
	}

	// NoRetry is a single try.
	if _, err := m.Acquire(t.Context(), time.Second, lockprovider.NoRetry()); !errors.Is(err, lockprovider.ErrNotAcquired) {
		t.Errorf("Acquire(NoRetry) on a held lock = %v, want ErrNotAcquired", err)
	}
	// LimitRetry stops after its retries.
	start := time.Now()
	_, err := m.Acquire(t.Context(), time.Second, lockprovider.LimitRetry(lockprovider.LinearBackoff(10*time.Millisecond), 3))
	if !errors.Is(err, lockprovider.ErrNotAcquired) || time.Since(start) < 30*time.Millisecond {
		t.Errorf("Acquire(LimitRetry 3) = %v after %s, want ErrNotAcquired after ≥30ms", err, time.Since(start))
	}
}

func testAcquireGivesUp(t *testing.T, b *backend) {
	m := b.provider(t).Mutex(b.unique("giveup"))
	mustAcquire(t, m, 10*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := m.Acquire(ctx, time.Second, lockprovider.ExponentialBackoff(5*time.Millisecond, 50*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, lockprovider.ErrNotAcquired) {
		t.Fatalf("Acquire with a deadline on a held lock = %v; want both DeadlineExceeded and ErrNotAcquired", err)
	}
}

func testKeepAliveRenews(t *testing.T, b *backend) {
	m := b.provider(t).Mutex(b.unique("ka"))
	// 900ms: renewals every 300ms keep it even when a loaded machine (CI on
	// 2 cores, a 3-node cluster under -race) delays one by a few hundred ms.
	lease := mustAcquire(t, m, 900*time.Millisecond)
	var renewals atomic.Int64
	ctx, stop := lockprovider.KeepAlive(t.Context(), lease, lockprovider.OnRefresh(func(err error) {
		if err == nil {
			renewals.Add(1)
		}
	}))
	defer stop()
	// Hold it for several TTLs: nobody else can take it, and it stays alive.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		mustNotAcquire(t, m, time.Second)
		time.Sleep(50 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatalf("keep-alive context ended: %v", context.Cause(ctx))
	}
	if n := renewals.Load(); n < 3 {
		t.Errorf("%d renewals in 2s of a 900ms lease; want at least 3 (every TTL/3)", n)
	}
	stop()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("after stop, ctx.Err() = %v", ctx.Err())
	}
	if err := lease.Release(t.Context()); err != nil {
		t.Errorf("Release after stop = %v (stop must not release)", err)
	}
}

func testKeepAliveLost(t *testing.T, b *backend) {
	p := b.provider(t)
	name := b.unique("lost")
	m := p.Mutex(name)
	lease := mustAcquire(t, m, 600*time.Millisecond)
	ctx, stop := lockprovider.KeepAlive(t.Context(), lease)
	defer stop()
	// Someone deletes the key behind our back (an operator, a data loss).
	if err := b.client.Del(t.Context(), "lock:{"+name+"}:fence").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("keep-alive context still alive 5s after its lease was deleted")
	}
	if cause := context.Cause(ctx); !errors.Is(cause, lockprovider.ErrLeaseLost) {
		t.Fatalf("cause = %v, want ErrLeaseLost", cause)
	}
	// Renewal never re-creates a missing key.
	if n := b.client.Exists(t.Context(), "lock:{"+name+"}:fence").Val(); n != 0 {
		t.Fatal("the keep-alive re-created the deleted lock")
	}
}

func testOneCommand(t *testing.T, b *backend) {
	c := b.newClient(t)
	var counter testkit.CommandCounter
	c.AddHook(&counter)
	p, err := lockprovider.NewRedis(c)
	if err != nil {
		t.Fatal(err)
	}
	lockers := map[string]lockprovider.Locker{
		"mutex":     p.Mutex(b.unique("count")),
		"semaphore": p.Semaphore(b.unique("count"), 3),
		"reentrant": p.ReentrantMutex(b.unique("count")).Owner("o"),
		"rw-read":   p.RWMutex(b.unique("count")).Reader(),
		"rw-write":  p.RWMutex(b.unique("count")).Writer(),
	}
	for kind, l := range lockers {
		// Warm up: the first call of each script may load it (NOSCRIPT → EVAL).
		w := mustAcquire(t, l, time.Second)
		_ = w.Refresh(t.Context())
		_ = w.Release(t.Context())
		for op, f := range map[string]func(*lockprovider.Lease) error{
			"acquire": nil,
			"refresh": func(l *lockprovider.Lease) error { return l.Refresh(t.Context()) },
			"release": func(l *lockprovider.Lease) error { return l.Release(t.Context()) },
		} {
			before := counter.Load()
			lease := mustAcquire(t, l, time.Second)
			if f == nil {
				if got := counter.Load() - before; got != 1 {
					t.Errorf("%s acquire sent %d commands, want 1", kind, got)
				}
				_ = lease.Release(t.Context())
				continue
			}
			before = counter.Load()
			if err := f(lease); err != nil {
				t.Fatalf("%s %s: %v", kind, op, err)
			}
			if got := counter.Load() - before; got != 1 {
				t.Errorf("%s %s sent %d commands, want 1", kind, op, got)
			}
			_ = lease.Release(t.Context())
		}
	}
}

func testScriptFlush(t *testing.T, b *backend) {
	m := b.provider(t).Mutex(b.unique("noscript"))
	lease := mustAcquire(t, m, 10*time.Second)
	b.scriptFlush(t)
	if err := lease.Refresh(t.Context()); err != nil {
		t.Fatalf("Refresh after SCRIPT FLUSH: %v", err)
	}
	if err := lease.Release(t.Context()); err != nil {
		t.Fatalf("Release after SCRIPT FLUSH: %v", err)
	}
	b.scriptFlush(t)
	mustAcquire(t, m, time.Second)
}

func testSemaphoreLimit(t *testing.T, b *backend) {
	const limit, workers = 3, 30
	attempts := 300 / b.slow
	s := b.provider(t).Semaphore(b.unique("sem"), limit)

	// All slots can be held at once, and not one more.
	var held []*lockprovider.Lease
	for range limit {
		held = append(held, mustAcquire(t, s, 5*time.Second))
	}
	mustNotAcquire(t, s, time.Second)
	for _, l := range held {
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}

	// Under contention, never more than the limit.
	var holders, maxHolders, errs atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range attempts {
				lease, err := s.TryAcquire(context.Background(), 5*time.Second)
				if errors.Is(err, lockprovider.ErrNotAcquired) {
					continue
				}
				if err != nil {
					errs.Add(1)
					continue
				}
				n := holders.Add(1)
				for {
					m := maxHolders.Load()
					if n <= m || maxHolders.CompareAndSwap(m, n) {
						break
					}
				}
				time.Sleep(time.Millisecond)
				holders.Add(-1)
				if err := lease.Release(context.Background()); err != nil {
					errs.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := maxHolders.Load(); got > limit {
		t.Errorf("max concurrent holders = %d, above the limit %d", got, limit)
	}
	if errs.Load() != 0 {
		t.Errorf("%d unexpected errors", errs.Load())
	}
	t.Logf("at most %d holders at once under contention", maxHolders.Load())
}

func testSemaphoreFIFO(t *testing.T, b *backend) {
	p := b.provider(t)
	name := b.unique("fifo")
	s := p.Semaphore(name, 1)
	held := mustAcquire(t, s, 10*time.Second)
	const waiters = 4
	order := make(chan int, waiters)
	leases := make(chan *lockprovider.Lease, waiters)
	queueKey := "lock:{" + name + "}:queue"
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Go(func() {
			l, err := s.Acquire(context.Background(), 10*time.Second, lockprovider.LinearBackoff(5*time.Millisecond))
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			order <- i
			leases <- l
		})
		// Waiter i is queued before waiter i+1 starts.
		testkit.WaitFor(t, 5*time.Second, fmt.Sprintf("waiter %d queued", i), func() bool {
			return b.client.ZCard(t.Context(), queueKey).Val() == int64(i+1)
		})
	}
	// A TryAcquire never jumps the queue, even when a slot is free.
	if err := held.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	for want := range waiters {
		select {
		case got := <-order:
			if got != want {
				t.Fatalf("admitted waiter %d, want %d (first come, first served)", got, want)
			}
			l := <-leases
			if want == 0 {
				mustNotAcquire(t, s, time.Second)
			}
			if err := l.Release(t.Context()); err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("waiter %d not admitted", want)
		}
	}
	wg.Wait()
}

func testSemaphoreDeadHolder(t *testing.T, b *backend) {
	s := b.provider(t).Semaphore(b.unique("dead"), 2)
	mustAcquire(t, s, 200*time.Millisecond) // its holder "dies": never refreshes
	alive := mustAcquire(t, s, 10*time.Second)
	mustNotAcquire(t, s, time.Second)
	testkit.WaitFor(t, 5*time.Second, "the dead holder's slot freed", func() bool {
		l, err := s.TryAcquire(t.Context(), 10*time.Second)
		return err == nil && l != nil
	})
	if err := alive.Refresh(t.Context()); err != nil {
		t.Errorf("live holder lost its slot: %v", err)
	}
}

func testSemaphoreMismatch(t *testing.T, b *backend) {
	p := b.provider(t)
	name := b.unique("limit")
	held := mustAcquire(t, p.Semaphore(name, 2), 10*time.Second)
	_, err := p.Semaphore(name, 5).TryAcquire(t.Context(), time.Second)
	var le *lockprovider.LimitError
	if !errors.Is(err, lockprovider.ErrLimitMismatch) || !errors.As(err, &le) || le.Current != 2 {
		t.Fatalf("acquire with another limit = %v, want ErrLimitMismatch with Current 2", err)
	}
	if err := held.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, p.Semaphore(name, 5), time.Second) // once empty, the limit may change
}

func testReentrant(t *testing.T, b *backend) {
	m := b.provider(t).ReentrantMutex(b.unique("re"))
	a, other := m.Owner("a"), m.Owner("b")
	l1 := mustAcquire(t, a, 10*time.Second)
	l2 := mustAcquire(t, a, 10*time.Second)
	if l1.FencingToken() != l2.FencingToken() {
		t.Errorf("re-entry changed the fencing token: %d then %d", l1.FencingToken(), l2.FencingToken())
	}
	mustNotAcquire(t, other, time.Second)
	// Another owner cannot release a's hold.
	forged := lockprovider.NewLease(m, "x", "b", 0, time.Second, time.Now())
	if err := forged.Release(t.Context()); !errors.Is(err, lockprovider.ErrLeaseLost) {
		t.Fatalf("release by a non-owner = %v, want ErrLeaseLost", err)
	}
	if err := l2.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	mustNotAcquire(t, other, time.Second) // still held once
	if err := l1.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, other, time.Second)
}

func testRWMutex(t *testing.T, b *backend) {
	rw := b.provider(t).RWMutex(b.unique("rw"))
	r1 := mustAcquire(t, rw.Reader(), 10*time.Second)
	r2 := mustAcquire(t, rw.Reader(), 10*time.Second)
	mustNotAcquire(t, rw.Writer(), time.Second)
	_ = r1.Release(t.Context())
	mustNotAcquire(t, rw.Writer(), time.Second)
	_ = r2.Release(t.Context())
	w := mustAcquire(t, rw.Writer(), 10*time.Second)
	mustNotAcquire(t, rw.Reader(), time.Second)
	mustNotAcquire(t, rw.Writer(), time.Second)
	if err := w.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := w.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, rw.Reader(), time.Second)
}

func testRWStaleReader(t *testing.T, b *backend) {
	rw := b.provider(t).RWMutex(b.unique("rwstale"))
	stale := mustAcquire(t, rw.Reader(), 150*time.Millisecond)
	fresh := mustAcquire(t, rw.Reader(), 10*time.Second)
	// Expiry needs real time to pass; nothing to poll without refreshing it.
	time.Sleep(time.Until(stale.Until()) + 100*time.Millisecond)
	if err := stale.Refresh(t.Context()); !errors.Is(err, lockprovider.ErrLeaseLost) {
		t.Errorf("stale reader Refresh = %v, want ErrLeaseLost", err)
	}
	if err := stale.Release(t.Context()); !errors.Is(err, lockprovider.ErrLeaseLost) {
		t.Errorf("stale reader Release = %v, want ErrLeaseLost", err)
	}
	// The other reader's hold is intact: a writer still cannot get in.
	mustNotAcquire(t, rw.Writer(), time.Second)
	if err := fresh.Refresh(t.Context()); err != nil {
		t.Errorf("fresh reader lost its hold: %v", err)
	}
}

func testRWWriterNotStarved(t *testing.T, b *backend) {
	rw := b.provider(t).RWMutex(b.unique("rwstarve"))
	r := mustAcquire(t, rw.Reader(), 10*time.Second)
	done := make(chan error, 1)
	go func() {
		l, err := rw.Writer().Acquire(context.Background(), time.Second, lockprovider.LinearBackoff(5*time.Millisecond))
		if err == nil {
			err = l.Release(context.Background())
		}
		done <- err
	}()
	// Once the writer waits, new readers are held back.
	testkit.WaitFor(t, 5*time.Second, "new readers held back by the waiting writer", func() bool {
		l, err := rw.Reader().TryAcquire(t.Context(), time.Second)
		if err == nil {
			_ = l.Release(t.Context())
		}
		return errors.Is(err, lockprovider.ErrNotAcquired)
	})
	_ = r.Release(t.Context())
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("writer never got the lock")
	}
}

func testInvalidNames(t *testing.T, b *backend) {
	p := b.provider(t)
	for _, name := range []string{"", "a{b", "a}b", "{x}"} {
		for kind, l := range map[string]lockprovider.Locker{
			"mutex":     p.Mutex(name),
			"semaphore": p.Semaphore(name, 1),
			"reentrant": p.ReentrantMutex(name).Owner("o"),
			"rw":        p.RWMutex(name).Writer(),
		} {
			if _, err := l.TryAcquire(t.Context(), time.Second); !errors.Is(err, lockprovider.ErrInvalidName) {
				t.Errorf("%s %q: err = %v, want ErrInvalidName", kind, name, err)
			}
		}
	}
	if _, err := lockprovider.NewRedis(b.client, lockprovider.WithPrefix("a{")); !errors.Is(err, lockprovider.ErrInvalidName) {
		t.Errorf("prefix with '{': err = %v, want ErrInvalidName", err)
	}
}
