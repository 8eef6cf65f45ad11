package scheduler

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of this package's spans and metrics.
const ScopeName = "github.com/solocron/solocron/scheduler"

// Claim results, the "result" attribute of solocron.claims.
const (
	claimWon      = "won"       // this replica started the run
	claimTaken    = "taken"     // another replica had decided it
	claimWaiting  = "waiting"   // queued for a slot (overlap: wait)
	claimRefused  = "refused"   // outside its window or before a data loss
	claimError    = "error"     // Redis could not be asked
	claimDecided  = "decided"   // this replica recorded a skip or a miss
	claimEarly    = "early"     // this replica's clock runs ahead; retried later
	claimLater    = "later"     // claimed ahead, not startable yet; decided at the instant
	claimUndone   = "undone"    // claimed, then taken back (too few replicas or masters); retried
	renewOK       = "ok"        // lease renewed
	renewFailed   = "error"     // renewal call failed
	renewLostCode = "lost"      // renewal found the lease gone
	renewReplaced = "replaced"  // renewal found the run replaced
	renewCancel   = "cancelled" // renewal found the run cancelled by an operator
)

// renewResults is every value of the result attribute of
// solocron.lease.renewals; zeroOutcomes and zeroClaims the values of
// solocron.runs' outcome and solocron.claims' result whose series start at
// 0 for each job (telemetry.zero): the ones an alert on a job reads with
// increase() or rate() — a series that first shows up at 1 hides its first
// event. The others (skips, early, later, ...) appear at their first event:
// each job's zeroed series are kept few, as a table may hold 10,000 jobs.
var (
	renewResults = []string{renewOK, renewFailed, renewLostCode, renewReplaced, renewCancel}
	zeroOutcomes = []Outcome{Started, Succeeded, Failed, TimedOut, LeaseLost, Missed, Interrupted}
	zeroClaims   = []string{claimWon, claimRefused, claimError}
)

type telemetry struct {
	tracer        trace.Tracer
	runs          metric.Int64Counter
	claims        metric.Int64Counter
	runDuration   metric.Float64Histogram
	claimDuration metric.Float64Histogram
	dispatchDelay metric.Float64Histogram
	renewals      metric.Int64Counter
	leaseLost     metric.Int64Counter
	running       metric.Int64UpDownCounter
	sets          attrSets // of no job: renewals
}

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) (*telemetry, error) {
	m := mp.Meter(ScopeName)
	t := &telemetry{tracer: tp.Tracer(ScopeName)}
	var err error
	// No step wider than 1.5x from 10 s to a minute, where many jobs' runs
	// fall (a 20 s run read as p95 29 s when the buckets went 10 s -> 30 s),
	// then coarser up to an hour.
	seconds := metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
		1, 2.5, 5, 10, 15, 20, 30, 45, 60, 120, 300, 600, 900, 1800, 3600)
	if t.runs, err = m.Int64Counter("solocron.runs", metric.WithDescription("Runs decided or ended, by job and outcome."), metric.WithUnit("{run}")); err != nil {
		return nil, err
	}
	if t.claims, err = m.Int64Counter("solocron.claims", metric.WithDescription("Claim attempts by this replica, by job and result."), metric.WithUnit("{claim}")); err != nil {
		return nil, err
	}
	if t.runDuration, err = m.Float64Histogram("solocron.run.duration", metric.WithDescription("Duration of started runs, by job and outcome."), metric.WithUnit("s"), seconds); err != nil {
		return nil, err
	}
	if t.claimDuration, err = m.Float64Histogram("solocron.claim.duration", metric.WithDescription("Round trip of one claim call to Redis."), metric.WithUnit("s"), seconds); err != nil {
		return nil, err
	}
	if t.dispatchDelay, err = m.Float64Histogram("solocron.dispatch.delay", metric.WithDescription("From the scheduled instant (plus jitter) to the job's start."), metric.WithUnit("s"), seconds); err != nil {
		return nil, err
	}
	if t.renewals, err = m.Int64Counter("solocron.lease.renewals", metric.WithDescription("Lease renewals, by result."), metric.WithUnit("{renewal}")); err != nil {
		return nil, err
	}
	if t.leaseLost, err = m.Int64Counter("solocron.lease.lost", metric.WithDescription("Leases lost while their run was in flight, by job."), metric.WithUnit("{lease}")); err != nil {
		return nil, err
	}
	// Every renewal result at 0 from the start: rate() and increase()
	// see the first error only of a series that was there before it.
	for _, r := range renewResults {
		t.renewals.Add(context.Background(), 0, t.sets.get("", "result", r).add[:]...)
	}
	if t.running, err = m.Int64UpDownCounter("solocron.running", metric.WithDescription("Runs in flight on this replica, by job."), metric.WithUnit("{run}")); err != nil {
		return nil, err
	}
	return t, nil
}

// attrSets keeps the measurement options of one job (or of no job), one
// per extra attribute, built once: making an attribute set sorts and hashes
// it, which with a thousand runs a second cost more than everything else
// the replica did per run. The sets are few (outcomes or claim results), and
// looking one up allocates nothing.
type attrSets struct {
	mu sync.RWMutex
	m  map[[2]string]*attrOpts // {key, value} -> options
}

// attrOpts is one attribute set as the options an instrument's Add and
// Record take: handed on as a slice of these arrays (add[:]...), it
// allocates nothing, where a single option is put in a new one-element
// slice on every call (the instruments are interfaces: it escapes). The
// arrays live in the struct, one allocation per set: a table of 10,000 jobs
// keeps over 100,000 sets.
type attrOpts struct {
	add    [1]metric.AddOption
	record [1]metric.RecordOption
}

func (a *attrSets) get(job, key, value string) *attrOpts {
	k := [2]string{key, value}
	a.mu.RLock()
	o, ok := a.m[k]
	a.mu.RUnlock()
	if ok {
		return o
	}
	kv := make([]attribute.KeyValue, 0, 2)
	if job != "" {
		kv = append(kv, attribute.String("job", job))
	}
	if key != "" {
		kv = append(kv, attribute.String(key, value))
	}
	set := metric.WithAttributeSet(attribute.NewSet(kv...))
	o = &attrOpts{add: [1]metric.AddOption{set}, record: [1]metric.RecordOption{set}}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[[2]string]*attrOpts{}
	}
	a.m[k] = o
	return o
}

// jobAttrs returns the options for j's runs and, with a key, one more
// attribute. j's sets live in its memo, which outlives table reloads.
func jobAttrs(j *jobState, key, value string) *attrOpts {
	return j.memo.sets.get(j.Name, key, value)
}

func (t *telemetry) claimed(ctx context.Context, j *jobState, result string) {
	t.claims.Add(ctx, 1, jobAttrs(j, "result", result).add[:]...)
}

func (t *telemetry) decided(ctx context.Context, j *jobState, o Outcome) {
	t.runs.Add(ctx, 1, jobAttrs(j, "outcome", string(o)).add[:]...)
}

func (t *telemetry) ended(ctx context.Context, j *jobState, o Outcome, d time.Duration) {
	attrs := jobAttrs(j, "outcome", string(o))
	t.runs.Add(ctx, 1, attrs.add[:]...)
	t.runDuration.Record(ctx, d.Seconds(), attrs.record[:]...)
}

func (t *telemetry) renewed(ctx context.Context, result string) {
	t.renewals.Add(ctx, 1, t.sets.get("", "result", result).add[:]...)
}
