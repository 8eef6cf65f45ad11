package jobs

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

type countingSource struct {
	n int
	l *slog.Logger
}

func (c *countingSource) Logger() *slog.Logger { c.n++; return c.l }

// WithRun sets in one value what NewContext, WithOutput, WithStopBy,
// WithTraceContext and WithLogger set, read by the same accessors; what it
// leaves nil is the parent's; the logger is asked for only when a job asks.
func TestWithRun(t *testing.T) {
	parentOut := &bytes.Buffer{}
	parentLog := slog.New(slog.DiscardHandler)
	parent := WithLogger(WithOutput(context.Background(), parentOut), parentLog)
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	info := Info{Job: "j", RunID: "j@x", ScheduledAt: at, FencingToken: 7, Slot: 2, Attempt: 3, ReplicaID: "r1"}
	tail := NewTail(16)
	sb := NewStopBy(at)
	src := &countingSource{l: slog.New(slog.DiscardHandler)}
	ctx := WithRun(parent, RunValues{Info: info, Output: tail, StopBy: sb, Trace: map[string]string{"traceparent": "x"}, Log: src})
	if got, ok := FromContext(ctx); !ok || got != info {
		t.Errorf("FromContext = %+v, %v; want %+v", got, ok, info)
	}
	if FencingToken(ctx) != 7 || Slot(ctx) != 2 || Attempt(ctx) != 3 || RunID(ctx) != "j@x" || !ScheduledAt(ctx).Equal(at) || ReplicaID(ctx) != "r1" {
		t.Error("accessors do not read WithRun's info")
	}
	if Output(ctx) != io.Writer(tail) || stopByFrom(ctx) != sb || TraceContext(ctx)["traceparent"] != "x" {
		t.Error("output, stop-by or trace context not WithRun's")
	}
	if src.n != 0 {
		t.Fatalf("the logger was made %d times before anyone asked", src.n)
	}
	if Logger(ctx) != src.l || src.n != 1 {
		t.Errorf("Logger is not the source's (asked %d times)", src.n)
	}
	// A value derived further still reads them.
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	if FencingToken(child) != 7 {
		t.Error("a derived context lost the info")
	}
	// Nil fields leave the parent's.
	bare := WithRun(parent, RunValues{Info: info})
	if Output(bare) != io.Writer(parentOut) || Logger(bare) != parentLog || stopByFrom(bare) != nil || TraceContext(bare) != nil {
		t.Error("WithRun's nil fields do not leave the parent's values")
	}
	if _, ok := FromContext(context.Background()); ok {
		t.Error("FromContext found info in a bare context")
	}
}
