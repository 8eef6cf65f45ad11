package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/bench/internal/harness"
	"github.com/solocron/solocron/lockprovider"
)

// BenchmarkLockCycle is an acquire+release of lockprovider's Mutex and of
// bsm/redislock, each library alone, on 1 and 64 goroutines (a key each), as
// the locks scenario runs them. Beside the wall time it reports the client's
// CPU (this process: user + system) and Redis' CPU per cycle, which a noisy
// machine disturbs far less than the wall time; profile one with
// -test.cpuprofile and -test.bench 'LockCycle/g1/bsm'.
func BenchmarkLockCycle(b *testing.B) {
	srv, err := harness.Start()
	if err != nil {
		b.Skip(err)
	}
	defer srv.Stop()
	for _, g := range []int{1, 64} {
		c := srv.Client(g + 4)
		p, _ := lockprovider.NewRedis(c)
		for _, l := range []locker{lpMutex{p}, bsm{redislock.New(c)}} {
			b.Run(fmt.Sprintf("g%d/%s", g, l.name()), func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				r0, _ := srv.Snapshot(ctx, c)
				u0 := scriptUsec(ctx, c)
				c0 := harness.ProcessCPU()
				if g == 1 {
					for b.Loop() {
						if err := l.cycle(ctx, "cycle"); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					b.SetParallelism((g + 1) / 2) // per GOMAXPROCS: 64 on 2 cores
					var next atomicInt
					b.RunParallel(func(pb *testing.PB) {
						key := fmt.Sprintf("cycle-%d", next.add())
						for pb.Next() {
							if err := l.cycle(ctx, key); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				c1 := harness.ProcessCPU()
				u1 := scriptUsec(ctx, c)
				r1, _ := srv.Snapshot(ctx, c)
				b.ReportMetric(float64(u1-u0)*1000/float64(b.N), "redis-script-ns/op")
				b.ReportMetric(float64(c1-c0)/float64(b.N), "client-cpu-ns/op")
				b.ReportMetric((r1.CPU-r0.CPU)*float64(time.Second)/float64(b.N), "redis-cpu-ns/op")
			})
		}
		c.Close()
	}
}

type atomicInt struct{ n atomic.Int64 }

func (a *atomicInt) add() int64 { return a.n.Add(1) }

// scriptUsec is the time Redis has spent in EVALSHA calls, scripts' own
// commands included (INFO commandstats), in microseconds.
func scriptUsec(ctx context.Context, c *redis.Client) int64 {
	info, _ := c.Info(ctx, "commandstats").Result()
	for line := range strings.SplitSeq(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:"); ok {
			_, rest, _ = strings.Cut(rest, "usec=")
			rest, _, _ = strings.Cut(rest, ",")
			n, _ := strconv.ParseInt(rest, 10, 64)
			return n
		}
	}
	return 0
}
