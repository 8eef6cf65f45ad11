package scheduler

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"

	"github.com/solocron/solocron/lockprovider"
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
)

// maxCatchup bounds the runs one catch-up makes up for.
const maxCatchup = 1000

// Heartbeat pacing, in sync intervals: a job no claim answer touched for
// idleSyncEvery intervals is synced; every job is synced every
// fullSweepEvery intervals whatever happened, a slice of the table at each
// beat (and all of it at start).
const (
	idleSyncEvery  = 5
	fullSweepEvery = 30
)

// Scheduler runs one replica's share of a job table: at each scheduled
// instant it races the other replicas for the run in Redis and runs it if it
// wins. It is safe for concurrent use.
type Scheduler struct {
	cfg   config
	store backend
	tel   *telemetry
	log   *slog.Logger
	ctl   *Control

	mu     sync.Mutex
	tab    []*jobState
	byName map[string]*jobState
	gen    int
	memos  map[string]*memo

	reloaded chan struct{}
	started  atomic.Bool

	loops      sync.WaitGroup // dispatcher, heartbeat, claims, waiters, miss recorder
	runs       sync.WaitGroup // started runs
	runCtx     context.Context
	cancelRuns context.CancelCauseFunc
	closing    chan<- closeReq // to the closer, while Run runs
	renewals   chan renewCall  // to the renewer, while Run runs
	active     sync.Map        // run id -> *activeRun
	manual     sync.Map        // manual run ids being claimed by this replica
	owners     owners          // owner tokens for this replica's claims
	gates      startGates      // runs claimed ahead wait here for their instant
	batchRTT   atomic.Int64    // round trip of recent big claim batches (ns): see ahead

	missedMu sync.Mutex
	missed   []claimReq

	lastSync   atomic.Int64 // unix nanoseconds of the last answered heartbeat
	redisClock redisClock   // Redis' clock, as of the last heartbeat
	clockBad   atomic.Bool  // this replica's clock is off from Redis' beyond the skew
	syncs      int          // heartbeats so far (touched by the heartbeat goroutine only)
	downSince  atomic.Int64 // unix nanoseconds since Redis stopped answering; 0 when up
	lastDownAt atomic.Int64 // when the last "store unreachable" was logged

	// changed: jobs whose run statistics this replica changed, published
	// at its next heartbeat (see sync).
	changedMu sync.Mutex
	changed   map[string]struct{}
	gauges    metric.Registration // the job gauges' callback; see registerJobGauges
}

// New returns a scheduler for one replica, coordinating through one Redis
// deployment: a *redis.Client for a standalone server or (from
// redis.NewFailoverClient) a Sentinel-managed primary, or a
// *redis.ClusterClient for Redis Cluster, where all keys of a job share one
// hash slot. The client should be dedicated to the scheduler (not shared
// with the program's other Redis work) so that claims and renewals never
// queue behind it; give it ContextTimeoutEnabled.
//
// Options and defaults: WithReplicaID("<hostname>-<pid>"),
// WithKeyPrefix("solocron"), WithMaxClockSkew(2s), WithClock(system clock),
// WithLogger(slog.Default()), WithTracerProvider(global),
// WithMeterProvider(global), WithPropagator(global), WithShutdownGrace(30s),
// WithSyncInterval(1s), WithMinReplicasAck(0: off), WithVersion(the build
// info's, for the replica registry: see Control.Replicas),
// WithNotifications(none), WithNotifyRetry(1s, 1h), WithNotifyQueueLimit(1000),
// WithNotifyClient(no redirects).
func New(client redis.UniversalClient, jobs []Job, opts ...Option) (*Scheduler, error) {
	if client == nil {
		return nil, errors.New("scheduler: nil Redis client")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.redlockTimeout != 0 {
		return nil, errors.New("scheduler: WithRedlockTimeout is for NewRedlock")
	}
	st, err := newStore(client, cfg)
	if err != nil {
		return nil, err
	}
	return newScheduler(st, cfg, jobs)
}

func newScheduler(st backend, cfg config, jobs []Job) (*Scheduler, error) {
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
		owners:   owners{prefix: newEpoch() + newEpoch()},
		reloaded: make(chan struct{}, 1),
		renewals: make(chan renewCall, 4*maxBatch),
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
// this scheduler's store.
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
	_, isRedlock := s.store.(*redlock)
	if err := s.cfg.checkNotify(jobs, isRedlock); err != nil {
		return err
	}
	if isRedlock {
		var errs []error
		for _, j := range jobs {
			if j.Concurrency > 1 {
				errs = append(errs, fmt.Errorf("scheduler: job %q: concurrency %d: Redlock coordinates mutexes only (concurrency 1)", j.Name, j.Concurrency))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tab := make([]*jobState, len(jobs))
	byName := make(map[string]*jobState, len(jobs))
	for i, spec := range jobs {
		spec = spec.withDefaults()
		m := s.memos[spec.Name]
		if m == nil {
			m = &memo{}
			s.memos[spec.Name] = m
			s.tel.zero(spec.Name, m)
		}
		j := parsed[i].jobState(spec, s.store.metaKey(spec.Name), m, s.cfg.skew)
		tab[i], byName[spec.Name] = j, j
	}
	s.tab, s.byName = tab, byName
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

func (s *Scheduler) job(name string) *jobState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byName[name]
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
	defer func() {
		if s.gauges != nil {
			_ = s.gauges.Unregister()
		}
	}()
	s.log.Info("replica starting", "jobs", len(s.Jobs()), "max_clock_skew", s.cfg.skew)
	pctx, cancel := context.WithTimeout(ctx, claimTimeout)
	if err := s.store.preload(pctx); err != nil && ctx.Err() == nil {
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
	closing := make(chan closeReq, 4*maxBatch)
	closerDone := make(chan struct{})
	s.closing = closing
	go func() { s.closer(closing); close(closerDone) }()
	renewerDone := make(chan struct{})
	go func() { s.renewer(s.renewals); close(renewerDone) }()
	s.loops.Go(func() { s.heartbeat(ctx) })
	s.loops.Go(func() { s.dispatch(ctx, first) })
	s.loops.Go(func() { s.recordMisses(ctx) })
	s.loops.Go(func() { s.register(ctx) }) // replicas.go
	if notifier != nil {
		s.loops.Go(func() { notifier.run(ctx) })
	}
	<-ctx.Done()
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

// entry is the next scheduled instant of one job.
type entry struct {
	j     *jobState
	sched time.Time
	fire  time.Time
}

type entryHeap []entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(a, b int) bool { return h[a].fire.Before(h[b].fire) }
func (h entryHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *entryHeap) Push(x any)        { *h = append(*h, x.(entry)) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// dispatch is the tick loop: it sleeps until the earliest next instant of
// any job, then claims every run that is due, in one batch.
func (s *Scheduler) dispatch(ctx context.Context, pending []claimReq) {
	var h entryHeap
	gen := -1
	held := false
	lastDue := 0 // runs claimed at the last instant: the next is sized for as many
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		tab, g := s.table()
		if g != gen {
			h, gen = s.plan(tab, h), g
		}
		now := s.now()
		var due []claimReq
		switch {
		case !s.clockTrusted(now):
			// The clock is off (a step of an hour, a VM resumed): claim
			// nothing, and do not walk the heap through the instants the
			// wrong clock calls past.
			held = true
		case held:
			// The clock agrees with Redis again: plan from it afresh, as a
			// replica starting now would. Instants the hold covered were
			// decided by other replicas or are left to catch-up.
			held = false
			h = s.plan(tab, nil)
		}
		// Claims go out claimAhead before the instant: the winner then
		// starts the job at the instant itself, however long it took Redis
		// to decide every run that shares it.
		ahead := s.ahead()
		for !held && len(h) > 0 && !h[0].fire.After(now.Add(ahead)) {
			e := h[0]
			if due == nil {
				due = make([]claimReq, 0, max(lastDue, 1))
			}
			due = append(due, s.newClaim(e.j, e.sched, 's'))
			// Skip instants whose window already closed (a long pause, a
			// clock jump): they were decided elsewhere or are left to catch-up.
			next := e.j.sched.Next(e.sched)
			for !next.IsZero() && e.j.fire(next).Add(e.j.StartingDeadline).Before(now) {
				next = e.j.sched.Next(next)
			}
			if next.IsZero() {
				heap.Pop(&h)
			} else {
				// The job's next instant takes its place at the top: no
				// Pop and Push (each boxes an entry) for every run.
				h[0] = entry{j: e.j, sched: next, fire: e.j.fire(next)}
				heap.Fix(&h, 0)
			}
		}
		due, pending = append(due, pending...), nil
		if len(due) > 0 {
			lastDue = len(due)
			s.loops.Go(func() { s.claim(ctx, due) })
		}
		// The sleep is measured on the monotonic clock, the instants on the
		// wall clock: waking at least every maxDispatchSleep notices a step
		// of the wall clock (either way) within that time.
		wait := maxDispatchSleep
		if len(h) > 0 && !held {
			wait = min(wait, h[0].fire.Sub(now)-ahead)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.reloaded:
		case <-timer.C:
		}
	}
}

// maxDispatchSleep bounds the dispatcher's sleep between looks at the clock.
const maxDispatchSleep = time.Second

// plan builds the heap for a (new) table. A job whose schedule did not
// change keeps its next instant; any other starts at the latest instant
// whose starting deadline has not passed (so a replica that restarts, or a
// job that was just added, still claims a run that is due right now), or the
// next one.
func (s *Scheduler) plan(tab []*jobState, old entryHeap) entryHeap {
	kept := map[string]entry{}
	for _, e := range old {
		kept[e.j.Name] = e
	}
	now := s.now()
	h := make(entryHeap, 0, len(tab))
	for _, j := range tab {
		if e, ok := kept[j.Name]; ok && sameTiming(e.j, j) {
			h = append(h, entry{j: j, sched: e.sched, fire: e.fire})
			continue
		}
		if t := s.first(j, now); !t.IsZero() {
			h = append(h, entry{j: j, sched: t, fire: j.fire(t)})
		}
	}
	heap.Init(&h)
	return h
}

func sameTiming(a, b *jobState) bool {
	return a.Schedule == b.Schedule && a.Timezone == b.Timezone && a.Offset == b.Offset &&
		a.Jitter == b.Jitter && a.StartingDeadline == b.StartingDeadline
}

// first is the first instant a replica considers for j at now.
func (s *Scheduler) first(j *jobState, now time.Time) time.Time {
	t := j.sched.Next(now.Add(-(j.StartingDeadline + j.Jitter)))
	for !t.IsZero() {
		n := j.sched.Next(t)
		if n.IsZero() || j.fire(n).After(now) {
			break
		}
		t = n
	}
	if !t.IsZero() && j.fire(t).Add(j.StartingDeadline).Before(now) {
		t = j.sched.Next(t)
	}
	return t
}

func (s *Scheduler) newClaim(j *jobState, sched time.Time, kind byte) claimReq {
	return s.claimFor(j, runID(j.Name, sched), sched, j.fire(sched), kind)
}

// claimFor builds the claim of one run. Scheduled runs follow the job's
// overlap policy. Manual and catch-up runs were asked for — by a person, or
// by the catch-up policy — so when every slot is busy they queue for one,
// first come first served, within their own window (the manual request's
// lifetime, the catch-up window) instead of being skipped.
func (s *Scheduler) claimFor(j *jobState, id string, sched, fire time.Time, kind byte) claimReq {
	r := claimReq{j: j, id: id, suffix: id[len(j.Name)+1:], kind: kind, sched: sched, fire: fire,
		owner: s.owners.next(), overlap: j.Overlap, maxWait: j.MaxWait}
	switch kind {
	case 'm':
		r.overlap, r.maxWait = OverlapWait, s.cfg.manualTTL
	case 'c':
		r.overlap, r.maxWait = OverlapWait, j.CatchupWindow
	}
	return r
}

// ahead is how long before their instant runs are claimed: the configured
// claim ahead, or (by default) up to half a second when big batches take
// long to decide — twice the round trip of the last one,
// slowly forgotten — so that they are decided before their instant.
func (s *Scheduler) ahead() time.Duration {
	return min(s.cfg.maxAhead, max(s.cfg.claimAhead, 2*time.Duration(s.batchRTT.Load())))
}

// batchTook notes the round trip of a big claim batch: the slowest recent
// one counts, and each new one forgets an eighth of it.
func (s *Scheduler) batchTook(d time.Duration) {
	for {
		old := s.batchRTT.Load()
		n := max(int64(d), old-old/8)
		if s.batchRTT.CompareAndSwap(old, n) {
			return
		}
	}
}

// owners hands out owner tokens: a random prefix drawn once per process
// (128 bits) and a counter. A token only has to be unique — it tells this
// claim's record from every other claim's — and drawing 128 random bits
// for each of ten thousand runs a second cost more than the claim itself.
type owners struct {
	prefix string // drawn in New
	n      atomic.Uint64
}

func (o *owners) next() string {
	var buf [64]byte
	b := append(append(buf[:0], o.prefix...), '-')
	return string(strconv.AppendUint(b, o.n.Add(1), 36))
}

// claimTimeout bounds one claim round trip.
const claimTimeout = 5 * time.Second

// claim decides a batch of runs, retrying while Redis cannot be reached and
// the runs' starting deadlines have not passed. Runs whose deadline passes
// first are recorded missed once Redis answers again. A run is never started
// without a claim.
func (s *Scheduler) claim(ctx context.Context, reqs []claimReq) {
	backoff := 50 * time.Millisecond
	askedAgain := false
	for len(reqs) > 0 {
		start := time.Now()
		for i := range reqs {
			reqs[i].known, reqs[i].fenceFloor = reqs[i].j.memo.snapshot()
			if reqs[i].sent.IsZero() {
				reqs[i].sent = start
			}
		}
		// The round trip finishes whatever happens to ctx: once the script
		// ran, its answer is the only record of what it decided. A shutdown
		// that dropped it would leave a run started by nobody (sitting
		// running until its lease ran out) and a manual request removed.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
		res, err := s.store.claim(cctx, s.cfg.replicaID, s.cfg.skew, s.cfg.waiterTTL, reqs)
		cancel()
		end := time.Now()
		if err == nil && len(reqs) >= maxBatch {
			s.batchTook(end.Sub(start))
		}
		s.tel.claimDuration.Record(ctx, end.Sub(start).Seconds())
		var again []claimReq
		if err != nil {
			if ctx.Err() != nil && !askedAgain && scheduledClaims(reqs) {
				// Shutting down, the answer lost: the script may have
				// run and granted a scheduled run to this replica, which
				// nobody would then start, and the cluster would close
				// lease_lost. Asked once more with the same owner tokens
				// (the round trip finishes regardless of shutdown), the
				// answer is handled as any other while stopping.
				askedAgain = true
				continue
			}
			if ctx.Err() != nil {
				// Shutting down: other replicas may still claim the
				// scheduled runs; a manual run the script may have taken
				// goes back to the pending requests.
				for _, r := range reqs {
					if r.kind == 'm' {
						s.handBackManual(ctx, r)
					}
				}
				return
			}
			s.storeFailed(err)
			for _, r := range reqs {
				s.tel.claimed(ctx, r.j, claimError)
			}
			again = reqs
		} else {
			s.storeAnswered()
			later := claimsAgain{}
			for i, r := range res {
				if r.status == "retry" {
					s.retryLater(ctx, reqs[i], r)
					again = append(again, reqs[i])
					continue
				}
				s.handle(ctx, reqs[i], r, start, end, later)
			}
			later.send(s, ctx)
		}
		reqs = s.keepTrying(again)
		if len(reqs) == 0 {
			return
		}
		// Random within [backoff/2, 3·backoff/2): replicas whose Redlock
		// claims split the masters' votes must not meet again in step.
		if !sleep(ctx, backoff/2+rand.N(backoff)) {
			if !askedAgain && scheduledClaims(reqs) {
				askedAgain = true // as above: an earlier try may have granted one
				continue
			}
			for _, r := range reqs {
				if r.kind == 'm' {
					s.handBackManual(ctx, r) // an earlier try may have taken it
				}
			}
			return
		}
		backoff = min(2*backoff, time.Second)
	}
}

// scheduledClaims reports whether reqs hold a scheduled or catch-up claim.
func scheduledClaims(reqs []claimReq) bool {
	for _, r := range reqs {
		if r.kind == 's' || r.kind == 'c' {
			return true
		}
	}
	return false
}

// retryLater notes a claim that was taken back: nothing started.
func (s *Scheduler) retryLater(ctx context.Context, r claimReq, res claimRes) {
	// Its token is not taken as seen: a failover may lose the claim it
	// came with (that is why it was taken back), and the store would then
	// look as if it lost writes.
	r.j.memo.observe(res.epoch, 0)
	s.tel.claimed(ctx, r.j, claimUndone)
	s.log.Warn("run claimed, then taken back: not started; retrying until its starting deadline",
		"job", r.j.Name, "run_id", r.id, "reason", res.reason)
}

// keepTrying returns the claims worth another try: those whose starting
// deadline has not passed, and manual ones within their request's lifetime.
// Those whose deadline has passed are recorded missed once the store
// answers.
func (s *Scheduler) keepTrying(reqs []claimReq) []claimReq {
	var keep []claimReq
	for _, r := range reqs {
		switch {
		case r.kind == 'm' && s.now().Before(r.sched.Add(s.cfg.manualTTL)):
			// Retried with the same owner token, as scheduled claims are:
			// a call whose answer was lost may have taken the request, and
			// only this token finds it again.
			keep = append(keep, r)
		case r.kind == 'm':
			s.manual.Delete(r.id)
		case r.kind == 'x':
			s.queueMiss(r)
		case s.now().After(r.fire.Add(r.j.StartingDeadline)):
			s.queueMiss(r)
		default:
			keep = append(keep, r)
		}
	}
	return keep
}

func (s *Scheduler) handle(ctx context.Context, r claimReq, res claimRes, start, end time.Time, later claimsAgain) {
	j := r.j
	j.memo.touch(end)
	if lost := j.memo.observe(res.epoch, res.fence); lost != "" {
		s.log.Warn("Redis lost this job's state (a restart without persistence, a flush, or a failover to a copy that missed writes); runs scheduled before now+max_clock_skew+claim ahead, and manual runs requested before now, are recorded missed",
			"job", j.Name, "old_epoch", lost, "new_epoch", res.epoch)
	}
	if r.kind == 'm' && res.status != "waiting" {
		s.manual.Delete(r.id)
	}
	// Two of three claims are lost races, answered "decided": the logger
	// with the run's attributes is made only for the answers that log.
	var runLog *slog.Logger
	log := func() *slog.Logger {
		if runLog == nil {
			runLog = s.log.With("job", j.Name, "run_id", r.id)
		}
		return runLog
	}
	if ctx.Err() != nil && r.kind == 'm' && (res.status == "started" || res.status == "waiting") {
		// Won while this replica shuts down: someone asked for it, and a
		// replica that stays up runs it.
		j.memo.observe(res.epoch, res.fence)
		s.handBackManual(ctx, r)
		return
	}
	switch res.status {
	case "started":
		if res.fence <= 0 {
			// Never start without a fencing token: it would be no token at all.
			log().Error("claim answered started without a fencing token; not starting the run")
			return
		}
		s.tel.claimed(ctx, j, claimWon)
		s.tel.decided(ctx, j, Started)
		// Claimed ahead, the job starts at its instant as Redis' clock has
		// it (not this replica's, which may lag by up to the max skew while
		// the run holds its slot).
		startAt := end
		if !res.server.IsZero() {
			// Redis read its clock (res.server) somewhere between this
			// attempt's send and its answer: a batch of a thousand runs
			// answers only once the script has decided them all. The
			// heartbeat's reading of Redis' clock places the instant
			// within that window; without one, the latest is safe.
			earliest, latest := start.Add(r.fire.Sub(res.server)), end.Add(r.fire.Sub(res.server))
			startAt = latest
			if at, ok := s.redisClock.localAt(r.fire); ok {
				switch {
				case at.Before(earliest):
					startAt = earliest
				case at.Before(latest):
					startAt = at
				}
			}
		}
		r.slot = res.slot
		s.startAt(r, res.fence, start, end, startAt)
	case "decided":
		s.tel.claimed(ctx, j, claimTaken)
		if s.log.Enabled(ctx, slog.LevelDebug) {
			log().Debug("run already decided", "outcome", res.outcome, "by", res.replica)
		}
	case "waiting":
		s.tel.claimed(ctx, j, claimWaiting)
		log().Info("all concurrency slots busy: waiting for one", "place", res.place)
		queued := r // copied here: a closure over r would move every answer's claim to the heap
		s.loops.Go(func() { s.wait(ctx, queued, start) })
	case "early":
		s.tel.claimed(ctx, j, claimEarly)
		// Too early on Redis' clock: this replica's clock runs ahead of it.
		// Ask again when Redis' clock reaches the run's claim time.
		if ahead := r.fire.Sub(res.server) - s.cfg.maxAhead; ahead > s.clockTolerance() {
			// Not a skew but a wrong clock (the dispatcher holds off until
			// it agrees with Redis again): replicas whose clocks are right
			// claim the run at its instant.
			log().Warn("run not claimed: this replica's clock runs ahead of Redis' by more than max_clock_skew",
				"ahead_by", ahead.Round(time.Millisecond))
			return
		}
		delay := r.fire.Add(-s.cfg.maxAhead).Sub(res.server) + time.Millisecond
		log().Debug("claim postponed: this replica's clock runs ahead of Redis", "retry_in", delay.Round(time.Millisecond))
		later.add(r, delay)
	case "later":
		s.tel.claimed(ctx, j, claimLater)
		// Claimed ahead, but not startable before its instant (paused, or
		// every slot busy): decide at the instant, on Redis' clock.
		later.add(r, r.fire.Sub(res.server)+time.Millisecond)
	case "refused":
		s.tel.claimed(ctx, j, claimRefused)
		log().Warn("run not claimed", "reason", res.reason)
	case "retry":
		s.retryLater(ctx, r, res)
		if r.kind == 'x' {
			s.queueMiss(r)
		} else if r.kind != 'm' {
			again := []claimReq{r}
			s.loops.Go(func() { s.claim(ctx, again) })
		}
	case string(SkippedOverlap), string(SkippedPaused), string(SkippedBlackout), string(Missed):
		s.tel.claimed(ctx, j, claimDecided)
		s.tel.decided(ctx, j, Outcome(res.status))
		s.statsChanged(j.Name)
		log().Info("run decided", "outcome", res.status)
	default:
		log().Error("unexpected claim answer", "status", res.status)
	}
}

// claimsAgain holds the claims one answer postponed (too early on Redis'
// clock, or claimed ahead and not startable yet), by how long: the runs of
// one batch are postponed together, and go out again in one claim, not one
// round trip each.
type claimsAgain map[time.Duration][]claimReq

// add postpones r by delay, rounded up to the millisecond. The attempt that
// answered granted nothing, so r's lease is not counted from it.
func (a claimsAgain) add(r claimReq, delay time.Duration) {
	r.sent = time.Time{}
	d := delay.Truncate(time.Millisecond)
	if d < delay {
		d += time.Millisecond
	}
	a[d] = append(a[d], r)
}

// send claims each group again after its delay.
func (a claimsAgain) send(s *Scheduler, ctx context.Context) {
	for d, reqs := range a {
		s.loops.Go(func() {
			if sleep(ctx, d) {
				s.claim(ctx, reqs)
			}
		})
	}
}

// wait polls a run queued for a slot (overlap: wait) until it is admitted,
// its max_wait passes, or the replica shuts down.
func (s *Scheduler) wait(ctx context.Context, r claimReq, claimed time.Time) {
	t := time.NewTicker(s.cfg.pollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if r.kind == 'm' {
				s.handBackManual(ctx, r)
				return
			}
			s.closeRun(r, Missed, 0, "its replica shut down while it waited for a slot", "", "", s.log)
			s.tel.decided(context.WithoutCancel(ctx), r.j, Missed)
			return
		case <-t.C:
		}
		_, floor := r.j.memo.snapshot()
		start := time.Now()
		// As a claim's, an admission's round trip finishes whatever
		// happens to ctx: its answer may be a start.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
		status, n, err := s.store.admit(actx, &r, s.cfg.waiterTTL, floor)
		cancel()
		if err != nil {
			continue // the queue place outlives a short outage (waiter TTL)
		}
		if status == "started" && r.kind == 'm' && ctx.Err() != nil {
			s.handBackManual(ctx, r)
			return
		}
		switch status {
		case "started":
			s.manual.Delete(r.id)
			s.tel.decided(ctx, r.j, Started)
			// The lease was granted by this admission, not by the claim
			// that queued the run (long ago, perhaps longer than a lease):
			// it counts from this call's send time.
			r.sent = time.Time{}
			s.start(r, n, start, time.Now())
			return
		case "skipped_overlap":
			s.manual.Delete(r.id)
			s.tel.decided(ctx, r.j, SkippedOverlap)
			s.statsChanged(r.j.Name)
			s.log.Info("run decided", "job", r.j.Name, "run_id", r.id, "outcome", SkippedOverlap, "waited", time.Since(claimed).Round(time.Millisecond))
			return
		case "skipped_paused":
			s.tel.decided(ctx, r.j, SkippedPaused)
			s.statsChanged(r.j.Name)
			s.log.Info("run decided", "job", r.j.Name, "run_id", r.id, "outcome", SkippedPaused, "waited", time.Since(claimed).Round(time.Millisecond))
			return
		case string(Missed):
			// An earlier poll admitted it, but its answer came after the
			// client's deadline and the lease ran out before this one:
			// recorded missed, never started.
			s.manual.Delete(r.id)
			s.tel.decided(ctx, r.j, Missed)
			s.log.Warn("run not started: its admission was answered after its lease ran out", "job", r.j.Name, "run_id", r.id)
			return
		case "lost":
			s.manual.Delete(r.id)
			s.log.Warn("queued run no longer held (its place expired)", "job", r.j.Name, "run_id", r.id)
			return
		}
	}
}

// handBackManual gives a manual run this replica claimed but will not start
// (it is shutting down) back to the cluster's pending requests: someone asked
// for it, and another replica runs it. If Redis cannot be asked, its queue
// place expires within the waiter TTL and the store hands it back then.
func (s *Scheduler) handBackManual(ctx context.Context, r claimReq) {
	defer s.manual.Delete(r.id)
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.closeTimeout)
	defer cancel()
	log := s.log.With("job", r.j.Name, "run_id", r.id)
	ok, err := s.store.handBack(hctx, &r, s.cfg.waiterTTL)
	switch {
	case err != nil:
		log.Warn("replica stopping: could not hand the manual run back; the store does once its queue place expires", "err", err)
	case ok:
		log.Info("replica stopping: manual run handed back to the cluster; another replica will run it")
	}
}

// heartbeat checks every job's state in Redis each sync interval.
func (s *Scheduler) heartbeat(ctx context.Context) {
	t := time.NewTicker(s.cfg.syncInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if claims := s.sync(ctx); len(claims) > 0 {
			s.loops.Go(func() { s.claim(ctx, claims) })
		}
	}
}

// sync runs one heartbeat and returns the claims it calls for: manual runs
// requested, and catch-up runs.
func (s *Scheduler) sync(ctx context.Context) []claimReq {
	tab, _ := s.table()
	cctx, cancel := context.WithTimeout(ctx, max(s.cfg.syncInterval, time.Second))
	defer cancel()
	// One read says which jobs have fresh manual requests.
	sent := time.Now()
	// It also publishes the jobs whose run statistics this replica changed
	// since its last heartbeat, and reads those the others published: every
	// replica syncs them at this beat, so the per-job metrics agree within
	// a heartbeat or two, without a round trip of their own.
	publish := s.takeChanged()
	hinted, server, err := s.store.manualHints(cctx, hintReq{
		since: sent.Add(-hintLookback), ttl: s.cfg.manualTTL,
		changedSince: sent.Add(-changedLookback(s.cfg.syncInterval, s.cfg.skew)), changed: publish,
	})
	if err != nil {
		s.unTakeChanged(publish)
		if ctx.Err() == nil {
			s.storeFailed(err)
		}
		return nil
	}
	s.storeAnswered()
	s.lastSync.Store(time.Now().UnixNano())
	s.redisClock.observe(server, sent, time.Now())
	// A job is synced when it has a manual request, when no claim answer
	// touched it lately (a won claim already checked its epoch and reaped
	// its slots), and in its turn of the sweep: each beat syncs every
	// fullSweepEvery-th job of the table, so every job is synced at least
	// that often, and no beat syncs them all at once (ten thousand jobs in
	// one beat would hold up the runs of the instant it falls on). The
	// first beat syncs every job. That keeps the heartbeat's cost flat as
	// the table grows with jobs that fire every second.
	first, turn := s.syncs == 0, s.syncs%fullSweepEvery
	s.syncs++
	hint := make(map[string]bool, len(hinted))
	for _, h := range hinted {
		hint[h] = true
	}
	idle := time.Now().Add(-idleSyncEvery * s.cfg.syncInterval)
	var jobs []*jobState
	var reqs []syncReq
	for i, j := range tab {
		if !first && i%fullSweepEvery != turn && !hint[j.Name] && j.memo.touchedAfter(idle) {
			continue
		}
		known, fence := j.memo.snapshot()
		jobs = append(jobs, j)
		reqs = append(reqs, syncReq{j: j, known: known, fence: fence})
	}
	if len(reqs) == 0 {
		return nil
	}
	res, err := s.store.sync(cctx, s.cfg.replicaID, s.cfg.skew, s.cfg.manualTTL, reqs)
	if err != nil {
		if ctx.Err() == nil {
			s.storeFailed(err)
		}
		return nil
	}
	now := s.now()
	// Catch-up waits for a clock that agrees with Redis': one an hour
	// ahead would take an hour of future instants for missed ones.
	trusted := s.clockTrusted(now)
	var claims []claimReq
	for i, r := range res {
		j := jobs[i]
		if lost := j.memo.observe(r.epoch, r.fence); lost != "" {
			s.log.Warn("Redis lost this job's state (a restart without persistence, a flush, or a failover to a copy that missed writes); runs scheduled before now+max_clock_skew+claim ahead, and manual runs requested before now, are recorded missed",
				"job", j.Name, "old_epoch", lost, "new_epoch", r.epoch)
		}
		j.memo.mu.Lock()
		if j.memo.statsRead && j.memo.stats != r.stats {
			// Another replica may not know yet (a run its holder never
			// closed, reaped by this sync): tell them at the next beat.
			s.statsChanged(j.Name)
		}
		j.memo.stats, j.memo.statsRead = r.stats, true
		j.memo.paused, j.memo.last, j.memo.touched = r.paused, r.last, time.Now()
		catchup := trusted && j.CatchupWindow > 0 && !j.memo.caughtUp
		j.memo.caughtUp = j.memo.caughtUp || trusted
		j.memo.mu.Unlock()
		for k := 0; k+1 < len(r.manual); k += 2 {
			id := r.manual[k]
			if _, busy := s.manual.LoadOrStore(id, struct{}{}); busy || !strings.HasPrefix(id, j.Name+"@") {
				continue
			}
			ms, _ := strconv.ParseInt(r.manual[k+1], 10, 64)
			at := time.UnixMilli(ms)
			claims = append(claims, s.claimFor(j, id, at, at, 'm'))
		}
		if catchup {
			for _, t := range catchupInstants(j, r.last, now) {
				c := s.newClaim(j, t, 'c')
				c.base, c.readAt = r.last, server
				claims = append(claims, c)
			}
		}
	}
	return claims
}

// catchupInstants lists the instants of j that every replica missed: after
// the last decided one, inside the catch-up window, and already past their
// own starting deadline (the dispatcher owns the others). A job that has
// never run has nothing to catch up.
func catchupInstants(j *jobState, last, now time.Time) []time.Time {
	if last.IsZero() {
		return nil
	}
	from := now.Add(-j.CatchupWindow)
	if last.After(from) {
		from = last
	}
	var out []time.Time
	for t := j.sched.Next(from); !t.IsZero() && j.fire(t).Add(j.StartingDeadline).Before(now); t = j.sched.Next(t) {
		if j.Catchup == CatchupLatest {
			out = append(out[:0], t)
			continue
		}
		if len(out) == maxCatchup {
			out = append(out[:0], out[1:]...)
		}
		out = append(out, t)
	}
	return out
}

func (s *Scheduler) queueMiss(r claimReq) {
	r.kind = 'x'
	s.missedMu.Lock()
	s.missed = append(s.missed, r)
	s.missedMu.Unlock()
}

// recordMisses records, once Redis answers again, the runs this replica
// could not claim before their starting deadline — unless another replica
// decided them meanwhile.
func (s *Scheduler) recordMisses(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.missedMu.Lock()
		reqs := s.missed
		s.missed = nil
		s.missedMu.Unlock()
		if len(reqs) == 0 {
			continue
		}
		for i := range reqs {
			reqs[i].known, reqs[i].fenceFloor = reqs[i].j.memo.snapshot()
		}
		cctx, cancel := context.WithTimeout(ctx, claimTimeout)
		res, err := s.store.claim(cctx, s.cfg.replicaID, s.cfg.skew, s.cfg.waiterTTL, reqs)
		cancel()
		if err != nil {
			now := s.now()
			s.missedMu.Lock()
			for _, r := range reqs {
				until := r.sched.Add(r.j.retention(r.sched))
				if !r.sent.IsZero() {
					// A claim of ours may have been granted, its answer
					// lost: its record outlives the retention by the
					// lease, and only our owner token can say the run
					// never started. Asking too late is harmless: Redis
					// refuses a claim too old to decide.
					until = until.Add(r.j.Lease + 2*claimTimeout)
				}
				if now.Before(until) {
					s.missed = append(s.missed, r)
				}
			}
			s.missedMu.Unlock()
			continue
		}
		later := claimsAgain{}
		for i, r := range res {
			s.handle(ctx, reqs[i], r, time.Now(), time.Now(), later)
		}
		later.send(s, ctx)
	}
}

// storeFailed logs that Redis cannot be reached: at once, then every 30s.
func (s *Scheduler) storeFailed(err error) {
	now := time.Now().UnixNano()
	s.downSince.CompareAndSwap(0, now)
	if last := s.lastDownAt.Load(); now-last > int64(30*time.Second) && s.lastDownAt.CompareAndSwap(last, now) {
		s.log.Error("store unreachable: runs that cannot be claimed before their starting deadline will be recorded missed", "err", err)
	}
}

func (s *Scheduler) storeAnswered() {
	if since := s.downSince.Swap(0); since != 0 {
		s.lastDownAt.Store(0)
		s.log.Info("store reachable again", "down_for", time.Since(time.Unix(0, since)).Round(time.Millisecond))
	}
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
