package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/solocron/solocron/lockprovider"
	"github.com/solocron/solocron/scheduler/internal/store"
)

var (
	// ErrShutdown is the cause with which runs still in flight when the
	// shutdown grace period ends are cancelled. Their outcome is interrupted.
	ErrShutdown = errors.New("scheduler: replica shutting down")
	// ErrTimeout is the cause with which a run that exceeds its job's timeout
	// is cancelled. Its outcome is timed_out.
	ErrTimeout = errors.New("scheduler: run timed out")
	// ErrReplaced is the cause with which a run is cancelled when a newer run
	// of its job replaced it (overlap: replace). It wraps
	// lockprovider.ErrLeaseLost: the run no longer holds its slot.
	ErrReplaced = fmt.Errorf("%w: replaced by a newer run", lockprovider.ErrLeaseLost)
	// ErrCancelled is the cause with which a run is cancelled when an
	// operator asked it to stop (Control.Cancel). Its outcome is cancelled.
	// It wraps lockprovider.ErrLeaseLost, as ErrReplaced does: the lease's
	// watchdog stops there, and a job that checks for a lost lease stops.
	ErrCancelled = fmt.Errorf("%w: cancelled by an operator", lockprovider.ErrLeaseLost)
)

// Scheduler runs one replica's share of a job table: at each scheduled
// instant it races the other replicas for the run in Redis and runs it if it
// wins. It is safe for concurrent use.
type Scheduler struct {
	cfg   config
	store store.Backend
	tel   *telemetry
	log   *slog.Logger
	ctl   *Control

	mu    sync.Mutex
	tab   []*jobState
	gen   int
	memos map[string]*memo

	reloaded chan struct{}
	started  atomic.Bool
	// lostState is set when a claim or heartbeat finds Redis lost a job's
	// state: the notification subscriptions went with it, and the
	// notifier writes them again at its next poll (notify.go).
	lostState atomic.Bool
	runStart  time.Time // when Run began: instants due before it are an outage's (misses.go)
	// stopSince is when the replica began stopping (unix ns; 0: running):
	// what it still asks Redis then is bounded by the shutdown grace
	// (stoppingUntil).
	stopSince atomic.Int64

	loops      sync.WaitGroup // dispatcher, heartbeat, claims, waiters, miss recorder
	runs       sync.WaitGroup // started runs
	runCtx     context.Context
	cancelRuns context.CancelCauseFunc
	closing    chan<- closeReq // to the closer, while Run runs
	renewals   chan renewCall  // to the renewer, while Run runs
	running    atomic.Int64    // runs executing now, for the replica registry
	manual     sync.Map        // manual run ids being claimed by this replica
	waiters    waiters         // runs queued for a slot, per job (wait.go)
	owners     owners          // owner tokens for this replica's claims
	gates      startGates      // runs claimed ahead wait here for their instant
	batchRTT   atomic.Int64    // round trip of recent big claim batches (ns): see ahead

	missedMu sync.Mutex
	missed   []claimReq

	lastSync   atomic.Int64 // unix nanoseconds of the last answered heartbeat
	redisClock redisClock   // Redis' clock, as of the last heartbeat
	clockBad   atomic.Bool  // this replica's clock is off from Redis' beyond the skew
	syncs      int          // heartbeats so far (touched by the heartbeat goroutine only)
	// changedAt is where the last heartbeat's read of the published
	// statistics changes ended (hints.changedAt; 0: look back instead).
	changedAt  int64        // touched by the heartbeat goroutine only
	downSince  atomic.Int64 // unix nanoseconds since Redis stopped answering; 0 when up
	lastDownAt atomic.Int64 // when the last "store unreachable" was logged

	// changed: jobs whose run statistics this replica changed, published
	// at its next heartbeat (see sync), with their memo when it holds the
	// statistics as changed (nil: the others read them).
	changedMu sync.Mutex
	changed   map[string]*memo
	gauges    metric.Registration // the job gauges' callback; see registerJobGauges
}

// New returns a scheduler for one replica, coordinating through store
// (NewRedisStore, NewRedlockStore).
//
// Options and defaults: WithReplicaID("<hostname>-<pid>"),
// WithMaxClockSkew(2s), WithClock(system clock),
// WithLogger(slog.Default()), WithTracerProvider(global),
// WithMeterProvider(global), WithPropagator(global), WithShutdownGrace(30s),
// WithSyncInterval(1s), WithVersion(the build
// info's, for the replica registry: see Control.Replicas),
// WithNotifications(none), WithNotifyRetry(1s, 1h), WithNotifyQueueLimit(1000),
// WithNotifyClient(no redirects).
func New(store *Store, jobs []Job, opts ...Option) (*Scheduler, error) {
	if store == nil {
		return nil, errors.New("scheduler: nil store")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	b, err := store.open(cfg, true)
	if err != nil {
		return nil, err
	}
	return newScheduler(b, cfg, jobs)
}

func newScheduler(st store.Backend, cfg config, jobs []Job) (*Scheduler, error) {
	tel, err := newTelemetry(cfg.tracer, cfg.meter)
	if err != nil {
		return nil, fmt.Errorf("scheduler: telemetry: %w", err)
	}
	s := &Scheduler{
		cfg:      cfg,
		store:    st,
		tel:      tel,
		log:      cfg.logger.With("replica", cfg.replicaID),
		memos:    map[string]*memo{},
		owners:   owners{prefix: store.NewEpoch() + store.NewEpoch()},
		reloaded: make(chan struct{}, 1),
		renewals: make(chan renewCall, 4*store.MaxBatch),
	}
	s.ctl = &Control{store: s.store}
	if err := s.Reload(jobs); err != nil {
		return nil, err
	}
	if err := s.registerJobGauges(); err != nil {
		return nil, fmt.Errorf("scheduler: telemetry: %w", err)
	}
	return s, nil
}

// ReplicaID is the name of this replica.
func (s *Scheduler) ReplicaID() string { return s.cfg.replicaID }

// Control returns the cluster-wide controls (pause, trigger, status...) for
// this scheduler's store, as Store.Control does.
func (s *Scheduler) Control() *Control { return s.ctl }

// Jobs returns the table in force, with defaults applied.
func (s *Scheduler) Jobs() []Job {
	tab, _ := s.table()
	out := make([]Job, len(tab))
	for i, j := range tab {
		out[i] = j.Job
	}
	return out
}

// Reload validates jobs and, if they are valid, makes them the table in
// force at once; if not, it returns every problem and changes nothing. Runs
// in flight continue under the table they started with.
func (s *Scheduler) Reload(jobs []Job) error {
	parsed, err := checkTable(jobs)
	if err != nil {
		return err
	}
	mutexOnly := s.store.Caps().MutexOnly
	if err := s.cfg.checkNotify(jobs, mutexOnly); err != nil {
		return err
	}
	if mutexOnly {
		if err := ValidateRedlockTable(jobs); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store.PlacePools(poolJobs(jobs))
	tab := make([]*jobState, len(jobs))
	for i, spec := range jobs {
		spec = spec.withDefaults()
		m := s.memos[spec.Name]
		if m == nil {
			m = &memo{}
			s.memos[spec.Name] = m
			s.tel.zero(spec.Name, m)
		}
		tab[i] = parsed[i].jobState(spec, s.store.MetaKey(spec.Name), m, s.cfg.skew)
	}
	s.tab = tab
	s.gen++
	select {
	case s.reloaded <- struct{}{}:
	default:
	}
	return nil
}

func (s *Scheduler) table() ([]*jobState, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tab, s.gen
}

func (s *Scheduler) now() time.Time { return s.cfg.clock.Now() }

// Ready reports whether the replica can coordinate: its last heartbeat was
// answered by Redis recently.
func (s *Scheduler) Ready() error {
	last := s.lastSync.Load()
	if last == 0 {
		return errors.New("scheduler: store not reached yet")
	}
	if age := time.Since(time.Unix(0, last)); age > 3*s.cfg.syncInterval+time.Second {
		return fmt.Errorf("scheduler: store has not answered for %s", age.Round(time.Millisecond))
	}
	return nil
}

// Run runs the replica until ctx is done. It then stops claiming, lets runs
// in flight finish for the shutdown grace period, cancels the rest with
// cause ErrShutdown, and returns once every run's record is closed. It
// returns nil after a clean shutdown. Redis being unreachable does not stop
// it: it keeps retrying, and Ready reports the problem.
func (s *Scheduler) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("scheduler: Run called more than once")
	}
	s.runCtx, s.cancelRuns = context.WithCancelCause(context.WithoutCancel(ctx))
	s.runStart = s.now()
	defer func() {
		if s.gauges != nil {
			_ = s.gauges.Unregister()
		}
	}()
	s.log.Info("replica starting", "jobs", len(s.Jobs()), "max_clock_skew", s.cfg.skew)
	pctx, cancel := context.WithTimeout(ctx, claimTimeout)
	if err := s.store.Preload(pctx); err != nil && ctx.Err() == nil {
		s.storeFailed(err)
	}
	cancel()
	// The first heartbeat reads each job's last decided instant before this
	// replica claims anything: catch-up must see the gap the outage left,
	// not the instant this replica is about to claim.
	// Its catch-up claims go in the dispatcher's first batch, after the runs
	// due right now: the current run takes the slot, catch-up runs queue.
	// Notification subscriptions go first: the first heartbeat may close
	// runs (dead holders, stale manual requests) whose events they queue.
	notifier := s.newNotifier(ctx)
	first := s.sync(ctx)
	closing := make(chan closeReq, 4*store.MaxBatch)
	closerDone := make(chan struct{})
	s.closing = closing
	go func() { s.closer(closing); close(closerDone) }()
	renewerDone := make(chan struct{})
	go func() { s.renewer(s.renewals); close(renewerDone) }()
	s.loops.Go(func() { s.heartbeat(ctx) })
	s.loops.Go(func() { s.dispatch(ctx, first) })
	s.loops.Go(func() { s.recordMisses(ctx) })
	s.loops.Go(func() { s.backfills(ctx) }) // backfill.go
	s.loops.Go(func() { s.register(ctx) })  // replicas.go
	if notifier != nil {
		s.loops.Go(func() { notifier.run(ctx) })
	}
	<-ctx.Done()
	s.stoppingUntil()
	s.log.Info("replica stopping: no new claims; waiting for runs in flight", "grace", s.cfg.shutdownGrace)
	s.loops.Wait()
	done := make(chan struct{})
	go func() { s.runs.Wait(); close(done) }()
	grace := time.NewTimer(s.cfg.shutdownGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		s.log.Warn("shutdown grace period over: cancelling runs in flight")
		s.cancelRuns(ErrShutdown)
		<-done
	}
	s.cancelRuns(context.Canceled)
	// Every run and waiter has closed its record by now.
	close(closing)
	<-closerDone
	close(s.renewals) // no run is left to renew
	<-renewerDone
	s.log.Info("replica stopped")
	return nil
}

// stoppingUntil is how long, once the replica has begun stopping, it keeps
// asking Redis what only it can settle: a manual run it may hold though the
// answer that granted it was lost goes back to the pending requests (wait.go,
// handBackManual). The shutdown grace period, counted from the first call.
func (s *Scheduler) stoppingUntil() time.Time {
	s.stopSince.CompareAndSwap(0, time.Now().UnixNano())
	return time.Unix(0, s.stopSince.Load()).Add(s.cfg.shutdownGrace)
}

// sleep waits d or until ctx is done; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
