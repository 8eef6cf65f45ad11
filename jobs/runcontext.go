package jobs

import (
	"context"
	"io"
	"log/slog"
)

// RunValues is everything a scheduler hands one attempt of a run through
// its context, set in one value by WithRun: what NewContext, WithOutput,
// WithStopBy, WithTraceContext and WithLogger set one context layer (and one
// allocation) each. The accessors (FromContext, Output, Logger, …) read it
// as they read those.
type RunValues struct {
	Info Info
	// Output, StopBy, Trace: nil leaves the parent context's (if any).
	Output io.Writer
	StopBy *StopBy
	Trace  map[string]string
	// Log gives the run's logger when the job first asks for it (Logger):
	// a run that logs nothing never builds one. nil leaves the parent's.
	Log LoggerSource
}

// LoggerSource gives a logger on demand. It may be asked from several
// goroutines, more than once, and must give the same logger each time.
type LoggerSource interface {
	Logger() *slog.Logger
}

// WithRun returns a copy of ctx carrying v, in one context value.
func WithRun(ctx context.Context, v RunValues) context.Context {
	return &runCtx{Context: ctx, v: v}
}

// runCtx is WithRun's context: one value for the five keys.
type runCtx struct {
	context.Context
	v RunValues
}

func (c *runCtx) Value(key any) any {
	switch key.(type) {
	case infoKey:
		return &c.v.Info // a pointer: no copy boxed at each FromContext
	case outputKey:
		if c.v.Output != nil {
			return c.v.Output
		}
	case stopByKey:
		if c.v.StopBy != nil {
			return c.v.StopBy
		}
	case traceKey:
		if c.v.Trace != nil {
			return c.v.Trace
		}
	case loggerKey:
		if c.v.Log != nil {
			if l := c.v.Log.Logger(); l != nil {
				return l
			}
		}
	}
	return c.Context.Value(key)
}

func (c *runCtx) String() string { return "jobs.WithRun(" + c.v.Info.RunID + ")" }
