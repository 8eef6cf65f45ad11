// Command lottery is a service that runs as several replicas and must draw
// the lottery's 10 winners once a day, at noon in Shanghai.
//
// Without coordination every replica has the same timer, so every replica
// draws: three replicas, three sets of winners, thirty people told they won.
// With Solocron the replicas race for each run in Redis and exactly one of
// them draws.
//
//	lottery --redis redis://127.0.0.1:6379/0 --replica-id web-1
//	lottery --redis ... --schedule "*/5 * * * * *"   # every 5 seconds, for a demo
//	lottery --no-solocron --schedule "*/5 * * * * *" # each replica on its own
//
// Each draw prints one line on stdout:
//
//	web-1 drew [17 42 ...] for lottery@2026-11-22T04:00:00Z (fencing token 1795320000001234)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"syscall"
	_ "time/tzdata" // Asia/Shanghai even on a machine without a zone database

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

func main() {
	redisURL := flag.String("redis", "", "Redis URL shared by all replicas, redis://[user:password@]host:port/db (default $REDIS_URL)")
	replicaID := flag.String("replica-id", "", "this replica's name (default <hostname>-<pid>)")
	schedule := flag.String("schedule", "0 0 12 * * *", `when to draw: cron spec with seconds, or "@every 10s"`)
	timezone := flag.String("timezone", "Asia/Shanghai", "IANA time zone the schedule is read in")
	noSolocron := flag.Bool("no-solocron", false, "do not coordinate: every replica draws (to see the problem)")
	var logLevel slog.Level
	flag.TextVar(&logLevel, "log-level", slog.LevelWarn, "scheduler log level (debug, info, warn, error)")
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel})))

	var rdb *redis.Client
	if *noSolocron {
		// The same scheduler, but on a private in-memory store that no other
		// replica sees: each replica wins every race against nobody. This is
		// what a plain cron library or time.Ticker in every replica amounts to.
		private, err := miniredis.Run()
		if err != nil {
			fail(err)
		}
		defer private.Close()
		rdb = redis.NewClient(&redis.Options{Addr: private.Addr()})
	} else {
		if *redisURL == "" {
			*redisURL = os.Getenv("REDIS_URL")
		}
		if *redisURL == "" {
			fail(errors.New("no Redis: pass --redis redis://host:port/db or set REDIS_URL"))
		}
		opt, err := redis.ParseURL(*redisURL)
		if err != nil { // not printed: the URL may hold a password
			fail(errors.New("--redis is not a valid redis:// or rediss:// URL"))
		}
		// Calls must honour their context deadlines: a claim or a lease
		// renewal that hangs must not outlive the lease it is about.
		opt.ContextTimeoutEnabled = true
		rdb = redis.NewClient(opt)
	}
	defer rdb.Close()

	lottery := scheduler.Job{
		Name:     "lottery",
		Schedule: *schedule,
		Timezone: *timezone,
		Handler:  jobs.Func(draw),
	}
	opts := []scheduler.Option{}
	if *replicaID != "" {
		opts = append(opts, scheduler.WithReplicaID(*replicaID))
	}
	store, err := scheduler.NewRedisStore(rdb)
	if err != nil {
		fail(err)
	}
	s, err := scheduler.New(store, []scheduler.Job{lottery}, opts...)
	if err != nil {
		fail(err)
	}

	// Run until Ctrl-C or SIGTERM; a draw in progress is allowed to finish.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := s.Run(ctx); err != nil {
		fail(err)
	}
}

// draw is the job: it runs on exactly one replica per scheduled instant.
// Everything it needs to know about the run comes from its context.
func draw(ctx context.Context) error {
	info, _ := jobs.FromContext(ctx)
	// 10 distinct tickets out of 1000. A real service would now store the
	// winners, sending info.FencingToken along so that the store can refuse a
	// replica that lost its lease mid-draw (see examples/fencing), and notify
	// them using info.RunID as the idempotency key.
	winners := rand.Perm(1000)[:10]
	slices.Sort(winners)
	fmt.Printf("%s drew %v for %s (fencing token %d)\n", info.ReplicaID, winners, info.RunID, info.FencingToken)
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "lottery:", err)
	os.Exit(1)
}
