package scheduler_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
)

// warnLog collects the warnings and errors of a test's replicas and prints
// them if the test fails: a scenario whose runs went missing then says why
// (a claim taken back, a store unreachable), with each line's time.
type warnLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func newWarnLog(t *testing.T) *warnLog {
	w := &warnLog{}
	t.Cleanup(func() {
		if t.Failed() {
			w.mu.Lock()
			defer w.mu.Unlock()
			t.Logf("the replicas' warnings:\n%s", w.buf.String())
		}
	})
	return w
}

func (w *warnLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// logger is a replica's logger (the replica adds its id to each line).
func (w *warnLog) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
