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
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
		t.meters, t.shutdown = mp, append(t.shutdown, mp.Shutdown)
		t.metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		})
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
