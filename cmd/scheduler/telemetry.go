package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// telemetry is the daemon's OpenTelemetry SDK setup. Only this command
// knows the SDK and its exporters; the scheduler takes providers.
type telemetry struct {
	meters  metric.MeterProvider
	tracers trace.TracerProvider
	// propagator hands a run's trace context to its job; nil (the
	// scheduler's default, the global one) when spans are not exported.
	propagator propagation.TextMapPropagator
	// metrics serves the Prometheus text format; nil when metrics are off.
	metrics http.Handler
	// tracing says whether spans are exported.
	tracing  bool
	shutdown []func(context.Context) error
}

// setupTelemetry builds the providers. Metrics go to a Prometheus registry
// of their own (served at /metrics) when the admin server is on, and nowhere
// otherwise. Spans go over OTLP/HTTP when the standard variables ask for it,
// and nowhere (at no cost) otherwise.
func setupTelemetry(ctx context.Context, replica string, withMetrics bool, getenv func(string) string, log *slog.Logger) (*telemetry, error) {
	t := &telemetry{meters: metricnoop.NewMeterProvider(), tracers: tracenoop.NewTracerProvider()}
	tracing := tracingWanted(getenv, log)
	if !withMetrics && !tracing {
		return t, nil
	}
	// Exporters report failures (an unreachable collector) through the
	// global error handler: into the log, not onto stderr raw.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("telemetry export failed", "err", err) }))

	// Later options win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override the defaults given first.
	res, err := resource.New(ctx,
		resource.WithAttributes(
			attribute.String("service.name", "solocron"),
			attribute.String("service.instance.id", replica),
			attribute.String("service.version", versionString()),
		),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		// A malformed OTEL_RESOURCE_ATTRIBUTES: keep what could be parsed.
		log.Warn("telemetry resource incomplete", "err", err)
	}

	if withMetrics {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			return nil, err
		}
		opts := []sdkmetric.Option{sdkmetric.WithReader(exp), sdkmetric.WithResource(res)}
		// The SDK keeps at most 2000 attribute sets per instrument by
		// default and folds the rest into one otel_metric_overflow="true"
		// series: a table of 2,100 jobs lost its last 100 from every per-job
		// gauge (the alert rules saw no state of theirs: a failing job past
		// the 1999th paged nothing), and solocron_runs_total, seven series
		// per job from the start, kept 285 jobs. Solocron's attributes are
		// bounded by the table (job names, fixed outcomes and results), so
		// no limit, unless OTEL_GO_X_CARDINALITY_LIMIT (which the SDK reads)
		// asks for one.
		if strings.TrimSpace(getenv("OTEL_GO_X_CARDINALITY_LIMIT")) == "" {
			opts = append(opts, sdkmetric.WithCardinalityLimit(0))
		}
		mp := sdkmetric.NewMeterProvider(opts...)
		t.meters, t.shutdown = mp, append(t.shutdown, mp.Shutdown)
		t.metrics = metricsHandler(reg, log)
	}
	if tracing {
		// The exporter reads the endpoint, headers, TLS, timeout and
		// compression from the OTEL_EXPORTER_OTLP_* variables itself.
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, err
		}
		// The sampler comes from OTEL_TRACES_SAMPLER (default: parent-based,
		// always on); the batch settings from OTEL_BSP_*.
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		t.tracers, t.tracing, t.shutdown = tp, true, append(t.shutdown, tp.Shutdown)
		t.propagator = propagators(getenv("OTEL_PROPAGATORS"), log)
	}
	return t, nil
}

// metricsHandler serves what g gathers. A collector that fails (the Go
// runtime's or the process' collector, the OpenTelemetry exporter) costs
// its own series only: the scrape answers 200 with every other series,
// and the error goes to the log. promhttp's default answered 500 for the
// whole scrape: one failing collector blanked every metric, and the alert
// rules saw the replica's job state go stale.
func metricsHandler(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// tracingWanted follows the OpenTelemetry environment variables: spans are
// exported when an OTLP endpoint is set, unless OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none.
func tracingWanted(getenv func(string) string, log *slog.Logger) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "", "otlp":
	case "none":
		return false
	default:
		log.Warn("OTEL_TRACES_EXPORTER names an exporter this build lacks; only otlp (over HTTP) is supported", "OTEL_TRACES_EXPORTER", exp)
	}
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return false
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		log.Warn("OTLP protocol not supported by this build; sending http/protobuf", "protocol", proto)
	}
	return true
}

// Shutdown flushes what is buffered (spans not yet sent) within ctx.
func (t *telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// propagators follows OTEL_PROPAGATORS (default "tracecontext,baggage"):
// how a run's trace context reaches its job. This build knows tracecontext
// and baggage; "none" sends nothing; others are warned about and skipped.
func propagators(env string, log *slog.Logger) propagation.TextMapPropagator {
	if strings.TrimSpace(env) == "" {
		env = "tracecontext,baggage"
	}
	var ps []propagation.TextMapPropagator
	for _, name := range strings.Split(env, ",") {
		switch name = strings.TrimSpace(name); name {
		case "tracecontext":
			ps = append(ps, propagation.TraceContext{})
		case "baggage":
			ps = append(ps, propagation.Baggage{})
		case "none", "":
		default:
			log.Warn("OTEL_PROPAGATORS names a propagator this build lacks; only tracecontext and baggage are supported", "propagator", name)
		}
	}
	return propagation.NewCompositeTextMapPropagator(ps...)
}
