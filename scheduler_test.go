// End-to-end tests of Solocron as users run it: several replicas sharing one
// store, racing for the same runs.
package solocron_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// skewedClock is a replica clock off by a fixed amount.
func skewedClock(off time.Duration) scheduler.Clock {
	return scheduler.ClockFunc(func() time.Time { return time.Now().Add(off) })
}

// replicas starts one scheduler per client with the given clock offsets and
// returns a function that stops them all and waits.
func replicas(t *testing.T, clients []*redis.Client, offsets []time.Duration, skew time.Duration, table []scheduler.Job) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, c := range clients {
		s, err := scheduler.New(schedtest.RedisStore(t, c), table,
			scheduler.WithReplicaID("r"+string(rune('0'+i))),
			scheduler.WithMaxClockSkew(skew),
			scheduler.WithClock(skewedClock(offsets[i])),
			scheduler.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = s.Run(ctx) })
	}
	return func() { cancel(); wg.Wait() }
}

// deleteFinishedRuns makes the store forget a run as soon as its holder
// closes it — the bug a scheduler that "cleans up" finished locks has.
type deleteFinishedRuns struct{ c *redis.Client }

func (h deleteFinishedRuns) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h deleteFinishedRuns) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h deleteFinishedRuns) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		// complete.lua: EVALSHA sha k <k meta keys> then per run
		// <run id> <owner> <outcome> <attempts> <error> <entry> <retention> <history limit>
		args := cmd.Args()
		name := cmd.Name()
		if (name != "evalsha" && name != "eval") || len(args) < 3 {
			return err
		}
		keys, _ := args[2].(int)
		if keys > 0 && len(args) == 3+keys+8*keys {
			for i := range keys {
				meta, _ := args[3+i].(string)
				id, _ := args[3+keys+8*i].(string)
				if _, suffix, ok := strings.Cut(id, "@"); ok && strings.HasSuffix(meta, ":meta") {
					h.c.Del(context.WithoutCancel(ctx), strings.TrimSuffix(meta, "meta")+"run:"+suffix)
				}
			}
		}
		return err
	}
}

// skewTicks is how many ticks skewRun plays: 1000 with SOLOCRON_FULL=1 (as
// CI runs it), 150 by default. Each tick is fake time (synctest) but real
// work for five replicas under -race; 150 ticks still make a store that
// deletes finished runs start some twice (TestSkewTestCatchesDeletedFinishedRuns).
func skewTicks() int {
	if testkit.Full() {
		return 1000
	}
	return 150
}

// skewRun runs 5 replicas whose clocks spread over ±2s, the max clock skew,
// for ticks ticks of a job that runs every second, and returns the run ids
// started more than once and the instants never started.
func skewRun(t *testing.T, forget bool, ticks int) (dups []string, gaps []time.Time, runs int) {
	m, _ := redistest.MiniPipe(t)
	const skew = 2 * time.Second
	offsets := []time.Duration{-2 * time.Second, -time.Second, 0, time.Second, 2 * time.Second}
	var clients []*redis.Client
	for range offsets {
		c := redistest.PipeClient(t, m)
		if forget {
			c.AddHook(deleteFinishedRuns{c: c})
		}
		clients = append(clients, c)
	}
	ledger := testkit.NewLedger()
	// As many slots as replicas: only the run records keep a run from
	// starting twice, not a slot some replica's next run already holds
	// (claimed ahead of its instant, by a replica whose clock leads).
	table := []scheduler.Job{{
		Name: "tick", Schedule: "@every 1s", HistoryLimit: 2000, Concurrency: len(offsets),
		Handler: ledger.Job(func(ctx context.Context) error {
			time.Sleep(300 * time.Millisecond)
			return nil
		}),
	}}
	start := time.Now()
	stop := replicas(t, clients, offsets, skew, table)
	time.Sleep(time.Duration(ticks+10) * time.Second)
	stop()

	starts := ledger.Starts()
	// Every instant from the first full window to the last is started once.
	first := start.Add(5 * time.Second).Truncate(time.Second)
	last := start.Add(time.Duration(ticks+5) * time.Second).Truncate(time.Second)
	for at := first; !at.After(last); at = at.Add(time.Second) {
		if starts["tick@"+at.UTC().Format(time.RFC3339)] == 0 {
			gaps = append(gaps, at)
		}
	}
	if len(gaps) > 0 {
		// Say what the store recorded for them.
		if st, err := scheduler.NewRedisStore(clients[0]); err == nil {
			ctl := st.Control()
			hist, _ := ctl.History(context.Background(), "tick", 2000)
			for _, at := range gaps[:min(3, len(gaps))] {
				for _, r := range hist {
					if d := r.ScheduledAt.Sub(at); d >= -2*time.Second && d <= time.Second {
						t.Logf("around the gap: %s: %s by %s, started %s finished %s: %q", r.ID, r.Outcome, r.Replica,
							r.StartedAt.Format("05.000"), r.FinishedAt.Format("05.000"), r.Error)
					}
				}
			}
		}
	}
	return ledger.Duplicates(), gaps, len(starts)
}

// Five replicas, clocks skewed by up to the max clock skew, over 1000 ticks
// (150 by default: skewTicks) of a fast job: every run starts exactly once,
// and none is skipped.
func TestExactlyOnceUnderClockSkew(t *testing.T) {
	t.Parallel() // fake time, CPU-bound: the two fill both cores side by side
	synctest.Test(t, func(t *testing.T) {
		ticks := skewTicks()
		dups, gaps, runs := skewRun(t, false, ticks)
		if len(dups) > 0 {
			t.Errorf("%d runs started more than once, e.g. %v", len(dups), dups[:min(5, len(dups))])
		}
		if len(gaps) > 0 {
			t.Errorf("%d instants never started, e.g. %v", len(gaps), gaps[:min(5, len(gaps))])
		}
		if runs < ticks {
			t.Errorf("only %d runs in %ds of an every-second job", runs, ticks+10)
		}
	})
}

// The same test with a store that deletes finished runs (instead of keeping
// their record past the claim window) must find duplicates: a replica whose
// clock lags claims a run that already ran. This proves the test above can
// catch that bug.
func TestSkewTestCatchesDeletedFinishedRuns(t *testing.T) {
	t.Parallel() // fake time, CPU-bound: the two fill both cores side by side
	synctest.Test(t, func(t *testing.T) {
		dups, _, _ := skewRun(t, true, skewTicks())
		if len(dups) == 0 {
			t.Fatal("no duplicate runs although finished runs were deleted: the skew test cannot catch this bug")
		}
		t.Logf("as expected, deleting finished runs caused %d duplicate starts, e.g. %s", len(dups), dups[0])
	})
}

// Three replicas on a real redis-server, loading the same YAML table as an
// embedding program would (Go functions registered by name): every second's
// run starts exactly once, history records who ran what, and a triggered
// run runs once.
func TestReplicasOnRealRedisFromYAML(t *testing.T) {
	srv := redistest.Start(t)
	table := []byte(`
store:
  url: redis://` + srv.Addr() + `/0
  max_clock_skew: 500ms
defaults:
  timezone: UTC
jobs:
  - name: lottery
    schedule: "* * * * * *"   # every second, 6 fields
    func: draw
    history_limit: 50
  - name: report
    schedule: "@yearly"
    func: draw
`)
	ledger := testkit.NewLedger()
	file, err := config.Parse("solocron.yaml", table, config.WithFuncs(map[string]jobs.Job{"draw": ledger.Job(nil)}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// An established cluster: a job new to the store would record the
	// instants of its first max_clock_skew + claim ahead missed (the
	// data-loss floor of a job state created afresh).
	rdb := srv.Client(t, nil)
	for _, j := range file.Jobs {
		if err := rdb.HSetNX(ctx, "solocron:{"+j.Name+"}:meta", "epoch", "established").Err(); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range 3 {
		s, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil), scheduler.WithKeyPrefix(file.Store.KeyPrefix)), file.Jobs,
			scheduler.WithReplicaID("replica-"+string(rune('a'+i))), scheduler.WithMaxClockSkew(file.Store.MaxClockSkew), scheduler.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = s.Run(ctx) })
	}
	ctl := schedtest.RedisStore(t, srv.Client(t, nil)).Control()
	start := time.Now()
	time.Sleep(1500 * time.Millisecond)
	manual, err := ctl.Trigger(ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	cancel()
	wg.Wait()

	if d := ledger.Duplicates(); len(d) > 0 {
		t.Errorf("runs started more than once: %v", d)
	}
	starts := ledger.Starts()
	first, end := start.Truncate(time.Second).Add(2*time.Second), start.Add(4*time.Second)
	for at := first; at.Before(end); at = at.Add(time.Second) {
		if id := "lottery@" + at.UTC().Format(time.RFC3339); starts[id] != 1 {
			t.Errorf("%s started %d times", id, starts[id])
		}
	}
	if starts[manual] != 1 {
		t.Errorf("triggered run %s started %d times", manual, starts[manual])
	}
	hist, err := ctl.History(context.Background(), "lottery", 50)
	if err != nil || len(hist) < 3 {
		t.Fatalf("history: %d records, %v", len(hist), err)
	}
	inWindow := 0
	for _, r := range hist {
		if r.ScheduledAt.Before(first) || !r.ScheduledAt.Before(end) {
			// Around the start and the shutdown a run may be decided
			// without starting (a claim a stopping replica settles late
			// finds the next instant's run in the slot: skipped_overlap)
			// or be interrupted; one that started still names its replica
			// and token.
			if r.Decision == scheduler.Started && (r.Outcome != scheduler.Succeeded && r.Outcome != scheduler.Interrupted ||
				!strings.HasPrefix(r.Replica, "replica-") || r.FencingToken == 0) {
				t.Errorf("record %+v", r)
			}
			continue
		}
		inWindow++
		if r.Outcome != scheduler.Succeeded || !strings.HasPrefix(r.Replica, "replica-") || r.FencingToken == 0 {
			t.Errorf("record %+v", r)
		}
	}
	if inWindow < 2 {
		t.Errorf("%d records of instants from %s to %s, want one a second", inWindow, first.Format(time.TimeOnly), end.Format(time.TimeOnly))
	}
}
