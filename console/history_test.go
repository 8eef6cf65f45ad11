package console_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// The success ratio on the jobs page and on a job's page is over the job's
// whole kept history, not over the runs either page reads (the last one on
// the jobs page, the timeline's 60 on a job's page).
func TestSuccessRatioOverKeptHistory(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	c := newClusterOf(t, 1, []scheduler.Job{{Name: "flip", Schedule: "@every 1h", HistoryLimit: 70,
		Handler: jobs.Func(func(context.Context) error {
			if n.Add(1) == 1 {
				return errors.New("the first run fails")
			}
			return nil
		})}})
	for range 62 {
		c.runOnce(t, "flip")
	}
	h := c.console(t, console.Config{})
	for _, path := range []string{"/", "/jobs/flip"} {
		if body := get(t, h, path).Body.String(); !strings.Contains(body, "98% of 62") {
			t.Errorf("%s does not show the ratio over the 62 runs kept (98%% of 62)", path)
		}
	}
}

// A run whose own record has expired (record_retention) still has a page
// while the job's history keeps it: the whole entry, its output tail and
// trace id included. A run in neither is 404.
func TestRunPageFromHistoryWhenRecordGone(t *testing.T) {
	t.Parallel()
	srv := miniredis.RunT(t)
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s, err := scheduler.New(schedtest.RedisStore(t, redis.NewClient(&redis.Options{Addr: srv.Addr()})), table(),
		scheduler.WithReplicaID("replica-1"), scheduler.WithLogger(quiet), scheduler.WithSyncInterval(100*time.Millisecond),
		scheduler.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	ctl := s.Control()
	id, err := ctl.Trigger(t.Context(), "evil")
	if err != nil {
		t.Fatal(err)
	}
	var entry scheduler.Run
	testkit.WaitFor(t, 10*time.Second, "run "+id+" in the history", func() bool {
		hist, _ := ctl.History(t.Context(), "evil", 10)
		for _, h := range hist {
			if h.ID == id {
				entry = h
				return true
			}
		}
		return false
	})
	_, suffix, _ := strings.Cut(id, "@")
	if n := srv.Del("solocron:{evil}:run:" + suffix); !n {
		t.Fatal("no live record to delete")
	}
	if r, err := ctl.Get(t.Context(), id); err != nil || r != nil {
		t.Fatalf("the live record is still there: %v %v", r, err)
	}
	h, err := console.New(console.Config{Control: ctl, Jobs: table, Logger: quiet, TraceURL: "https://tempo.example/trace/{trace_id}"})
	if err != nil {
		t.Fatal(err)
	}
	w := get(t, h, "/runs/"+url.PathEscape(id))
	body := w.Body.String()
	for _, want := range []string{
		`<pre class="output" id="output">OUT&lt;script&gt;`, // the output tail, as text
		`href="https://tempo.example/trace/` + entry.TraceID + `"`,
		"has expired", "✗</span> failed", "<dd>" + entry.Replica + " · ",
	} {
		if w.Code != 200 || !strings.Contains(body, want) {
			t.Errorf("run page of an expired record: %d, lacks %q", w.Code, want)
		}
	}
	if len(entry.TraceID) != 32 {
		t.Errorf("history entry's trace id %q", entry.TraceID)
	}
	if w := get(t, h, "/runs/"+url.PathEscape("evil@2001-01-01T00:00:00Z")); w.Code != 404 {
		t.Errorf("a run in neither the records nor the history: %d, want 404", w.Code)
	}
}

// A run page reads the output tail from the job's history, which keeps the
// job's history_limit entries: 100 when the job leaves it at 0. The page
// read 1 then, and every run but the job's latest showed "No output kept".
func TestRunPageOfAnOlderRunShowsItsOutput(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	older := c.runOnce(t, "evil")
	c.runOnce(t, "evil")
	h := c.console(t, console.Config{})
	w := get(t, h, "/runs/"+url.PathEscape(older))
	if w.Code != 200 || !strings.Contains(w.Body.String(), `<pre class="output" id="output">OUT&lt;script&gt;`) {
		t.Errorf("run page of the job's second latest run: %d, its output is not shown", w.Code)
	}
}
