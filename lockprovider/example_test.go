package lockprovider_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/lockprovider"
)

// A replica takes the lock for a piece of work, keeps it alive while it
// works, and passes the fencing token to the store it writes to. A second
// replica trying at the same time gets ErrNotAcquired.
func Example() {
	srv, _ := miniredis.Run() // any Redis: standalone, Sentinel or Cluster
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()

	locks, err := lockprovider.NewRedis(rdb, lockprovider.WithPrefix("myapp"))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	lease, err := locks.Mutex("nightly-report").TryAcquire(ctx, 30*time.Second)
	if err != nil {
		panic(err)
	}
	work, stop := lockprovider.KeepAlive(ctx, lease) // renews every 10s
	defer stop()

	// Meanwhile, on another replica:
	_, err = locks.Mutex("nightly-report").TryAcquire(ctx, 30*time.Second)
	fmt.Println("second replica:", err)

	// The work watches work.Done(); context.Cause(work) tells a lost lease
	// (errors.Is(cause, lockprovider.ErrLeaseLost)) from a shutdown.
	fmt.Println("fencing token issued:", lease.FencingToken() > 0, "lease alive:", work.Err() == nil)

	stop()
	if err := lease.Release(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, lockprovider.ErrLeaseLost) {
		panic(err)
	}
	// Output:
	// second replica: lockprovider: not acquired
	// fencing token issued: true lease alive: true
}

// A semaphore lets at most N holders run at once across all replicas.
func ExampleRedis_Semaphore() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	locks, _ := lockprovider.NewRedis(rdb)

	exports := locks.Semaphore("exports", 2)
	ctx := context.Background()
	for i := range 3 {
		_, err := exports.TryAcquire(ctx, time.Minute)
		fmt.Printf("holder %d: %v\n", i+1, err)
	}
	// Output:
	// holder 1: <nil>
	// holder 2: <nil>
	// holder 3: lockprovider: not acquired
}
