package lockprovider_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/lockprovider"
)

// Acquire+release of each primitive against a real redis-server started for
// the benchmark. Two round trips per op is the floor.
func BenchmarkAcquireRelease(b *testing.B) {
	s := redistest.Start(b)
	c := s.Client(b, &redis.Options{PoolSize: 64})
	p, err := lockprovider.NewRedis(c)
	if err != nil {
		b.Fatal(err)
	}
	var clients []lockprovider.Client
	for range 3 {
		clients = append(clients, redistest.Start(b).Client(b, &redis.Options{MaxRetries: -1}))
	}
	rl, err := lockprovider.NewRedlock(clients)
	if err != nil {
		b.Fatal(err)
	}
	for name, l := range map[string]lockprovider.Locker{
		"Mutex":          p.Mutex("bench"),
		"Semaphore":      p.Semaphore("bench", 4),
		"ReentrantMutex": p.ReentrantMutex("bench").Owner("o"),
		"RWMutex/Read":   p.RWMutex("bench-r").Reader(),
		"RWMutex/Write":  p.RWMutex("bench-w").Writer(),
		"Redlock3":       rl.Mutex("bench"),
	} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				lease, err := l.TryAcquire(ctx, 10*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				if err := lease.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Many goroutines contending for one mutex: TryAcquire throughput.
func BenchmarkMutexContended(b *testing.B) {
	s := redistest.Start(b)
	c := s.Client(b, &redis.Options{PoolSize: 64})
	p, _ := lockprovider.NewRedis(c)
	m := p.Mutex("contended")
	b.SetParallelism(32) // 32 goroutines per GOMAXPROCS: 64 on this 2-core machine
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if lease, err := m.TryAcquire(ctx, 10*time.Second); err == nil {
				_ = lease.Release(ctx)
			}
		}
	})
}
