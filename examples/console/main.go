// Command console is a service that embeds Solocron and mounts its operator
// console under a path of its own, /ops/solocron/, next to the service's
// routes, behind a token. The store here is in-process (miniredis), so the
// example needs nothing else running; a real service passes its scheduler a
// client to the Redis all its replicas share.
//
//	CONSOLE_TOKEN=let-me-in go run ./examples/console --listen 127.0.0.1:8080
//	open http://127.0.0.1:8080/ops/solocron/
package main

import (
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

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "HTTP address")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *listen)
	if err == nil {
		fmt.Printf("console: http://%s/ops/solocron/\n", ln.Addr())
		err = run(ctx, ln, os.Getenv("CONSOLE_TOKEN"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "console example:", err)
		os.Exit(1)
	}
}

// run serves the service and its console on ln until ctx is done. An empty
// token leaves the console open (fine on loopback only).
func run(ctx context.Context, ln net.Listener, token string) error {
	store, err := miniredis.Run()
	if err != nil {
		return err
	}
	defer store.Close()
	rdb := redis.NewClient(&redis.Options{Addr: store.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()

	table := []scheduler.Job{
		{Name: "cleanup", Schedule: "@every 10s", Handler: jobs.Func(func(ctx context.Context) error {
			fmt.Fprintln(jobs.Output(ctx), "removed 3 expired sessions")
			return nil
		})},
		{Name: "invoice-run", Schedule: "0 6 * * 1-5", Timezone: "Europe/Berlin", Handler: jobs.Func(func(ctx context.Context) error {
			return errors.New("payment provider answered 503")
		})},
	}
	coord, err := scheduler.NewRedisStore(rdb)
	if err != nil {
		return err
	}
	sched, err := scheduler.New(coord, table, scheduler.WithReplicaID("example-1"))
	if err != nil {
		return err
	}

	// --- The console: one http.Handler over the cluster's controls. ---
	// Its reads go through a Redis client of their own, so that a busy
	// console never delays the scheduler's claims and renewals.
	opsRDB := redis.NewClient(&redis.Options{Addr: store.Addr(), ContextTimeoutEnabled: true, PoolSize: 4, ClientName: "example-console"})
	defer opsRDB.Close()
	opsStore, err := scheduler.NewRedisStore(opsRDB)
	if err != nil {
		return err
	}
	ctl := opsStore.Control()
	ops, err := console.New(console.Config{
		Control: ctl,
		Jobs:    sched.Jobs, // the table in force, reloads included
		Prefix:  "/ops/solocron",
		Token:   token,
		Replica: sched.ReplicaID(),
		// The Host check the daemon makes (DNS rebinding): loopback names
		// and IP addresses only here; list the names the service is
		// reached by.
		AllowedHosts: []string{"localhost"},
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/ops/solocron/", ops) // the handler expects the full path: no StripPrefix
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "the service's own pages; the scheduler's console is at /ops/solocron/")
	})

	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 2)
	go func() { errc <- sched.Run(ctx) }()
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return <-errc // the scheduler's clean stop
}
