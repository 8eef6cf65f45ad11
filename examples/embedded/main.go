// Command embedded is an inventory service that embeds Solocron. Its HTTP API
// serves stock levels and a low-stock index; the index is rebuilt by a Go
// function, "reindex", that the job table (solocron.yaml) schedules every 30
// seconds. Run as many replicas as you like: each reindex runs on one.
//
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/embedded --listen 127.0.0.1:8080
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

func main() {
	configPath := flag.String("config", "examples/embedded/solocron.yaml", "the job table")
	listen := flag.String("listen", "127.0.0.1:8080", "HTTP address")
	replicaID := flag.String("replica-id", "", "this replica's name (default <hostname>-<pid>)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *listen)
	if err == nil {
		err = run(ctx, *configPath, *replicaID, ln)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "inventory:", err)
		os.Exit(1)
	}
}

// run serves HTTP on ln and runs the job table at configPath until ctx is done.
func run(ctx context.Context, configPath, replicaID string, ln net.Listener) error {
	// The application's own Redis client: stock levels, and in a real service
	// sessions, caches, queues...
	appOpt, err := redis.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		return errors.New("REDIS_URL must be a redis:// URL")
	}
	inv := &Inventory{rdb: redis.NewClient(appOpt)}
	defer inv.rdb.Close()

	// --- Solocron: load the table, connect, build the scheduler. ---
	table, err := config.Load(configPath, config.WithFuncs(map[string]jobs.Job{
		"reindex": jobs.Func(inv.Reindex), // what "func: reindex" means
	}))
	if err != nil {
		return err // every problem in the file, one per line, with line and column
	}
	// A client of its own for the scheduler, even to the same Redis server as
	// the app's: claims and lease renewals must never queue in a connection
	// pool behind the app's traffic. A renewal stuck behind a burst of
	// requests misses its deadline, the lease is lost and the run cancelled.
	coordOpt, err := redis.ParseURL(table.Store.URL)
	if err != nil {
		return errors.New("store.url must be a redis:// URL")
	}
	coordOpt.ContextTimeoutEnabled = true // calls honour their deadlines
	coord := redis.NewClient(coordOpt)
	defer coord.Close()
	store, err := scheduler.NewRedisStore(coord, scheduler.WithKeyPrefix(table.Store.KeyPrefix))
	if err != nil {
		return err
	}
	opts := []scheduler.Option{scheduler.WithMaxClockSkew(table.Store.MaxClockSkew)}
	if id := cmp.Or(replicaID, table.ReplicaID); id != "" {
		opts = append(opts, scheduler.WithReplicaID(id))
	}
	sched, err := scheduler.New(store, table.Jobs, opts...)
	if err != nil {
		return err
	}
	// --- end of Solocron setup ---

	mux := http.NewServeMux()
	inv.Routes(mux)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := sched.Ready(); err != nil { // Redis has not answered lately
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}

	// The scheduler and the HTTP server run side by side until SIGTERM.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	schedDone := make(chan error, 1)
	go func() { schedDone <- sched.Run(ctx) }()
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		// Stop taking requests and finish those in flight, while the
		// scheduler stops claiming and lets a running reindex finish.
		shutdownCtx, cancelShutdown := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancelShutdown()
		err = srv.Shutdown(shutdownCtx)
	case err = <-httpDone: // the server failed: stop the scheduler too
		cancel()
	}
	return errors.Join(err, <-schedDone)
}
