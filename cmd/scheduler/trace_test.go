package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// With spans exported, a command job gets the run's trace context in
// TRACEPARENT, the run record keeps the trace id, and the collector gets
// the run's span under that trace id.
func TestTraceContextReachesCommandJob(t *testing.T) {
	t.Parallel()
	sink := newOTLPSink(t)
	dir := t.TempDir()
	table := filepath.Join(dir, "solocron.yaml")
	writeFile(t, table, `
jobs:
  - {name: traced, schedule: "@every 1s", command: ["sh", "-c", "echo \"tp=$TRACEPARENT\""]}
`)
	addr := freeAddr(t)
	p := start(t, nil, "replica", env("OTEL_EXPORTER_OTLP_ENDPOINT="+sink.URL, "OTEL_BSP_SCHEDULE_DELAY=100"),
		"run", "--config", table, "--admin-listen", addr, "--log-format", "json")
	var run scheduler.Run
	testkit.WaitFor(t, 60*time.Second, "a traced run that succeeded", func() bool {
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get("http://" + addr + "/api/v1/jobs/traced/runs")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var runs struct{ Runs []scheduler.Run }
		if json.NewDecoder(resp.Body).Decode(&runs) != nil || len(runs.Runs) == 0 || runs.Runs[0].Outcome != scheduler.Succeeded {
			return false
		}
		run = runs.Runs[0]
		return true
	})
	if len(run.TraceID) != 32 {
		t.Fatalf("run record %+v: trace id %q, want 32 hex digits", run, run.TraceID)
	}
	if want := "tp=00-" + run.TraceID + "-"; !strings.Contains(run.Output, want) || !strings.Contains(run.Output, "-01\n") {
		t.Errorf("the job printed %q, want a sampled traceparent of trace %s", run.Output, run.TraceID)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(60 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
	id, _ := hex.DecodeString(run.TraceID)
	if !bytes.Contains(sink.all(), id) {
		t.Errorf("the collector got no span of trace %s", run.TraceID)
	}
}

// OTEL_PROPAGATORS chooses the propagators, tracecontext and baggage by
// default.
func TestPropagators(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	for env, want := range map[string][]string{
		"":                     {"traceparent", "tracestate", "baggage"},
		"tracecontext":         {"traceparent", "tracestate"},
		" baggage , b3 ":       {"baggage"},
		"none":                 nil,
		"tracecontext,xray":    {"traceparent", "tracestate"},
		"baggage,tracecontext": {"baggage", "traceparent", "tracestate"},
	} {
		// Fields' order is the propagator's own (a map's, for some).
		got := propagators(env, quiet).Fields()
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("OTEL_PROPAGATORS=%q: fields %v, want %v", env, got, want)
		}
	}
}
