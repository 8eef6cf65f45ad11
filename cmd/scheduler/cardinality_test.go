package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// scrapeJobs records one counter series per job for n jobs through the
// daemon's telemetry and returns its /metrics.
func scrapeJobs(t *testing.T, n int, getenv func(string) string) string {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tel, err := setupTelemetry(context.Background(), "r", true, getenv, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, f := range tel.shutdown {
			_ = f(context.Background())
		}
	})
	c, err := tel.meters.Meter("test").Int64Counter("solocron.test.runs")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		c.Add(context.Background(), 1, metric.WithAttributes(attribute.String("job", "j"+strconv.Itoa(i))))
	}
	rec := httptest.NewRecorder()
	tel.metrics.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// Every job of a large table keeps its own series: the SDK's default
// limit of 2000 attribute sets per instrument folded the rest into one
// otel_metric_overflow="true" series, and the alert rules saw no state of
// the jobs past it. OTEL_GO_X_CARDINALITY_LIMIT, when set, still applies.
func TestMetricsKeepEveryJob(t *testing.T) {
	const jobs = 2500
	body := scrapeJobs(t, jobs, func(string) string { return "" })
	if strings.Contains(body, "otel_metric_overflow") {
		t.Errorf("%d jobs: series folded into otel_metric_overflow", jobs)
	}
	if got := strings.Count(body, "\nsolocron_test_runs_total{job="); got != jobs {
		t.Errorf("%d jobs: %d series of solocron_test_runs_total, want one per job", jobs, got)
	}

	t.Setenv("OTEL_GO_X_CARDINALITY_LIMIT", "100")
	body = scrapeJobs(t, 300, func(k string) string {
		if k == "OTEL_GO_X_CARDINALITY_LIMIT" {
			return "100"
		}
		return ""
	})
	if !strings.Contains(body, "otel_metric_overflow") {
		t.Errorf("OTEL_GO_X_CARDINALITY_LIMIT=100 and 300 jobs: no overflow series, the operator's limit ignored")
	}
}
