package lockprovider_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/lockprovider"
)

// masters is a set of independent Redis masters and a way to take one down.
type masters struct {
	clients []lockprovider.Client
	down    func(i int)
}

func redlockBackends(t *testing.T) map[string]func(t *testing.T) masters {
	return map[string]func(t *testing.T) masters{
		"miniredis": func(t *testing.T) masters {
			var ms masters
			var downs []func()
			for range 3 {
				m, _ := redistest.Mini(t)
				c := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
				t.Cleanup(func() { _ = c.Close() })
				ms.clients = append(ms.clients, c)
				downs = append(downs, m.Close)
			}
			ms.down = func(i int) { downs[i]() }
			return ms
		},
		"redis-server": func(t *testing.T) masters {
			var ms masters
			var servers []*redistest.Server
			for range 3 {
				s := redistest.Start(t)
				servers = append(servers, s)
				ms.clients = append(ms.clients, s.Client(t, &redis.Options{MaxRetries: -1}))
			}
			ms.down = func(i int) { servers[i].Kill() }
			return ms
		},
	}
}

func TestRedlock(t *testing.T) {
	t.Parallel()
	for name, start := range redlockBackends(t) {
		// Each case starts masters of its own: all run side by side.
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct {
				name string
				fn   func(*testing.T, masters)
			}{
				{"Exclusive", testRedlockExclusive},
				{"MinorityDownStillWorks", testRedlockDown},
				{"KeepAliveAndRelease", testRedlockKeepAlive},
			} {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.fn(t, start(t))
				})
			}
		})
	}
}

func newRedlock(t *testing.T, ms masters) *lockprovider.Redlock {
	t.Helper()
	rl, err := lockprovider.NewRedlock(ms.clients, lockprovider.WithCallTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if rl.Quorum() != 2 {
		t.Fatalf("quorum of 3 masters = %d, want 2", rl.Quorum())
	}
	return rl
}

func testRedlockExclusive(t *testing.T, ms masters) {
	m := newRedlock(t, ms).Mutex("excl")
	var holders, maxHolders, wins atomic.Int64
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for range 50 {
				l, err := m.TryAcquire(context.Background(), 5*time.Second)
				if err != nil {
					continue
				}
				wins.Add(1)
				if n := holders.Add(1); n > maxHolders.Load() {
					maxHolders.Store(n)
				}
				holders.Add(-1)
				_ = l.Release(context.Background())
			}
		})
	}
	wg.Wait()
	if maxHolders.Load() != 1 || wins.Load() == 0 {
		t.Fatalf("max holders %d over %d wins, want exactly 1", maxHolders.Load(), wins.Load())
	}
	held := mustAcquire(t, m, 10*time.Second)
	mustNotAcquire(t, m, time.Second)
	if err := held.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func testRedlockDown(t *testing.T, ms masters) {
	m := newRedlock(t, ms).Mutex("down")
	ms.down(0)
	l := mustAcquire(t, m, 10*time.Second) // 2 of 3 is a quorum
	mustNotAcquire(t, m, time.Second)      // and still exclusive
	if err := l.Refresh(t.Context()); err != nil {
		t.Fatalf("Refresh with one master down: %v", err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("Release with one master down: %v", err)
	}

	ms.down(1)
	_, err := m.TryAcquire(t.Context(), 10*time.Second)
	var qe *lockprovider.QuorumError
	if !errors.As(err, &qe) {
		t.Fatalf("acquire with 2 of 3 masters down = %v, want *QuorumError", err)
	}
	if qe.Acquired != 1 || qe.Quorum != 2 || qe.Masters != 3 || len(qe.Errs) != 2 {
		t.Errorf("QuorumError = %+v", qe)
	}
	if errors.Is(err, lockprovider.ErrNotAcquired) {
		t.Error("an outage must not look like plain contention")
	}
}

func testRedlockKeepAlive(t *testing.T, ms masters) {
	m := newRedlock(t, ms).Mutex("ka")
	// A TTL a loaded machine can keep (renewals every third of it; a 300 ms
	// one lapsed under load 20 with -race), held over twice as long.
	const ttl = time.Second
	l := mustAcquire(t, m, ttl)
	ctx, stop := lockprovider.KeepAlive(t.Context(), l)
	deadline := time.Now().Add(2*ttl + ttl/2)
	for time.Now().Before(deadline) {
		mustNotAcquire(t, m, time.Second)
		time.Sleep(50 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatalf("redlock keep-alive ended: %v", context.Cause(ctx))
	}
	stop()
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, m, time.Second)
}
