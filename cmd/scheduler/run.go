package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/admin"
	"github.com/solocron/solocron/internal/storeconn"
	"github.com/solocron/solocron/scheduler"
)

// Shutdown budgets for what runs after the scheduler has drained.
const (
	adminShutdownTimeout     = 5 * time.Second
	telemetryShutdownTimeout = 5 * time.Second
	evictionCheckPatience    = 30 * time.Second
)

func runFlags(fs *flag.FlagSet, c *cli) func([]string) int {
	replicaID := fs.String("replica-id", "", "name of this replica (default: env SOLOCRON_REPLICA_ID, the file's replica_id, or <hostname>-<pid>)")
	adminListen := fs.String("admin-listen", "", "serve the admin API on `ADDR` (host:port), overriding admin.listen; an empty value turns it off")
	grace := fs.Duration("shutdown-grace", 30*time.Second, "on SIGINT/SIGTERM, how long runs in flight may go on before they are cancelled (recorded interrupted); 0 cancels them at once")
	return func(pos []string) int {
		if len(pos) > 0 {
			return c.usageError("run", "unexpected arguments %q (name the file with --config FILE)", pos)
		}
		if *grace < 0 {
			return c.usageError("run", "--shutdown-grace must not be negative")
		}
		listenSet := false
		fs.Visit(func(f *flag.Flag) { listenSet = listenSet || f.Name == "admin-listen" })
		o := runOptions{replicaID: *replicaID, grace: *grace}
		if listenSet {
			o.adminListen = adminListen
		}
		return c.run(o)
	}
}

type runOptions struct {
	replicaID   string
	adminListen *string // nil: the file's admin.listen
	grace       time.Duration
}

// run is the daemon: it loads the table, opens the store, starts the
// scheduler (and the admin API and console, if they listen), and runs until
// a signal drains it; the exit code says how it ended.
func (c *cli) run(o runOptions) int {
	log := c.log
	// Signals are caught from the start: SIGHUP's default action would
	// kill a replica still starting up, and a SIGTERM that arrives then
	// must still drain (it is handled once the scheduler runs).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	f, err := config.Load(c.config)
	if err != nil {
		for _, p := range configProblems(c.config, err) {
			log.Error("invalid job table", "problem", p)
		}
		return exitUsage
	}
	c.learnSecrets(f)

	replica := firstNonEmpty(o.replicaID, os.Getenv("SOLOCRON_REPLICA_ID"), f.ReplicaID, defaultReplicaID())
	if err := config.CheckReplicaID(replica); err != nil {
		log.Error("invalid replica id (--replica-id, SOLOCRON_REPLICA_ID or replica_id)", "err", err)
		return exitUsage
	}
	listen, ok := adminListen(f, o, log)
	if !ok {
		return exitUsage
	}

	conn, err := storeconn.Open(storeOf(f), storeconn.WithLogger(log))
	if err != nil {
		log.Error("cannot use the store", "err", err)
		if f.Store.URL == "" {
			return exitFailure // the data directory: locked, unreadable...
		}
		return exitUsage
	}
	defer conn.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tel, err := setupTelemetry(ctx, replica, listen != "", os.Getenv, log)
	if err != nil {
		log.Error("telemetry setup failed", "err", err)
		return exitUsage
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), telemetryShutdownTimeout)
		defer scancel()
		if err := tel.Shutdown(sctx); err != nil {
			log.Warn("telemetry not fully flushed", "err", err)
		}
	}()

	// The store section's own options (key prefix, max clock skew,
	// min_replicas_ack) come from the connection; redlock mode gets its
	// engine there too.
	sched, err := conn.NewScheduler(f.Jobs,
		scheduler.WithReplicaID(replica),
		scheduler.WithVersion(versionString()),
		scheduler.WithLogger(log),
		scheduler.WithTracerProvider(tel.tracers),
		scheduler.WithMeterProvider(tel.meters),
		scheduler.WithPropagator(tel.propagator),
		scheduler.WithShutdownGrace(o.grace),
		scheduler.WithVersion(versionString()),
		scheduler.WithRedactor(c.redact.String),
		scheduler.WithNotifications(f.Notifications...),
	)
	if err != nil {
		log.Error("cannot start the scheduler", "err", err)
		return exitUsage
	}

	announce(ctx, f, conn, replica, listen, tel, o, log)

	var draining atomic.Bool
	var srv *http.Server
	var adminCtl *scheduler.Control // follows the table's pools on reload
	if listen != "" {
		var code int
		var cleanup func()
		srv, adminCtl, cleanup, code = c.serveAdmin(f, conn, sched, replica, listen, tel, &draining, log)
		defer cleanup()
		if code != exitOK {
			return code
		}
	}

	done := make(chan error, 1)
	go func() { done <- sched.Run(ctx) }()

	runErr := c.waitForEnd(sigs, done, f, sched, adminCtl, &draining, cancel, o.grace, log)
	if srv != nil {
		sctx, scancel := context.WithTimeout(context.Background(), adminShutdownTimeout)
		if err := srv.Shutdown(sctx); err != nil {
			log.Warn("admin API did not stop cleanly", "err", err)
		}
		scancel()
	}
	if runErr != nil {
		log.Error("scheduler failed", "err", runErr)
		return exitFailure
	}
	log.Info("solocron stopped")
	return exitOK
}

// adminListen is where the admin API listens ("" for nowhere): the
// --admin-listen flag, else the table's admin.listen. false: an address
// that is not host:port, or a non-loopback one left open without a token or
// client certificates (logged).
func adminListen(f *config.File, o runOptions, log *slog.Logger) (listen string, ok bool) {
	listen = f.Admin.Listen
	if o.adminListen != nil {
		listen = *o.adminListen
	}
	if listen != "" {
		if _, port, err := net.SplitHostPort(listen); err != nil || port == "" {
			log.Error("bad admin listen address: want host:port", "addr", listen)
			return "", false
		}
		if f.Admin.Token == "" && !adminMTLS(f) && !isLoopback(listen) {
			log.Error("refusing to start: the admin API would listen on a non-loopback address without a token; set admin.token (e.g. token: ${SOLOCRON_ADMIN_TOKEN}), require client certificates (admin.tls.client_ca_file), or listen on 127.0.0.1",
				"admin_listen", listen)
			return "", false
		}
		if f.Admin.Token == "" && !adminMTLS(f) {
			// Loopback is not private on a shared host: any local user
			// can connect, and the API runs this process's jobs. Where
			// the system says who connected, only this user (and root)
			// may (owner.go).
			if canTellPeers() {
				log.Info("the admin API has no token: it answers only this user's connections (and root's); other local users get 403 but for /healthz, /readyz and /metrics. Set admin.token to let them in",
					"admin_listen", listen, "uid", os.Getuid())
			} else {
				log.Warn("the admin API has no token: every user of this machine can use it (read run records and job output; trigger, pause, cancel and retry jobs, which run as this process's user, unless admin.read_only); set admin.token where the machine has other users",
					"admin_listen", listen)
			}
		}
	}
	return listen, true
}

// announce logs the replica's start and what its store is; with an
// embedded store, how the other commands reach it; with Redis, it watches
// the servers' eviction policy.
func announce(ctx context.Context, f *config.File, conn *storeconn.Conn, replica, listen string, tel *telemetry, o runOptions, log *slog.Logger) {
	log.Info("solocron starting", "version", versionString(), "replica", replica, "config", f.Path,
		"jobs", len(f.Jobs), "store", storeOf(f), "where", conn.Where, "admin_listen", listen,
		"admin_token_set", f.Admin.Token != "", "admin_tls", f.Admin.TLS != nil, "tracing", tel.tracing, "shutdown_grace", o.grace)
	if conn.Embedded != nil {
		hint := "the other commands (status, history, trigger, pause, resume, backfill) reach it through this daemon's admin API"
		if listen == "" {
			hint = "set admin.listen (or --admin-listen) so that the other commands (status, history, trigger, pause, resume, backfill) can reach it"
		}
		log.Info("embedded store: the table names no store.url, so this daemon is a single-node scheduler; its state is kept in its data directory, locked for this process. "+
			"Run ONE replica per data directory: replicas on other stores would not see this one. For several replicas, set store.url to a Redis they share. "+hint,
			"data_dir", conn.Embedded.Dir(), "fresh", conn.Embedded.Fresh())
		if lost := conn.Embedded.Lost(); lost != "" {
			log.Error("embedded store: the newest state on disk is damaged or missing; loaded the best one left and treating it as a data loss: runs scheduled before now are not started again (recorded missed), fencing tokens keep rising",
				"data_dir", conn.Embedded.Dir(), "why", lost)
		}
	} else {
		servers := conn.Masters // redlock: every master matters
		if conn.Client != nil {
			servers = []redis.UniversalClient{conn.Client}
		}
		go checkEviction(ctx, servers, log)
	}
}

// serveAdmin serves the admin API and the console on listen, reading
// through a store client of their own; adminCtl is their Control, which
// follows the table's pools on reload. cleanup closes that client, once the
// server has stopped. A code other than exitOK: they could not be served
// (logged).
func (c *cli) serveAdmin(f *config.File, conn *storeconn.Conn, sched *scheduler.Scheduler, replica, listen string, tel *telemetry, draining *atomic.Bool, log *slog.Logger) (srv *http.Server, adminCtl *scheduler.Control, cleanup func(), code int) {
	cleanup = func() {}
	var err error
	var tlsConf *tls.Config
	if t := f.Admin.TLS; t != nil {
		if tlsConf, err = admin.TLSConfig(t.CertFile, t.KeyFile, t.ClientCAFile); err != nil {
			log.Error("cannot serve the admin API", "err", err)
			return nil, nil, cleanup, exitUsage
		}
	}
	// The API reads through a client of its own (own pool, named
	// solocron-admin): requests never take a connection from the
	// claims and renewals.
	adm, err := conn.OpenAdmin()
	if err != nil {
		log.Error("cannot open the admin API's store client", "err", err)
		return nil, nil, cleanup, exitUsage
	}
	cleanup = func() { adm.Close() }
	actl, err := adm.NewControl()
	if err != nil {
		log.Error("cannot open the admin API's store client", "err", err)
		return nil, nil, cleanup, exitUsage
	}
	actl.UseTable(f.Jobs)
	l, err := net.Listen("tcp", listen)
	if err != nil {
		log.Error("cannot serve the admin API", "addr", listen, "err", err)
		return nil, nil, cleanup, exitFailure
	}
	if tlsConf != nil {
		l = tls.NewListener(l, tlsConf)
	}
	// The console reads through the admin client too, and shows
	// nothing the redactor would mask.
	con, err := console.New(console.Config{
		Control: actl, Jobs: sched.Jobs, Token: f.Admin.Token, ReadOnly: f.Admin.ReadOnly,
		TraceURL: f.Admin.TraceURL, Redact: c.redact.String, Replica: replica, Logger: log,
	})
	if err != nil {
		log.Error("cannot serve the console", "err", err)
		return nil, nil, cleanup, exitUsage
	}
	h := admin.NewHandler(admin.Config{
		Jobs: sched.Jobs, Control: actl, ReplicaID: replica, Token: f.Admin.Token,
		Listen: listen, AllowedHosts: f.Admin.AllowedHosts, RateLimit: f.Admin.RateLimit, RateBurst: f.Admin.RateBurst,
		Redactor: c.redact, Metrics: tel.metrics, Logger: log, ReadOnly: f.Admin.ReadOnly,
		// The console's session cookie opens /api/v1 as the token does;
		// the console sits behind the same Host check and rate limit.
		Authenticate: con.Authenticate, Console: con,
		Ready: func() error {
			if draining.Load() {
				return errors.New("shutting down")
			}
			return sched.Ready()
		},
	})
	srv = admin.NewServer(h, log)
	if f.Admin.Token == "" && !adminMTLS(f) && canTellPeers() {
		// No token: loopback only (adminListen), and this user's alone.
		ownerOnly(srv, log)
	}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin API stopped", "err", err)
		}
	}()
	scheme := "http"
	if tlsConf != nil {
		scheme = "https"
	}
	// None is an empty list, [] in JSON as in text: a nil slice is null.
	allowed := append([]string{}, f.Admin.AllowedHosts...)
	log.Info("admin API and console listening", "addr", l.Addr().String(), "console", scheme+"://"+l.Addr().String()+"/",
		"api_needs_token", f.Admin.Token != "", "tls", tlsConf != nil, "client_certificates", tlsConf != nil && tlsConf.ClientCAs != nil,
		"allowed_hosts", allowed, "rate_limit", f.Admin.RateLimit, "read_only", f.Admin.ReadOnly)
	return srv, actl, cleanup, exitOK
}

// waitForEnd handles signals until the scheduler's Run returns: SIGHUP
// reloads the table, the first SIGINT or SIGTERM drains (cancel), a second
// one is only logged. It returns Run's error.
func (c *cli) waitForEnd(sigs <-chan os.Signal, done <-chan error, f *config.File, sched *scheduler.Scheduler, adminCtl *scheduler.Control, draining *atomic.Bool, cancel context.CancelFunc, grace time.Duration, log *slog.Logger) error {
	var runErr error
wait:
	for {
		select {
		case s := <-sigs:
			switch {
			case s == syscall.SIGHUP:
				reload(c.config, f, sched, adminCtl, log)
			case !draining.Load():
				draining.Store(true)
				log.Info("signal received: shutting down", "signal", s.String(), "grace", grace)
				cancel()
			default:
				log.Warn("already shutting down: runs in flight get the rest of the grace period (SIGKILL stops at once, killing their commands too)", "signal", s.String())
			}
		case runErr = <-done:
			break wait
		}
	}
	return runErr
}

// storeOf is the table's store section with the embedded store's data
// directory defaulted (storeconn.DefaultDataDir). The table itself keeps
// what it says, so that a reload compares like with like.
func storeOf(f *config.File) config.Store {
	s := f.Store
	if s.URL == "" && s.Mode == config.DefaultMode && s.DataDir == "" {
		s.DataDir = storeconn.DefaultDataDir(f.Path, os.Getenv)
	}
	return s
}

// reload reads the table file again and, if it is good, puts its jobs in
// force. A bad file changes nothing. Sections other than jobs and defaults
// are fixed at start; changes there are reported and wait for a restart.
func reload(path string, started *config.File, sched *scheduler.Scheduler, ctl *scheduler.Control, log *slog.Logger) {
	f, err := config.Load(path)
	if err != nil {
		problems := configProblems(path, err)
		for _, p := range problems {
			log.Error("reload: invalid job table", "problem", p)
		}
		log.Error("reload failed: the table in force is unchanged", "file", path, "problems", len(problems))
		return
	}
	var restart []string
	if !reflect.DeepEqual(f.Store, started.Store) {
		restart = append(restart, "store")
	}
	if !reflect.DeepEqual(f.Admin, started.Admin) {
		restart = append(restart, "admin")
	}
	if f.ReplicaID != started.ReplicaID {
		restart = append(restart, "replica_id")
	}
	if !reflect.DeepEqual(f.Notifications, started.Notifications) {
		// A job's notify: may change on reload, among the targets the
		// replica started with.
		restart = append(restart, "notifications")
	}
	if len(restart) > 0 {
		// Names only: the values may hold secrets.
		log.Warn("reload: these sections changed but take effect only after a restart; the running replica keeps the old ones", "sections", restart)
	}
	before := names(sched.Jobs())
	if err := sched.Reload(f.Jobs); err != nil { // config validated it; should not happen
		log.Error("reload failed: the table in force is unchanged", "file", path, "err", err)
		return
	}
	if ctl != nil {
		ctl.UseTable(f.Jobs)
	}
	after := names(f.Jobs)
	log.Info("table reloaded", "file", path, "jobs", len(f.Jobs),
		"added", difference(after, before), "removed", difference(before, after))
}

func names(tab []scheduler.Job) []string {
	out := make([]string, len(tab))
	for i, j := range tab {
		out[i] = j.Name
	}
	return out
}

// difference lists the names of a that are not in b.
func difference(a, b []string) []string {
	out := []string{}
	for _, n := range a {
		if !slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

// adminMTLS reports whether the admin API requires client certificates,
// which authenticate its clients as a token does.
func adminMTLS(f *config.File) bool { return f.Admin.TLS != nil && f.Admin.TLS.ClientCAFile != "" }

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func defaultReplicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "replica"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

// checkEviction warns when Redis may evict keys under memory pressure. Every
// key Solocron keeps has a TTL, so the volatile-* policies can evict them as
// surely as allkeys-*: a run record evicted early lets a late replica start
// the run again, a slot evicted lets two runs hold it. Only noeviction is
// safe. The check waits for the store to answer, for a while.
func checkEviction(ctx context.Context, servers []redis.UniversalClient, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, evictionCheckPatience)
	defer cancel()
	couldNot := func(err error) {
		log.Warn("could not check Redis maxmemory-policy (CONFIG GET refused, or the store did not answer); make sure it is noeviction, or a run could start twice", "err", err)
	}
	for {
		var policies []string
		var err error
		for _, c := range servers {
			var ps []string
			if ps, err = evictionPolicies(ctx, c); err != nil {
				break
			}
			policies = append(policies, ps...)
		}
		if err == nil {
			for _, p := range policies {
				if p != "noeviction" {
					log.Warn("Redis may EVICT Solocron's keys under memory pressure: a run could then start twice, or be lost. Set maxmemory-policy noeviction on the store (and give it enough memory).",
						"maxmemory_policy", p)
					return
				}
			}
			log.Debug("Redis maxmemory-policy is noeviction")
			return
		}
		if isCommandRefused(err) {
			couldNot(err)
			return
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				couldNot(err)
			} // else shutting down
			return
		case <-time.After(time.Second): // the store may come up
		}
	}
}

func evictionPolicies(ctx context.Context, client redis.UniversalClient) ([]string, error) {
	get := func(ctx context.Context, c redis.Cmdable) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		m, err := c.ConfigGet(cctx, "maxmemory-policy").Result()
		if err != nil {
			return "", err
		}
		p, ok := m["maxmemory-policy"]
		if !ok {
			return "", errors.New("CONFIG GET maxmemory-policy answered nothing")
		}
		return p, nil
	}
	if cc, ok := client.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		var out []string
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			p, err := get(ctx, c)
			if err == nil {
				mu.Lock() // ForEachMaster calls concurrently
				out = append(out, p)
				mu.Unlock()
			}
			return err
		})
		return out, err
	}
	p, err := get(ctx, client)
	if err != nil {
		return nil, err
	}
	return []string{p}, nil
}

// isCommandRefused tells a Redis error reply (CONFIG renamed or disabled,
// ACL denied) from a network failure, which is worth retrying.
func isCommandRefused(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, context.DeadlineExceeded)
}
