package scheduler_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// A service embeds the scheduler: every replica runs this same code, and at
// each instant exactly one of them draws the lottery.
func Example() {
	srv, _ := miniredis.Run() // in production: the Redis all replicas share
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})

	drawn := make(chan jobs.Info, 1)
	lottery := scheduler.Job{
		Name:     "lottery",
		Schedule: "@every 1s", // e.g. "0 0 12 * * *" with Timezone "Asia/Shanghai"
		Handler: jobs.Func(func(ctx context.Context) error {
			info, _ := jobs.FromContext(ctx) // run id, fencing token, attempt, replica
			drawn <- info
			return nil
		}),
	}
	store, err := scheduler.NewRedisStore(rdb)
	if err != nil {
		panic(err)
	}
	s, err := scheduler.New(store, []scheduler.Job{lottery},
		scheduler.WithReplicaID("web-1"), scheduler.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()

	info := <-drawn
	stop()
	<-done
	fmt.Println("drawn by", info.ReplicaID, "on attempt", info.Attempt, "with a fencing token:", info.FencingToken > 0)
	// Output: drawn by web-1 on attempt 1 with a fencing token: true
}
