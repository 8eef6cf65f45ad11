package scheduler_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/solocron/solocron/scheduler"
)

// The instruments of SPEC section 5 are emitted through the providers given
// as options, and each run is one span with its claim as a child.
func TestTelemetry(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		table := []scheduler.Job{{Name: "tel", Schedule: "@every 10s", Lease: 3 * time.Second, Handler: c.ledger.Job(sleepJob(2500 * time.Millisecond))}}
		c.replica("a", table, scheduler.WithMeterProvider(mp), scheduler.WithTracerProvider(tp))
		c.replica("b", table, scheduler.WithMeterProvider(mp), scheduler.WithTracerProvider(tp))
		time.Sleep(25 * time.Second)
		c.stop()

		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		sums := map[string]map[string]int64{} // instrument -> attrs -> value
		hists := map[string]uint64{}
		for _, sm := range rm.ScopeMetrics {
			if sm.Scope.Name != scheduler.ScopeName {
				t.Errorf("scope %q", sm.Scope.Name)
			}
			for _, m := range sm.Metrics {
				switch d := m.Data.(type) {
				case metricdata.Sum[int64]:
					sums[m.Name] = map[string]int64{}
					for _, p := range d.DataPoints {
						sums[m.Name][p.Attributes.Encoded(attribute.DefaultEncoder())] += p.Value
					}
				case metricdata.Histogram[float64]:
					for _, p := range d.DataPoints {
						hists[m.Name] += p.Count
						if m.Name == "solocron.run.duration" {
							checkDurationBounds(t, p.Bounds)
						}
					}
				}
			}
		}
		runs := len(c.ledger.Runs("tel"))
		check := func(name, attrs string, want int64) {
			t.Helper()
			if got := sums[name][attrs]; got != want {
				t.Errorf("%s{%s} = %d, want %d (all: %v)", name, attrs, got, want, sums[name])
			}
		}
		check("solocron.runs", "job=tel,outcome=started", int64(runs))
		check("solocron.runs", "job=tel,outcome=succeeded", int64(runs))
		check("solocron.claims", "job=tel,result=won", int64(runs))
		check("solocron.claims", "job=tel,result=taken", int64(runs))
		check("solocron.running", "job=tel", 0)
		if sums["solocron.lease.renewals"]["result=ok"] < int64(runs) {
			t.Errorf("lease renewals %v: each 2.5s run of a 3s lease renews at least once", sums["solocron.lease.renewals"])
		}
		for _, h := range []string{"solocron.run.duration", "solocron.claim.duration", "solocron.dispatch.delay"} {
			if hists[h] == 0 {
				t.Errorf("histogram %s recorded nothing", h)
			}
		}
		for _, s := range []string{"solocron.lease.lost"} {
			if _, ok := sums[s]; ok && sums[s]["job=tel"] != 0 {
				t.Errorf("%s = %v", s, sums[s])
			}
		}

		var runSpans, claimSpans int
		byID := map[string]sdktrace.ReadOnlySpan{}
		for _, s := range spans.Ended() {
			byID[s.SpanContext().SpanID().String()] = s
		}
		for _, s := range spans.Ended() {
			switch s.Name() {
			case "solocron.run":
				runSpans++
				attrs := map[attribute.Key]bool{}
				for _, kv := range s.Attributes() {
					attrs[kv.Key] = true
				}
				for _, k := range []attribute.Key{"solocron.job", "solocron.run_id", "solocron.scheduled_at", "solocron.fencing_token", "solocron.replica", "solocron.outcome"} {
					if !attrs[k] {
						t.Errorf("run span lacks %s", k)
					}
				}
			case "solocron.claim":
				claimSpans++
				if p, ok := byID[s.Parent().SpanID().String()]; !ok || p.Name() != "solocron.run" {
					t.Errorf("claim span's parent is not a run span")
				}
			}
		}
		if runSpans != runs || claimSpans != runs {
			t.Errorf("%d run spans and %d claim spans for %d runs", runSpans, claimSpans, runs)
		}
	})
}

// checkDurationBounds wants run-duration buckets no wider than 1.5x between
// 10 s and a minute, where many jobs' runs fall: with 10 s then 30 s, a 20 s
// run read as a p95 of 29 s.
func checkDurationBounds(t *testing.T, bounds []float64) {
	t.Helper()
	for i := 1; i < len(bounds); i++ {
		lo, hi := bounds[i-1], bounds[i]
		if lo >= 10 && hi <= 60 && hi > 1.5*lo {
			t.Errorf("run duration buckets step from %v s to %v s (all: %v)", lo, hi, bounds)
		}
	}
	if len(bounds) == 0 || bounds[len(bounds)-1] < 60 {
		t.Errorf("run duration buckets end below a minute: %v", bounds)
	}
}
