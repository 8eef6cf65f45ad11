package scheduler

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
)

// Runs queued for a slot cost Redis in proportion to the runs that can
// start, not to every run in the queue on every poll. A job with concurrency
// 1 and a long queue (catch-up of a long outage with `catchup: all`, or a
// burst of manual runs) had each of its queued runs read, ranked and
// refreshed ten times a second by every replica: 1,000 queued runs of 40
// jobs kept Redis busy with polls alone, and the first scheduled runs after
// the outage started 5-11 s late. The runs that cannot start yet are now
// polled about once a second (well within the waiter TTL that keeps their
// places), the head of the queue every poll interval.
func TestQueuedRunsPollCostsLittle(t *testing.T) {
	t.Parallel() // real time, little CPU
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	release := make(chan struct{})
	started := make(chan string, 1000)
	table := []Job{{Name: "busy", Schedule: "@every 1h", Overlap: OverlapWait, MaxWait: time.Hour,
		Handler: jobs.Func(func(ctx context.Context) error {
			select {
			case started <- jobs.RunID(ctx):
			default:
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})}}
	s, err := New(redisStore(t, c), table, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	t.Cleanup(func() { stop(); close(release); <-done })

	ctl, err := controlOf(c)
	if err != nil {
		t.Fatal(err)
	}
	const n = 100 // the most manual runs a job may have waiting
	ids := make([]string, n)
	for i := range ids {
		if ids[i], err = ctl.Trigger(context.Background(), "busy"); err != nil {
			t.Fatal(err)
		}
	}
	// One runs, the others wait their turn.
	testkit.WaitFor(t, 30*time.Second, "one run to start and the others to queue", func() bool {
		waiting := 0
		for _, id := range ids {
			if r, err := ctl.Get(context.Background(), id); err == nil && r != nil && r.Outcome == Waiting {
				waiting++
			}
		}
		return len(started) == 1 && waiting == n-1
	})
	before, at := redisCalls(t, c), time.Now()
	// Polled queue places outlive a few seconds (waiter TTL 3 s): a window
	// of several, so every queued run has been polled.
	time.Sleep(4 * time.Second)
	calls, took := redisCalls(t, c)-before, time.Since(at)
	perRunSecond := float64(calls) / (n - 1) / took.Seconds()
	t.Logf("%d Redis commands in %s for %d queued runs: %.1f a queued run a second", calls, took.Round(time.Millisecond), n-1, perRunSecond)
	// Before: ~5 commands a queued run a poll, 10 polls a second (~50).
	if perRunSecond > 8 {
		t.Errorf("%.1f Redis commands a queued run a second, want at most 8", perRunSecond)
	}
	if len(started) != 1 {
		t.Errorf("%d runs started while one held the only slot", len(started))
	}
}

// Between full polls a poll asks about the runs that may be admitted: the
// first by place (as many as the job may run at once), and every run not
// polled yet or whose last poll went unanswered.
func TestPollNowAsksAboutTheHead(t *testing.T) {
	w := func(place int64, unanswered bool) *waiter {
		x := &waiter{place: place}
		if unanswered {
			x.unanswered = time.Now()
		}
		return x
	}
	a, b, c, d, e, f := w(7, false), w(3, false), w(0, false), w(9, true), w(4, false), w(5, false)
	runs := []*waiter{a, b, c, d, e, f}
	for _, tc := range []struct {
		name  string
		full  bool
		limit int
		want  []*waiter
	}{
		{"full", true, 1, runs},
		{"head of one", false, 1, []*waiter{c, b, d}},
		{"head of two", false, 2, []*waiter{c, b, e, d}},
		{"as many as queued", false, 6, runs},
	} {
		got := pollNow(runs, tc.full, tc.limit)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d runs polled, want %d", tc.name, len(got), len(tc.want))
			continue
		}
		for _, x := range tc.want {
			if !slices.Contains(got, x) {
				t.Errorf("%s: the run at place %d (unanswered %v) is not polled", tc.name, x.place, !x.unanswered.IsZero())
			}
		}
	}
}
