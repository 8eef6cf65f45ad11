package scheduler_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// The success ratio over a job's whole kept history (Overview's
// KeptStarted and KeptSucceeded, which the store counts as it files and
// trims records) matches the history the store keeps: after the history is
// trimmed by history_limit, with skipped runs among the kept ones, after
// history_limit is lowered, and after the counts were lost (a store from
// before them).
func TestKeptCountsMatchHistory(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m, _ := redistest.MiniPipe(t)
		keptScenario(t, func() *redis.Client { return redistest.PipeClient(t, m) })
	})
}

func TestKeptCountsMatchHistoryRealRedis(t *testing.T) {
	testkit.Long(t) // TestKeptCountsMatchHistory (miniredis) runs by default
	srv := redistest.Start(t)
	keptScenario(t, func() *redis.Client { return srv.Client(t, nil) })
}

func keptScenario(t *testing.T, client func() *redis.Client) {
	ctx := context.Background()
	ctl := schedtest.RedisStore(t, client()).Control()
	var ran atomic.Int64
	table := func(limit int) []scheduler.Job {
		return []scheduler.Job{{Name: "tally", Schedule: "@every 1s", HistoryLimit: limit,
			Handler: jobs.Func(func(context.Context) error {
				if ran.Add(1)%3 == 0 {
					return errors.New("every third run fails")
				}
				return nil
			})}}
	}
	// run runs one replica until cond holds.
	run := func(limit int, what string, cond func() bool) {
		t.Helper()
		rdb := client()
		establish(t, rdb, table(limit))
		s, err := scheduler.New(schedtest.RedisStore(t, rdb), table(limit), scheduler.WithLogger(quiet), scheduler.WithSyncInterval(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { _ = s.Run(rctx) })
		testkit.WaitFor(t, 60*time.Second, what, cond)
		cancel()
		wg.Wait()
	}
	history := func() []scheduler.Run {
		t.Helper()
		h, err := ctl.History(ctx, "tally", 1000)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	check := func(when string, kept int) {
		t.Helper()
		h := history()
		if len(h) != kept {
			t.Fatalf("%s: the history keeps %d records, want %d", when, len(h), kept)
		}
		started, ok := 0, 0
		for _, r := range h {
			if r.Decision == scheduler.Started {
				started++
				if r.Outcome == scheduler.Succeeded {
					ok++
				}
			}
		}
		ov, err := ctl.Overview(ctx, []string{"tally"}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if ov[0].KeptStarted != started || ov[0].KeptSucceeded != ok {
			t.Fatalf("%s: counted %d started, %d succeeded; the kept history holds %d started, %d succeeded",
				when, ov[0].KeptStarted, ov[0].KeptSucceeded, started, ok)
		}
		t.Logf("%s: %d kept, %d started, %d succeeded", when, kept, started, ok)
	}

	run(5, "8 runs", func() bool { return ran.Load() >= 8 })
	check("trimmed to 5", 5)

	if err := ctl.Pause(ctx, "tally"); err != nil {
		t.Fatal(err)
	}
	skipped := func() int {
		n := 0
		for _, r := range history() {
			if r.Outcome == scheduler.SkippedPaused {
				n++
			}
		}
		return n
	}
	run(5, "2 skipped instants", func() bool { return skipped() >= 2 })
	if err := ctl.Resume(ctx, "tally"); err != nil {
		t.Fatal(err)
	}
	from := ran.Load()
	run(5, "2 more runs", func() bool { return ran.Load() >= from+2 })
	check("skipped runs filed and trimmed", 5)

	// A store from before the counts: the overview counts what it reads
	// until the next record filed counts the whole list.
	rdb := client()
	if err := rdb.HDel(ctx, "solocron:{tally}:meta", "h:n", "h:s", "h:ok").Err(); err != nil {
		t.Fatal(err)
	}
	from = ran.Load()
	run(5, "1 more run", func() bool { return ran.Load() >= from+1 })
	check("counted afresh", 5)

	// A lower history_limit trims several records at once.
	from = ran.Load()
	run(2, "1 more run", func() bool { return ran.Load() >= from+1 })
	check("history_limit lowered to 2", 2)
}

// On Redlock the counts are those of the master that kept the most runs.
func TestKeptCountsRedlock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newRLCluster(t)
		var ran atomic.Int64
		c.replicas(1, []scheduler.Job{{Name: "tally", Schedule: "@every 1s", HistoryLimit: 4,
			Handler: jobs.Func(func(context.Context) error {
				if ran.Add(1)%3 == 0 {
					return errors.New("every third run fails")
				}
				return nil
			})}})
		time.Sleep(9 * time.Second)
		c.stop()
		started, ok := 0, 0
		h := c.history("tally")
		for _, r := range h {
			if r.Decision == scheduler.Started {
				started++
				if r.Outcome == scheduler.Succeeded {
					ok++
				}
			}
		}
		ov, err := c.ctl.Overview(context.Background(), []string{"tally"}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 4 || ov[0].KeptStarted != started || ov[0].KeptSucceeded != ok {
			t.Fatalf("counted %d started, %d succeeded; the kept history holds %d records, %d started, %d succeeded",
				ov[0].KeptStarted, ov[0].KeptSucceeded, len(h), started, ok)
		}
	})
}
