package jobs

import (
	"context"
	"io"
	"log/slog"
)

type outputKey struct{}
type loggerKey struct{}

// WithOutput returns a copy of ctx whose runs write their output to w: a
// command's stdout and stderr, an HTTP response's first bytes. The scheduler
// passes a *Tail here so the run record keeps the end of the output. w needs
// no locking of its own (a run serialises its writes) but must not block for
// long: a command's output is not read while a write is pending.
// A nil w means none.
func WithOutput(ctx context.Context, w io.Writer) context.Context {
	return context.WithValue(ctx, outputKey{}, w)
}

// Output returns the writer set by WithOutput, or io.Discard.
func Output(ctx context.Context) io.Writer {
	if w, ok := ctx.Value(outputKey{}).(io.Writer); ok && w != nil {
		return w
	}
	return io.Discard
}

// WithLogger returns a copy of ctx whose runs log through l. The scheduler
// passes a logger that already carries the job and run id. A nil l means
// none.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// Logger returns the logger set by WithLogger, or slog.Default().
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return slog.Default()
}
