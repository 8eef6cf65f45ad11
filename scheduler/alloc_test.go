package scheduler

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// The claim path allocates little per run: every replica claims every run,
// so at ten thousand jobs a second each allocation is ten thousand — and
// garbage collection was a third of a replica's CPU. These bounds hold the
// gains; raise one only with a reason.
func TestClaimPathAllocations(t *testing.T) {
	spec := Job{Name: "bench-0001", Schedule: "* * * * * *", Handler: jobs.Func(func(context.Context) error { return nil })}.withDefaults()
	j, err := newJobState(spec, "solocron:{bench-0001}:meta", &memo{}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	o := owners{prefix: store.NewEpoch() + store.NewEpoch()}
	r := newClaimReq(j, store.StoreClaim{ID: runID(j.Name, at), Kind: 's', Sched: at, Fire: at, Owner: o.next(), Overlap: j.Overlap})
	r.Suffix = r.ID[len(j.Name)+1:]
	buf := make([]byte, 0, 256)
	jobAttrs(j, "result", claimTaken)
	// Metrics recorded into the SDK (a reader attached), as an operator's
	// replica does: each per-run measurement allocates nothing once its
	// series exists.
	tel, err := newTelemetry(otel.GetTracerProvider(), sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tel.claimed(ctx, j, claimTaken)
	tel.ended(ctx, j, Succeeded, time.Second)
	run := jobAttrs(j, "", "")
	for _, c := range []struct {
		name string
		max  float64
		f    func()
	}{
		{"run id", 1, func() { _ = runID(j.Name, at) }},
		{"owner token", 1, func() { _ = o.next() }},
		{"fire without jitter", 0, func() { _ = j.fire(at) }},
		{"claim terms", 0, func() { buf = r.AppendTerms(buf[:0]) }},
		{"metric attributes", 0, func() { _ = jobAttrs(j, "result", claimTaken) }},
		{"claim metric", 0, func() { tel.claimed(ctx, j, claimTaken) }},
		{"run end metrics", 0, func() { tel.ended(ctx, j, Succeeded, time.Second) }},
		{"run in flight and delay metrics", 0, func() {
			tel.running.Add(ctx, 1, run.add[:]...)
			tel.dispatchDelay.Record(ctx, 0.001, run.record[:]...)
			tel.running.Add(ctx, -1, run.add[:]...)
		}},
	} {
		if n := testing.AllocsPerRun(100, c.f); n > c.max {
			t.Errorf("%s: %.0f allocations, want at most %.0f", c.name, n, c.max)
		}
	}
}

// A lost claim — two of every three a replica makes — allocates a bounded
// amount on the client, all of it included: arguments, the pipeline, the
// reply and its parsing, handling the answer. 2.5 a run since the claim's
// arguments and keys are written into one buffer per batch (store.ArgBuf)
// and a lost race to a run that never started parses its absent fence
// without an error (8.3 before): what is left is go-redis' reply (its row
// read as a string and boxed) and a share of the batch's.
func TestLostClaimAllocations(t *testing.T) {
	s, _ := benchStore(t)
	js := benchJobs(t, s, 64)
	ctx := context.Background()
	var allocs float64
	n := 0
	for range 5 {
		at := nextInstant()
		if _, err := s.Claim(ctx, "other", 2*time.Second, 3*time.Second, storeClaims(benchClaims(js, at)...)); err != nil {
			t.Fatal(err)
		}
		reqs := benchClaims(js, at)
		allocs += testing.AllocsPerRun(1, func() {
			res, err := s.Claim(ctx, "me", 2*time.Second, 3*time.Second, storeClaims(reqs...))
			if err != nil || res[0].Status != "decided" {
				t.Fatalf("claim: %v %v", res, err)
			}
		})
		n++
	}
	if per := allocs / float64(n) / 64; per > lostClaimAllocs {
		t.Errorf("a lost claim allocates %.1f times per run on the client, want at most %d", per, lostClaimAllocs)
	} else {
		t.Logf("a lost claim allocates %.1f times per run on the client", per)
	}
}

// lostClaimAllocs bounds TestLostClaimAllocations, per run.
const lostClaimAllocs = 3

// quickStore is a Redis store whose closes are answered at once, allocating
// nothing: what a started run allocates on its own replica is measured, not
// go-redis' work for the close (TestLostClaimAllocations bounds a claim's).
type quickStore struct {
	store.Backend
	answers []store.CloseAnswer
}

func (q *quickStore) Complete(_ context.Context, reqs []store.CompleteReq) ([]store.CloseAnswer, error) {
	for len(q.answers) < len(reqs) {
		q.answers = append(q.answers, store.CloseOK)
	}
	return q.answers[:len(reqs)], nil
}

// startedRunAllocs bounds TestStartedRunAllocations.
const startedRunAllocs = 28

// A started run of a Go function job that succeeds at once — most of a busy
// replica's runs — allocates a bounded amount, all of it included: its
// goroutine's work from the claim's answer to the close's, the closer's, and
// the metrics (an SDK reader attached), with a logger that logs warnings
// only. Each allocation is one per run at ten thousand runs a second; the
// bound holds what the run's single context value and its loggers made on
// demand saved (62 → 31), and the metrics' context holding only the run's
// span and the frozen-error lookup made only for a lost lease (31 → 28).
// Raise it only with a reason.
func TestStartedRunAllocations(t *testing.T) {
	cfg, err := newConfig([]Option{WithReplicaID("r1"), WithLogger(slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))})
	if err != nil {
		t.Fatal(err)
	}
	spec := Job{Name: "quick", Schedule: "* * * * * *", Handler: jobs.Func(func(ctx context.Context) error {
		if jobs.FencingToken(ctx) != 7 {
			return errors.New("no run info in the job's context")
		}
		return nil
	})}
	rs, _ := benchStore(t)
	s, err := newScheduler(&quickStore{Backend: rs}, cfg, []Job{spec})
	if err != nil {
		t.Fatal(err)
	}
	s.runCtx, s.cancelRuns = context.WithCancelCause(context.Background())
	defer s.cancelRuns(context.Canceled)
	closing := make(chan closeReq, 4*store.MaxBatch)
	s.closing = closing
	closerDone := make(chan struct{})
	go func() { s.closer(closing); close(closerDone) }()
	defer func() { close(closing); <-closerDone }()
	tab, _ := s.table()
	j := tab[0]
	at := time.Now().Truncate(time.Second)
	r := s.newClaim(j, at, store.RunScheduled)
	run := func() {
		now := time.Now()
		s.execute(r, 7, now, now, now)
	}
	run() // metric series and attribute sets made once
	n := testing.AllocsPerRun(200, run)
	if n > startedRunAllocs {
		t.Errorf("a started run allocates %.0f times, want at most %d", n, startedRunAllocs)
	} else {
		t.Logf("a started run allocates %.0f times", n)
	}
}
