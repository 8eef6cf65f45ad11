package jobs

import (
	"context"
	"maps"
	"slices"
	"strings"
)

type traceKey struct{}

// WithTraceContext returns a copy of ctx whose runs pass carrier on to the
// work they start: the run's trace context as a propagator writes it
// (W3C "traceparent" and "tracestate", perhaps "baggage"), keyed by
// lower-case header name. The scheduler fills it from its propagator, so
// this package needs no tracing library. An HTTP job sends each entry as a
// request header; a command job finds each in its environment under the
// upper-cased name (TRACEPARENT, TRACESTATE: OpenTelemetry's convention for
// environment variables as a carrier). A nil or empty carrier sends nothing.
func WithTraceContext(ctx context.Context, carrier map[string]string) context.Context {
	return context.WithValue(ctx, traceKey{}, carrier)
}

// TraceContext returns the carrier set by WithTraceContext, or nil. A Go
// function job can extract it with its own propagator
// (propagation.MapCarrier) to continue the run's trace.
func TraceContext(ctx context.Context) map[string]string {
	c, _ := ctx.Value(traceKey{}).(map[string]string)
	return c
}

// traceEnv returns the trace context of ctx as environment variables, in a
// stable order: the name upper-cased, any character other than a letter,
// digit or underscore replaced by an underscore.
func traceEnv(ctx context.Context) [][2]string {
	c := TraceContext(ctx)
	if len(c) == 0 {
		return nil
	}
	out := make([][2]string, 0, len(c))
	for _, k := range slices.Sorted(maps.Keys(c)) {
		v := c[k]
		if k == "" || strings.IndexByte(v, 0) >= 0 {
			continue
		}
		name := strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z':
				return r - 'a' + 'A'
			case r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
				return r
			}
			return '_'
		}, k)
		out = append(out, [2]string{name, v})
	}
	return out
}

// traceHeader reports whether name is a header the trace context may set:
// a valid field name that is none of the run's own headers.
func traceHeader(name, value string) bool {
	return httpToken(name) && !strings.ContainsAny(value, "\r\n\x00") && !ReservedHeader(name)
}
