package main

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// failingCollector is a collector whose Collect fails, as a broken
// process collector or exporter would.
type failingCollector struct{ desc *prometheus.Desc }

func (c failingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c failingCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(c.desc, errors.New("collector broke"))
}

// One collector that fails does not blank the scrape: /metrics answers
// 200 with every other series, and the error is logged (it answered 500,
// with no series at all, before).
func TestMetricsSurviveAFailingCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	ok := prometheus.NewGauge(prometheus.GaugeOpts{Name: "solocron_job_paused_test", Help: "a healthy series"})
	ok.Set(1)
	reg.MustRegister(ok, failingCollector{prometheus.NewDesc("solocron_broken", "a failing collector", nil, nil)})

	var logged bytes.Buffer
	h := metricsHandler(reg, slog.New(slog.NewTextHandler(&logged, nil)))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, want 200 with the other series:\n%s", rec.Code, body)
	}
	if !strings.Contains(string(body), "solocron_job_paused_test 1") {
		t.Errorf("the healthy series is missing:\n%s", body)
	}
	if !strings.Contains(logged.String(), "collector broke") || !strings.Contains(logged.String(), "level=WARN") {
		t.Errorf("the gather error is not logged as a warning: %q", logged.String())
	}
}
