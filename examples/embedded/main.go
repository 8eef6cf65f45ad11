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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
	"github.com/solocron/solocron/store"
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
	// The store the table's store section describes — standalone, Sentinel,
	// Cluster or Redlock, TLS, min_replicas_ack — opened as the daemon opens
	// it, with clients of its own even to the same Redis server as the
	// app's: claims and lease renewals must never queue in a connection
	// pool behind the app's traffic. A renewal stuck behind a burst of
	// requests misses its deadline, the lease is lost and the run cancelled.
	st, err := store.OpenFile(table)
	if err != nil {
		return err
	}
	defer st.Close()
	var opts []scheduler.Option
	if id := cmp.Or(replicaID, table.ReplicaID); id != "" {
		opts = append(opts, scheduler.WithReplicaID(id))
	}
	sched, err := st.NewScheduler(table.Jobs, opts...) // with the table's max_clock_skew
	if err != nil {
		return err
	}
	// --- end of Solocron setup ---

	mux := http.NewServeMux()
	inv.Routes(mux)
	// Readiness is the web service's: can this replica serve requests? It
	// is NOT tied to the scheduler's store. When that Redis is down the
	// scheduler cannot claim runs — on every replica alike — while the API
	// may still serve: failing /readyz would take every replica out of the
	// load balancer, turning a missed reindex into a full outage, and fix
	// nothing (another replica has the same Redis). So the scheduler's
	// health is a signal of its own, for monitoring and alerts (and the
	// scheduler's metrics: solocron_runs_total{outcome="missed"}...).
	var draining atomic.Bool
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("GET /healthz/scheduler", func(w http.ResponseWriter, r *http.Request) {
		if err := sched.Ready(); err != nil { // its store has not answered lately
			http.Error(w, "scheduler: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "scheduler ok")
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
		draining.Store(true)
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
