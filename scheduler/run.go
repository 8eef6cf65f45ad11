package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/lockprovider"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// outputLimit bounds the output tail kept in a run record.
const outputLimit = 4096

// errorLimit bounds the error text kept in a run record (complete.lua
// bounds it too, after adding what the cluster knows).
const errorLimit = 2048

// capText cuts s to at most limit bytes, on a rune boundary, saying so.
func capText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const mark = " …(truncated)"
	cut := limit - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// runLease renews a run's record and slot together, in one round trip, as a
// lockprovider.LeaseStore, so the run's watchdog is lockprovider.KeepAlive.
type runLease struct {
	s     *Scheduler
	j     *jobState
	id    string
	owner string
	// pool, member: the pool slot the run holds on Redis Cluster ("": none).
	pool, member string
	// stopBy, for a command job that a lost lease stops, is when its
	// supervisor stops it on its own (jobs.StopBy): moved at each renewal,
	// before the keepalive learns of it.
	stopBy *jobs.StopBy
}

func (l *runLease) RefreshLease(ctx context.Context, _ *lockprovider.Lease) error {
	sent := time.Now()
	res, err := l.s.renew(ctx, store.RenewReq{Job: l.j.spec, ID: l.id, Owner: l.owner, Pool: l.pool, Member: l.member})
	if err != nil {
		l.s.tel.renewed(ctx, renewFailed)
		return err
	}
	switch res {
	case store.LeaseOK:
		l.s.tel.renewed(ctx, renewOK)
		if l.stopBy != nil {
			l.stopBy.Set(stopByOf(sent, l.j.Lease))
		}
		return nil
	case store.LeaseReplaced:
		l.s.tel.renewed(ctx, renewReplaced)
		return ErrReplaced
	case store.LeaseCancelled:
		l.s.tel.renewed(ctx, renewCancel)
		return ErrCancelled
	case store.LeaseUnacked:
		// Renewed where it was sent, but a failover could lose it: it does
		// not count, and the watchdog tries again.
		l.s.tel.renewed(ctx, renewFailed)
		return fmt.Errorf("scheduler: renewal of run %s not acknowledged by enough replicas or masters", l.id)
	}
	l.s.tel.renewed(ctx, renewLostCode)
	return fmt.Errorf("%w: run %s is no longer held by this replica", lockprovider.ErrLeaseLost, l.id)
}

// ReleaseLease is never used: a run ends with complete, which records it.
func (l *runLease) ReleaseLease(context.Context, *lockprovider.Lease) error {
	return errors.New("scheduler: runs are closed by recording their outcome")
}

// start runs a claimed run in its own goroutine, at once.
func (s *Scheduler) start(r claimReq, fence int64, claimStart, claimEnd time.Time) {
	s.startAt(r, fence, claimStart, claimEnd, claimEnd)
}

// startAt runs a claimed run in its own goroutine, starting the job at
// startAt (on this process' monotonic clock).
func (s *Scheduler) startAt(r claimReq, fence int64, claimStart, claimEnd, startAt time.Time) {
	s.runs.Go(func() { s.execute(r, fence, claimStart, claimEnd, startAt) })
}

// execute runs one claimed run: its span, its lease taken (or the run
// never starts), the lease kept alive and watched, the attempts, and the
// run's end recorded.
func (s *Scheduler) execute(r claimReq, fence int64, claimStart, claimEnd, startAt time.Time) {
	j := r.j
	if r.Slot < 1 {
		r.Slot = 1 // one slot only (a Redlock mutex): nothing to number
	}
	jobAttr := jobAttrs(j, "", "")
	s.tel.running.Add(s.runCtx, 1, jobAttr.add[:]...)
	defer s.tel.running.Add(s.runCtx, -1, jobAttr.add[:]...)

	ctx, span, carrier, traceID := s.runSpan(r, fence, claimStart, claimEnd)
	log := newRunLog(s.log, j.Name, r.ID)
	lease, stopBy, grace, sent, ok := s.takeLease(ctx, r, fence, claimStart, claimEnd, log)
	if !ok {
		span.End()
		return
	}
	jobCtx, cancelJob := context.WithCancelCause(ctx)
	defer cancelJob(context.Canceled)
	keep := s.keepLease(ctx, lease, grace, j, jobAttr, log, cancelJob)

	s.running.Add(1)
	defer s.running.Add(-1)

	// Everything the first attempt needs is made before the instant: when
	// a thousand runs start at once, each does as little as it can then.
	if j.Timeout > 0 {
		var cancelTimeout context.CancelFunc
		jobCtx, cancelTimeout = context.WithDeadlineCause(jobCtx, later(startAt, time.Now()).Add(j.Timeout), ErrTimeout)
		defer cancelTimeout()
	}
	run := s.attempts(jobCtx, cancelJob, r, fence, startAt, claimEnd, sent, lease, stopBy, grace, carrier, log, jobAttr)
	// Runs due at the same instant as this one may still be waiting to be
	// scheduled: let them start before this one does its bookkeeping.
	runtime.Gosched()
	lostCause := keep.end()

	s.finish(ctx, span, r, run, jobCtx, lostCause, traceID, log)
}

// runSpan opens the run's span (with its claim's span inside) and the
// carrier that hands its trace context to the job; traceID is kept in the
// record when the span is sampled.
func (s *Scheduler) runSpan(r claimReq, fence int64, claimStart, claimEnd time.Time) (ctx context.Context, span trace.Span, carrier propagation.MapCarrier, traceID string) {
	j := r.j
	// The span's attributes are made only when it records: with no tracer
	// configured they would be built for nothing, for every run.
	ctx, span = s.tel.tracer.Start(s.runCtx, "solocron.run", trace.WithTimestamp(claimStart))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("solocron.job", j.Name),
			attribute.String("solocron.run_id", r.ID),
			attribute.String("solocron.scheduled_at", r.Sched.UTC().Format(time.RFC3339)),
			attribute.String("solocron.kind", string(r.Kind.Public())),
			attribute.Int64("solocron.fencing_token", fence),
			attribute.String("solocron.replica", s.cfg.replicaID),
		)
		_, claimSpan := s.tel.tracer.Start(ctx, "solocron.claim", trace.WithTimestamp(claimStart))
		claimSpan.End(trace.WithTimestamp(claimEnd))
	}
	// The job continues the run's trace: the propagator writes the span's
	// context once, every attempt hands it on. An unsampled span's context
	// goes too (downstream then does not sample either), but only a sampled
	// one's trace id is worth keeping in the record: there is a trace to
	// find. Without a tracer the span context is invalid, and this costs
	// nothing.
	if sc := span.SpanContext(); sc.IsValid() {
		if sc.IsSampled() {
			traceID = sc.TraceID().String()
		}
		carrier = propagation.MapCarrier{}
		s.cfg.propagator.Inject(ctx, carrier)
	}
	return ctx, span, carrier, traceID
}

// takeLease makes the run's lease, granted by the claim. A claim answered
// after the lease this replica may count on takes it back first; ok is false
// when it could not, and the run does not start (handed back if manual,
// recorded missed if not).
func (s *Scheduler) takeLease(ctx context.Context, r claimReq, fence int64, claimStart, claimEnd time.Time, log *runLog) (lease *lockprovider.Lease, stopBy *jobs.StopBy, grace time.Duration, sent time.Time, ok bool) {
	j := r.j
	// The lease was granted by the claim: at the earliest when it was first
	// sent (a retried claim may have been granted by its first execution).
	sent = claimStart
	if !r.Sent.IsZero() && r.Sent.Before(sent) {
		sent = r.Sent
	}
	rl := &runLease{s: s, j: j, id: r.ID, owner: r.Owner, pool: r.Pool, member: r.PoolMember}
	lease = lockprovider.NewLease(rl, r.ID, r.Owner, fence, j.Lease, sent)
	grace = stopGrace(j)
	if grace > 0 && j.OnLeaseLost != LeaseLostContinue {
		rl.stopBy = jobs.NewStopBy(stopByOf(sent, j.Lease))
	}
	if time.Until(lease.Until().Add(-grace)) < startMargin(j.Lease, grace) {
		// The claim's answer came after the lease this replica may count
		// on, or so close to its end that the job would be killed as it
		// starts — recorded lease_lost though its program barely ran, if
		// at all (a Redis stall right after the claim). Redis counted the
		// lease from when the script ran, later: if this replica still
		// owns the run and its slot, the lease is taken back (renewed) and
		// the run starts. If not, it never starts, and its record says so.
		late := claimEnd.Sub(sent).Round(time.Millisecond)
		rctx, cancel := context.WithTimeout(ctx, claimTimeout)
		err := lease.Refresh(rctx)
		cancel()
		if err != nil && r.Kind == store.RunManual {
			// Someone asked for it: back to the pending requests, for any
			// replica to run, not recorded missed.
			log.Warn("manual run not started: its claim was answered after its lease ran out; handing it back", "late_by", late, "err", err)
			s.handBackLate(ctx, r)
			return nil, nil, 0, time.Time{}, false
		}
		if err != nil {
			text := fmt.Sprintf("never started: its claim was answered %s after it was sent, past its lease, and the lease could not be taken back: %v", late, err)
			log.Warn("run not started: its claim was answered after its lease ran out", "late_by", late, "err", err)
			if !s.closeRun(r, Missed, nil, 0, text, "", "", log) {
				// Only this replica knows the run never started; if Redis
				// stays away past the lease, the cluster closes it
				// lease_lost. Keep saying so while its record lives: the
				// close turns that lease_lost into missed.
				until := r.Sched.Add(j.retention(r.Sched) + j.Lease)
				for s.now().Before(until) && sleep(ctx, time.Second) {
					if s.closeRun(r, Missed, nil, 0, text, "", "", log) {
						break
					}
				}
			}
			s.tel.ended(context.WithoutCancel(ctx), j, Missed, 0)
			return nil, nil, 0, time.Time{}, false
		}
		log.Info("claim answered after its lease ran out; lease taken back", "late_by", late)
	}
	return lease, rl.stopBy, grace, sent, true
}

// lazyKeepAlive is a run's lockprovider.KeepAlive and the watch on it
// (watchLease), started only when the keepalive would first act
// (lockprovider.KeepAliveDue): its first renewal, or the lease's deadline
// less the stop grace if sooner. Until then a keepalive only waits on its
// timers, so a run that ends first — most runs end long before a third of
// their lease — costs one timer, not the keepalive's context and two timers
// and the watch's context and channel. Started then, the keepalive acts as
// it would have from the run's start: it sets its timers from the lease's
// grant, so one overdue after a freeze fires at once and tells the freeze,
// and no renewal, loss or stop-by deadline moves.
type lazyKeepAlive struct {
	s         *Scheduler
	ctx       context.Context
	lease     *lockprovider.Lease
	grace     time.Duration
	j         *jobState
	jobAttr   *attrOpts
	log       *runLog
	cancelJob context.CancelCauseFunc

	mu    sync.Mutex
	timer *time.Timer // starts the keepalive when due
	ended bool        // end was called: nothing starts any more
	// Once started:
	kctx    context.Context
	stop    func()
	unwatch func() bool
	watched <-chan struct{}
}

// keepLease keeps the run's lease from when the keepalive is due; end
// stops it.
func (s *Scheduler) keepLease(ctx context.Context, lease *lockprovider.Lease, grace time.Duration, j *jobState, jobAttr *attrOpts, log *runLog, cancelJob context.CancelCauseFunc) *lazyKeepAlive {
	k := &lazyKeepAlive{s: s, ctx: ctx, lease: lease, grace: grace, j: j, jobAttr: jobAttr, log: log, cancelJob: cancelJob}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.timer = time.AfterFunc(time.Until(lockprovider.KeepAliveDue(lease, grace)), k.begin)
	return k
}

// begin starts the keepalive and its watch, unless the run ended.
func (k *lazyKeepAlive) begin() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ended {
		return
	}
	k.kctx, k.stop = lockprovider.KeepAlive(k.ctx, k.lease, lockprovider.WithStopGrace(k.grace))
	k.unwatch, k.watched = k.s.watchLease(k.ctx, k.kctx, k.j, k.jobAttr, k.log, k.cancelJob)
}

// end stops the keepalive (or its start) once the job returned, and
// returns why the lease was lost (or replaced) while the job ran, if it
// was: nil when it held until now.
func (k *lazyKeepAlive) end() error {
	k.mu.Lock()
	k.ended = true
	k.timer.Stop()
	kctx, stop, unwatch, watched := k.kctx, k.stop, k.unwatch, k.watched
	k.mu.Unlock()
	if kctx == nil {
		return nil // never started: the run ended before its first renewal
	}
	if !unwatch() {
		<-watched // the lease ended while the job ran: the watch did its part
	}
	stop()
	// The lease's end as the keepalive saw it: lost (or replaced) while the
	// job ran, or ended by stop just now.
	if cause := context.Cause(kctx); errors.Is(cause, lockprovider.ErrLeaseLost) {
		return cause
	}
	return nil
}

// watchLease acts on the end of the lease's keepalive (kctx): a lost lease
// cancels the job (on_lease_lost: cancel), or is logged and counted and the
// job goes on (continue). Being replaced or cancelled by an operator always
// cancels. The watch runs only once the keepalive's context ends: no
// goroutine waits for it while the job runs. unwatch and watched are
// context.AfterFunc's stop and the watch's end.
func (s *Scheduler) watchLease(ctx, kctx context.Context, j *jobState, jobAttr *attrOpts, log *runLog, cancelJob context.CancelCauseFunc) (unwatch func() bool, watched <-chan struct{}) {
	done := make(chan struct{})
	unwatch = context.AfterFunc(kctx, func() {
		defer close(done)
		cause := context.Cause(kctx)
		if !errors.Is(cause, lockprovider.ErrLeaseLost) {
			return
		}
		stopped := errors.Is(cause, ErrReplaced) || errors.Is(cause, ErrCancelled)
		if !stopped {
			s.tel.leaseLost.Add(context.WithoutCancel(ctx), 1, jobAttr.add[:]...)
		}
		if j.OnLeaseLost == LeaseLostContinue && !stopped {
			log.Warn("lease lost; the job goes on (on_lease_lost: continue) — another replica may now start this job", "cause", cause)
			return
		}
		if errors.Is(cause, ErrCancelled) {
			log.Warn("an operator cancelled the run: cancelling the job")
		} else {
			log.Warn("lease lost: cancelling the job", "cause", cause)
		}
		cancelJob(cause)
	})
	return unwatch, done
}

// stopByOf is when a command's supervisor stops the job on its own
// (jobs.StopBy) for a lease of ttl granted or renewed by a call sent at
// sent: when the lease ends as this replica counts it (lockprovider.Lease's
// Until), less stopMargin/2 — just after this replica itself would have
// stopped the job, should it be frozen then.
func stopByOf(sent time.Time, ttl time.Duration) time.Time {
	return sent.Add(ttl - lockprovider.Drift(ttl) - stopMargin/2)
}

// startMargin is the lease a claimed run needs left to start without
// taking it back first: half the keepalive's renewal interval ((ttl −
// grace)/3). A claim answered on time leaves about three intervals.
func startMargin(ttl, grace time.Duration) time.Duration {
	return max(ttl-grace, 0) / 6
}

// runLog is a run's logger (its job and run id), made at its first use: a
// run that logs nothing, as a replica logging warnings and errors only runs
// a job that succeeds, never builds it (slog's With copies and formats its
// attributes, several allocations a run). It also makes the loggers of the
// run's attempts, each at the job's first ask. Safe for concurrent use.
type runLog struct {
	base    *slog.Logger
	job, id string
	once    sync.Once
	l       *slog.Logger
	first   attemptLog // the first attempt's, in the same allocation
}

func newRunLog(base *slog.Logger, job, id string) *runLog {
	l := &runLog{base: base, job: job, id: id}
	l.first.run, l.first.n = l, 1
	return l
}

func (l *runLog) get() *slog.Logger {
	l.once.Do(func() { l.l = l.base.With("job", l.job, "run_id", l.id) })
	return l.l
}

// enabled is the base logger's Enabled: what the run's own would answer
// (its attributes do not change its level), without building it.
func (l *runLog) enabled(ctx context.Context, level slog.Level) bool {
	return l.base.Enabled(ctx, level)
}

func (l *runLog) Info(msg string, args ...any) { l.get().Info(msg, args...) }
func (l *runLog) Warn(msg string, args ...any) { l.get().Warn(msg, args...) }
func (l *runLog) Log(ctx context.Context, level slog.Level, msg string, args ...any) {
	l.get().Log(ctx, level, msg, args...)
}

// attempt returns the source of attempt n's logger, for jobs.RunValues.
func (l *runLog) attempt(n int) *attemptLog {
	if n == 1 {
		return &l.first
	}
	return &attemptLog{run: l, n: n}
}

// attemptLog is one attempt's logger (the run's, with the attempt number),
// made when the job first asks for it (jobs.Logger).
type attemptLog struct {
	run  *runLog
	n    int
	once sync.Once
	l    *slog.Logger
}

func (a *attemptLog) Logger() *slog.Logger {
	a.once.Do(func() { a.l = a.run.get().With("attempt", a.n) })
	return a.l
}

// runAttempts is what attempts leave for the record: the last error, how
// many attempts there were, whether the job ran at all (not when the wait
// for its instant was cut short), when it started, and its output's tail.
type runAttempts struct {
	err       error
	attempt   int
	ran       bool
	startedAt time.Time
	tail      *jobs.Tail
}

// attempts waits for the run's instant, checks the lease still holds, and
// calls the job, retrying a failed attempt (each with a new fencing token)
// while the run's retries and its context allow.
func (s *Scheduler) attempts(jobCtx context.Context, cancelJob context.CancelCauseFunc, r claimReq, fence int64, startAt, claimEnd, sent time.Time, lease *lockprovider.Lease, stopBy *jobs.StopBy, grace time.Duration, carrier propagation.MapCarrier, log *runLog, jobAttr *attrOpts) runAttempts {
	j := r.j
	tail := jobs.NewTail(outputLimit)
	attempt := 1
	// Each attempt's context carries what the job may ask for in one value
	// (jobs.WithRun), its logger made only if the job asks for it.
	attemptCtx := func() context.Context {
		v := jobs.RunValues{
			Info:   jobs.Info{Job: j.Name, RunID: r.ID, ScheduledAt: r.Sched.UTC(), FencingToken: fence, Slot: r.Slot, Attempt: attempt, ReplicaID: s.cfg.replicaID},
			Output: tail,
			StopBy: stopBy,
			Log:    log.attempt(attempt),
		}
		if len(carrier) > 0 {
			v.Trace = carrier
		}
		return jobs.WithRun(jobCtx, v)
	}
	actx := attemptCtx()

	// Claimed ahead of its instant (WithClaimAhead): the job starts at the
	// instant. The lease is already being kept alive meanwhile.
	var err error
	if !s.gates.wait(jobCtx, startAt) {
		err = context.Cause(jobCtx)
	}
	// A claim whose answer came back late (held, retried) may hold a lease
	// that has already run out: then another replica may be about to take
	// the slot, and the job must not start at all.
	if err == nil && !time.Now().Before(lease.Until().Add(-grace)) {
		err = fmt.Errorf("%w: the claim's lease ran out before the run could start (its answer came %s after it was sent)",
			lockprovider.ErrLeaseLost, claimEnd.Sub(sent).Round(time.Millisecond))
		cancelJob(err)
	}
	startedAt := time.Now()
	s.tel.dispatchDelay.Record(s.runCtx, max(0, s.now().Sub(r.Fire)).Seconds(), jobAttr.record[:]...)

	// Not started at all when the wait for the instant was cut short.
	ran := err == nil
	if ran && log.enabled(jobCtx, slog.LevelInfo) {
		// Logged only now, at the instant: a run claimed ahead waits for
		// it, and one whose lease ran out meanwhile never starts (a manual
		// one then runs elsewhere, under the same run id). "run started" is
		// what operators (and the fault suite) count as a start.
		log.Info("run started", "fencing_token", fence, "kind", r.Kind.Public())
	}
	if err == nil {
		for {
			err = runHandler(actx, j.Handler)
			if err == nil || jobCtx.Err() != nil || attempt > j.Retries || jobs.IsPermanent(err) {
				break
			}
			wait := retryBackoff(j.RetryBackoff, attempt, func(d time.Duration) time.Duration {
				return s.cfg.jitter(fmt.Sprintf("retry %s#%d", r.ID, attempt), d)
			})
			log.Info("attempt failed; retrying", "attempt", attempt, "err", err, "in", wait.Round(time.Millisecond))
			if !sleep(jobCtx, wait) {
				break
			}
			attempt++
			_, floor := j.memo.snapshot()
			next, aerr := s.store.Attempt(jobCtx, j.spec, r.ID, r.Owner, attempt, floor)
			if aerr != nil || next == 0 {
				if aerr == nil {
					aerr = fmt.Errorf("%w: run %s is no longer held by this replica", lockprovider.ErrLeaseLost, r.ID)
					cancelJob(aerr)
				}
				err = fmt.Errorf("could not start attempt %d: %w", attempt, aerr)
				attempt--
				break
			}
			fence = next
			j.memo.observe("", fence)
			actx = attemptCtx()
		}
	}
	return runAttempts{err: err, attempt: attempt, ran: ran, startedAt: startedAt, tail: tail}
}

// finish names the run's outcome, records it, and ends its span, its
// metrics and its log.
func (s *Scheduler) finish(ctx context.Context, span trace.Span, r claimReq, run runAttempts, jobCtx context.Context, lostCause error, traceID string, log *runLog) {
	j := r.j
	err, attempt, ran, startedAt, tail := run.err, run.attempt, run.ran, run.startedAt, run.tail
	outcome, errText := classify(err, jobCtx, lostCause)
	if !ran && (outcome == LeaseLost || outcome == Interrupted) {
		// Its lease was lost (or its replica stopped) before its instant
		// came: the job never ran, and the record must not suggest it did.
		outcome, errText = Missed, "never started: "+errText
	}
	errText = s.cfg.redacted(errText) // before the record, the span and the log
	s.closeRun(r, outcome, lostCause, attempt, errText, s.cfg.redacted(tail.String()), traceID, log)

	d := time.Since(startedAt)
	// The metrics read only the run's span of their context (exemplars),
	// and must not see its cancellation: a context with just the span
	// costs one allocation, context.WithoutCancel's three (its Value boxes
	// its receiver at each of the two measurements' span lookups).
	s.tel.ended(trace.ContextWithSpan(context.Background(), span), j, outcome, d)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("solocron.outcome", string(outcome)), attribute.Int("solocron.attempts", attempt))
		if outcome != Succeeded {
			span.SetStatus(codes.Error, errText)
		}
	}
	span.End()
	level := slog.LevelInfo
	if outcome != Succeeded {
		level = slog.LevelWarn
	}
	if log.enabled(ctx, level) { // else the arguments would be boxed for nothing
		args := []any{"outcome", outcome, "attempts", attempt, "duration", d.Round(time.Millisecond)}
		if errText != "" { // a run that succeeded has nothing to say here
			args = append(args, "err", errText)
		}
		log.Log(ctx, level, "run ended", args...)
	}
}

// closeRun records a run's end. Its context does not derive from the run's
// (often cancelled by now): closing a record must not depend on it. The end
// goes through the closer, which batches it with others; failed attempts
// are retried until the close timeout. If Redis stays away, the run's lease
// expires and the heartbeat of any replica closes it as lease_lost — the
// record is never lost.
//
// lost is why the run's lease was lost, if it was: a replica frozen past
// its lease finds its record closed or moved on, and says it was frozen.
//
// It reports whether Redis answered (the end recorded, or the record found
// closed or gone); false: it gave up at the close timeout.
func (s *Scheduler) closeRun(r claimReq, o Outcome, lost error, attempts int, errText, output, traceID string, log interface {
	Warn(string, ...any)
}) bool {
	// The close timeout on a timer of its own, not a context: a context
	// with a deadline costs a run several allocations more.
	timeout := time.NewTimer(s.cfg.closeTimeout)
	defer timeout.Stop()
	expired := false
	timedOut := func() <-chan time.Time {
		if expired {
			return closedTime
		}
		return timeout.C
	}
	req := store.CompleteReq{R: &r.StoreClaim, Replica: s.cfg.replicaID, Outcome: o, Attempts: attempts, ErrText: capText(errText, errorLimit), Output: output, TraceID: traceID}
	backoff := 50 * time.Millisecond
	unacked := false
	var frozen *lockprovider.FrozenError
	if lost != nil { // most runs: errors.As's target would be an allocation a run
		frozen = frozenBy(lost)
	}
	for {
		done := make(chan closed, 1)
		var c closed
		select {
		case s.closing <- closeReq{CompleteReq: req, j: r.j, done: done}:
			select {
			case c = <-done:
			case <-timedOut():
				expired, c.err = true, context.DeadlineExceeded
			}
		case <-timedOut():
			expired, c.err = true, context.DeadlineExceeded
		}
		switch {
		case c.err == nil && c.res == store.CloseClosed && frozen != nil:
			log.Warn("this replica was frozen past its lease: the cluster had already closed this run, and its record keeps that outcome", "outcome_here", o, "frozen_past_lease", frozen.Late.Round(time.Millisecond))
			return true
		case c.err == nil && c.res == store.CloseClosed:
			log.Warn("the cluster had already closed this run; its record keeps that outcome", "outcome_here", o)
			return true
		case c.err == nil && c.res == store.CloseLost && frozen != nil:
			// The keepalive saw its timers run past the lease's deadline:
			// the process did not run (SIGSTOP, a VM pause, a stall) while
			// the cluster closed the run lease_lost. Redis lost nothing.
			log.Warn("run record no longer ours: this replica was frozen past its lease, and the cluster closed the run meanwhile", "outcome_here", o, "frozen_past_lease", frozen.Late.Round(time.Millisecond))
			return true
		case c.err == nil && c.res == store.CloseLost:
			// Mostly a replica cut off from Redis past its lease (or frozen
			// for less than the keepalive can tell): the cluster closed the
			// run lease_lost and its record moved on.
			log.Warn("run record no longer ours: the cluster closed this run while this replica could not renew its lease (cut off from Redis, or frozen), or Redis lost the record")
			return true
		case c.err == nil && c.res == store.CloseUnacked:
			// Applied, but not on enough replicas yet: sent again (a close
			// is idempotent) until they have it, or a failover's new
			// primary does.
			unacked = true
		case c.err == nil:
			return true
		}
		pause := time.NewTimer(backoff)
		select {
		case <-pause.C:
		case <-timedOut():
			expired = true
		}
		pause.Stop()
		if expired {
			if unacked && c.err == nil {
				log.Warn("the run's end was recorded, but fewer replicas than min_replicas_ack acknowledged it; if a failover loses it, the run's lease expires and the cluster closes it as lease_lost")
				return true
			}
			log.Warn("could not record the run's end; its lease will expire and the cluster will close it as lease_lost", "err", c.err)
			return false
		}
		backoff = min(2*backoff, time.Second)
	}
}

// closedTime is a channel that never blocks (closed).
var closedTime = func() chan time.Time { c := make(chan time.Time); close(c); return c }()

// closeReq is a run's end queued for the closer.
type closeReq struct {
	store.CompleteReq
	j    *jobState // the run's
	done chan closed
}

// closed is the closer's answer for one run.
type closed struct {
	res store.CloseAnswer
	err error
}

// closer sends the ends of runs to the store, as many in one call as are
// queued when it looks: when many runs end together (a burst of fast jobs
// at the top of a second), their records are closed in one round trip, and
// Redis runs one script for them instead of one each. A lone end is sent at
// once; nothing waits to fill a batch (the record's finish time is Redis'
// clock when the close arrives).
func (s *Scheduler) closer(in <-chan closeReq) {
	for first := range in {
		batch := gather(first, in, 4*store.MaxBatch, nil)
		reqs := make([]store.CompleteReq, len(batch))
		for i, c := range batch {
			reqs[i] = c.CompleteReq
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.closeTimeout)
		res, err := s.store.Complete(ctx, reqs)
		cancel()
		if err == nil {
			for i, r := range reqs {
				j := batch[i].j
				if r.StatsAt > 0 {
					j.memo.setStats(r.StatsRaw, store.ParseStats(r.StatsRaw), r.StatsAt)
				}
				if res[i] == store.CloseOK {
					// The close answered the statistics it left (the
					// store's do, Redlock's do not).
					s.statsKnown(j)
				} else {
					s.statsChanged(j.Name)
				}
			}
		}
		for i, c := range batch {
			if err != nil {
				c.done <- closed{err: err}
			} else {
				c.done <- closed{res: res[i]}
			}
		}
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// gather returns first and what else arrives on in, up to limit items: what
// is queued already, and with a non-nil until, what arrives before it fires.
func gather[T any](first T, in <-chan T, limit int, until <-chan time.Time) []T {
	batch := []T{first}
	for len(batch) < limit {
		select {
		case c, ok := <-in:
			if !ok {
				return batch
			}
			batch = append(batch, c)
			continue
		default:
		}
		if until == nil {
			return batch
		}
		select {
		case c, ok := <-in:
			if !ok {
				return batch
			}
			batch = append(batch, c)
		case <-until:
			return batch
		}
	}
	return batch
}

// stopMargin is added to a job's stop grace: the time from the last
// signal to the process group's end, and the watchdog's own delay.
const stopMargin = 500 * time.Millisecond

// stopGrace is how long before its lease runs out a run's lease is declared
// lost: the job's stop grace (a command's kill_grace) plus stopMargin, so
// that its processes are gone before Redis can give the slot away. 0 for a
// job that stops when its context is done.
func stopGrace(j *jobState) time.Duration {
	if sg, ok := j.Handler.(jobs.StopGracer); ok {
		return sg.StopGrace() + stopMargin
	}
	return 0
}

// runHandler runs a job, turning a panic into a failure.
func runHandler(ctx context.Context, h jobs.Job) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &jobs.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return h.Run(ctx)
}

// classify maps how a run ended to its outcome.
func classify(err error, jobCtx context.Context, lost error) (Outcome, string) {
	text := ""
	if err != nil {
		text = err.Error()
	}
	if jobCtx.Err() != nil && err != nil {
		cause := context.Cause(jobCtx)
		switch {
		case errors.Is(cause, ErrReplaced):
			return Replaced, text
		case errors.Is(cause, ErrCancelled):
			return Cancelled, "cancelled by an operator; the job then ended: " + text
		case errors.Is(cause, lockprovider.ErrLeaseLost):
			return LeaseLost, text
		case errors.Is(cause, ErrShutdown):
			return Interrupted, text
		case errors.Is(cause, ErrTimeout):
			return TimedOut, text
		}
	}
	if errors.Is(lost, ErrCancelled) { // the job ignored its context
		if err == nil {
			return Cancelled, "cancelled by an operator; the job then ended without an error"
		}
		return Cancelled, "cancelled by an operator; the job then ended: " + text
	}
	if lost != nil { // on_lease_lost: continue
		if err == nil {
			return LeaseLost, "lease lost while running (" + lost.Error() + "); the job went on and succeeded"
		}
		return LeaseLost, "lease lost while running (" + lost.Error() + "); the job went on and failed: " + text
	}
	if err != nil {
		return Failed, text
	}
	return Succeeded, ""
}

// retryBackoff is the wait before retry n (1-based): base·2^(n-1), capped at
// an hour, with ±50% jitter so retries of many runs do not align.
func retryBackoff(base time.Duration, n int, jitter func(time.Duration) time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < time.Hour; i++ {
		d *= 2
	}
	d = min(d, time.Hour)
	return d/2 + jitter(d+1)
}

// frozenBy is the lockprovider.FrozenError in err's chain, or nil.
func frozenBy(err error) *lockprovider.FrozenError {
	var f *lockprovider.FrozenError
	if errors.As(err, &f) {
		return f
	}
	return nil
}
