package scheduler_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// traceRuns runs job "tr" every second on two replicas for a few seconds
// with opts, and returns what each run's job saw as its trace context (by
// run id) and the job's history.
func traceRuns(t *testing.T, opts ...scheduler.Option) (map[string]map[string]string, []scheduler.Run) {
	c := newCluster(t)
	var mu sync.Mutex
	seen := map[string]map[string]string{}
	table := []scheduler.Job{{Name: "tr", Schedule: "@every 1s", Handler: jobs.Func(func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		seen[jobs.RunID(ctx)] = jobs.TraceContext(ctx)
		return nil
	})}}
	c.replicas(2, table, opts...)
	time.Sleep(5 * time.Second)
	c.stop()
	mu.Lock()
	defer mu.Unlock()
	return seen, c.history("tr")
}

// Each run's job continues the run's span: the traceparent it gets names
// the solocron.run span of that run, and the run record keeps its trace id.
func TestRunTraceContextReachesJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		seen, history := traceRuns(t, scheduler.WithTracerProvider(tp),
			scheduler.WithPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})))
		runSpans := map[string][2]string{} // run id -> trace id, span id
		for _, s := range spans.Ended() {
			if s.Name() != "solocron.run" {
				continue
			}
			for _, a := range s.Attributes() {
				if a.Key == "solocron.run_id" {
					runSpans[a.Value.AsString()] = [2]string{s.SpanContext().TraceID().String(), s.SpanContext().SpanID().String()}
				}
			}
		}
		if len(seen) < 3 {
			t.Fatalf("%d runs, want at least 3", len(seen))
		}
		for id, carrier := range seen {
			want, ok := runSpans[id]
			if !ok {
				t.Errorf("run %s: no solocron.run span", id)
				continue
			}
			if got, wantTP := carrier["traceparent"], "00-"+want[0]+"-"+want[1]+"-01"; got != wantTP {
				t.Errorf("run %s: traceparent %q, want %q (the run's span, sampled)", id, got, wantTP)
			}
		}
		if len(history) == 0 {
			t.Fatal("no history")
		}
		for _, r := range history {
			if want := runSpans[r.ID][0]; r.TraceID == "" || r.TraceID != want {
				t.Errorf("record %s: trace id %q, want %q", r.ID, r.TraceID, want)
			}
		}
	})
}

// The propagator defaults to the global one; with no tracer (no valid
// span) nothing is handed on and the record has no trace id.
func TestRunTraceContextDefaults(t *testing.T) {
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })

	t.Run("global propagator", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tp := sdktrace.NewTracerProvider()
			seen, history := traceRuns(t, scheduler.WithTracerProvider(tp))
			for id, carrier := range seen {
				if !strings.HasPrefix(carrier["traceparent"], "00-") {
					t.Errorf("run %s: trace context %v, want the global propagator's traceparent", id, carrier)
				}
			}
			if len(seen) == 0 || len(history) == 0 || history[0].TraceID == "" {
				t.Errorf("%d runs, history %+v", len(seen), history)
			}
		})
	})
	t.Run("unsampled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			seen, history := traceRuns(t, scheduler.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))))
			for id, carrier := range seen {
				if tp := carrier["traceparent"]; !strings.HasPrefix(tp, "00-") || !strings.HasSuffix(tp, "-00") {
					t.Errorf("run %s: traceparent %q, want one flagged not sampled", id, tp)
				}
			}
			if len(seen) == 0 || len(history) == 0 {
				t.Fatalf("%d runs, %d records", len(seen), len(history))
			}
			for _, r := range history {
				if r.TraceID != "" {
					t.Errorf("record %s: trace id %q of a trace not recorded", r.ID, r.TraceID)
				}
			}
		})
	})
	t.Run("no tracer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			seen, history := traceRuns(t, scheduler.WithTracerProvider(tracenoop.NewTracerProvider()))
			for id, carrier := range seen {
				if carrier != nil {
					t.Errorf("run %s: trace context %v without a tracer", id, carrier)
				}
			}
			if len(seen) == 0 || len(history) == 0 {
				t.Fatalf("%d runs, %d records", len(seen), len(history))
			}
			for _, r := range history {
				if r.TraceID != "" {
					t.Errorf("record %s: trace id %q without a tracer", r.ID, r.TraceID)
				}
			}
		})
	})
}
