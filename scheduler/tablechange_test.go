package scheduler_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/notify"
	"github.com/solocron/solocron/scheduler"
)

// Two replicas on one real redis-server run two tables at once, as during a
// rolling deploy: in one, job px is in no pool with concurrency 1; in the
// other it sits in pool p (size 1) with concurrency 2. They swap tables by
// reload while runs are in flight, then the job is paused and one replica
// restarts with the other table. Each run id starts once, never more runs
// in flight than the largest limit in force, the pause holds through the
// reload and the restart, the history keeps every run, and every run's
// failed event (those in flight across a reload too) is delivered once.
// The same on a Redis Cluster, where the pool's slot is taken apart.
func TestTableChangesKeepTheJobsState(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		client func(t *testing.T) func() redis.UniversalClient
	}{
		{"standalone", func(t *testing.T) func() redis.UniversalClient {
			srv := redistest.Start(t)
			return func() redis.UniversalClient { return srv.Client(t, nil) }
		}},
		{"cluster", func(t *testing.T) func() redis.UniversalClient {
			cl := redistest.StartCluster(t, 3, nil)
			return func() redis.UniversalClient { return cl.Client(t, nil) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "cluster" {
				testkit.Long(t) // a Redis Cluster, ~22 s; the standalone run plays the same changes by default
			}
			// Not t.Parallel: within the test's own parallel slot it starts
			// now; a parallel subtest would wait behind every other
			// parallel test of the package and end the package's run.
			tableChanges(t, tc.client(t))
		})
	}
}

func tableChanges(t *testing.T, client func() redis.UniversalClient) {
	rcv := newReceiver(t)
	f := newFleet(t)
	body := func(ctx context.Context) error {
		select {
		case <-time.After(1200 * time.Millisecond):
		case <-ctx.Done():
		}
		return errors.New("boom")
	}
	v1 := []scheduler.Job{{Name: "px", Schedule: "@every 1s", Handler: f.ledger.Job(body), Notify: []string{"ops"}}}
	v2 := []scheduler.Job{{Name: "px", Schedule: "@every 1s", Handler: f.ledger.Job(body), Notify: []string{"ops"},
		Concurrency: 2, Pool: "p", PoolSize: 1}}
	tg := rcv.target(notify.Failed)
	replica := func(id string, table []scheduler.Job) (*scheduler.Scheduler, func()) {
		s, err := scheduler.New(schedtest.RedisStore(t, client()), table, scheduler.WithReplicaID(id),
			scheduler.WithLogger(quiet), scheduler.WithSyncInterval(200*time.Millisecond), scheduler.WithNotifications(tg))
		if err != nil {
			t.Fatal(err)
		}
		return s, f.run(s)
	}
	a, _ := replica("a", v1)
	b, stopB := replica("b", v2)
	started := func() int { return len(f.ledger.Starts()) }
	testkit.WaitFor(t, 30*time.Second, "4 runs started under two tables", func() bool { return started() >= 4 })
	// Swapped while runs are in flight.
	if err := a.Reload(v2); err != nil {
		t.Fatal(err)
	}
	if err := b.Reload(v1); err != nil {
		t.Fatal(err)
	}
	n := started()
	testkit.WaitFor(t, 30*time.Second, "4 more runs after the reloads", func() bool { return started() >= n+4 })

	ctl := schedtest.RedisStore(t, client()).Control()
	ctx := context.Background()
	if err := ctl.Pause(ctx, "px"); err != nil {
		t.Fatal(err)
	}
	if err := a.Reload(v1); err != nil {
		t.Fatal(err)
	}
	stopB()
	replica("b", v2)
	time.Sleep(1500 * time.Millisecond) // runs started before the pause end
	paused := started()
	time.Sleep(3 * time.Second)
	if n := started(); n != paused {
		t.Errorf("%d runs started after the job was paused, reloaded and a replica restarted with another table", n-paused)
	}
	if st, err := ctl.Status(ctx, "px", 1); err != nil || !st.Paused {
		t.Errorf("status after the moves: %+v, %v; want paused", st, err)
	}
	testkit.WaitFor(t, 30*time.Second, "a failed event for every run", func() bool { return len(rcv.posts()) >= paused })
	time.Sleep(time.Second) // time for a duplicate
	f.stop()

	for _, d := range f.ledger.Duplicates() {
		t.Errorf("started more than once: %s", d)
	}
	if m := f.ledger.MaxInFlight("px"); m > 2 {
		t.Errorf("%d runs in flight at once; the largest limit in force is 2", m)
	}
	hist, err := ctl.History(ctx, "px", 100)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, r := range hist {
		kept = append(kept, r.ID)
	}
	for id := range f.ledger.Starts() {
		if !slices.Contains(kept, id) {
			t.Errorf("run %s started but is not in the history", id)
		}
	}
	if n := client().ZCard(ctx, "solocron:{pool:p}:held").Val(); n != 0 {
		t.Errorf("%d slots of pool p held after every replica stopped", n)
	}
	events := rcv.byDelivery()
	for id := range f.ledger.Starts() {
		if n := events[id+":failed"]; n != 1 {
			t.Errorf("run %s: its failed event delivered %d times, want 1", id, n)
		}
	}
}

// A queued run is admitted by the limits of the table in force, not of the
// one it was queued under: a manual run waiting behind a long run starts
// as soon as a reload raises the job's concurrency.
func TestQueuedRunAdmittedByTheLimitInForce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		table := func(n int) []scheduler.Job {
			return []scheduler.Job{{Name: "q", Schedule: "@yearly", Concurrency: n, Handler: c.ledger.Job(sleepJob(time.Minute))}}
		}
		s, _ := c.replica("a", table(1))
		ctx := context.Background()
		for range 2 {
			if _, err := c.ctl.Trigger(ctx, "q"); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(5 * time.Second)
		if n := len(c.ledger.Starts()); n != 1 {
			t.Fatalf("%d runs started at concurrency 1, want 1 (the other queued)", n)
		}
		if err := s.Reload(table(2)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		if n := len(c.ledger.Starts()); n != 2 {
			t.Errorf("%d runs started 3s after the reload raised concurrency to 2, want 2", n)
		}
		c.stop()
	})
}

// A table that claims a run later than another table keeps its record (a
// jitter raised from 0 to a minute, by a rolling deploy or by a reload)
// still finds the run decided: its record is kept as long as the longest
// retention any table claims with, and a run decided before that rose,
// its record kept less, is refused rather than started again.
//
// A jitter may not be longer than the schedule's interval (and a table
// whose interval is that long keeps its records two intervals), so the
// later table here also runs the job every minute: the instants it shares
// with the first table's every-second ones are claimed up to 59 s late,
// while the first table keeps their records 25 s (2 skews, starting
// deadline, max wait, 1 s).
func TestRecordsOutliveEveryTablesClaims(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		reload bool
	}{{"two tables live", false}, {"reload", true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t)
				job := func(jitter time.Duration) []scheduler.Job {
					sched := "@every 1s"
					if jitter > 0 {
						sched = "@every 1m"
					}
					return []scheduler.Job{{Name: "j", Schedule: sched, Jitter: jitter,
						Handler: c.ledger.Job(sleepJob(100 * time.Millisecond))}}
				}
				var logs logBuffer
				a, _ := c.replica("a", job(0), scheduler.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
				time.Sleep(2 * time.Minute)
				bStart := time.Now()
				if tc.reload {
					if err := a.Reload(job(59 * time.Second)); err != nil {
						t.Fatal(err)
					}
				} else {
					c.replica("b", job(59*time.Second), scheduler.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
				}
				time.Sleep(2 * time.Minute)
				c.stop()
				for _, d := range c.ledger.Duplicates() {
					t.Errorf("started more than once: %s", d)
				}
				if n := len(c.ledger.Starts()); n < 120 {
					t.Errorf("%d runs started, want at least those of the first 2 minutes of an every-second job", n)
				}
				// Runs refused because another table may have decided them
				// (the later table's first ones: it starts with the
				// instants of the last minute, the first table's records
				// of them kept 25 s) are expected: not a warning.
				for l := range strings.Lines(logs.String()) {
					if strings.Contains(l, `level=WARN msg="run not claimed"`) {
						t.Errorf("logged: %s", l)
					}
				}
				// And only those: the first refusal keeps b's longer
				// retention, and a's records of the later runs last as long.
				refused := 0
				for l := range strings.Lines(logs.String()) {
					if !strings.Contains(l, `level=INFO msg="run not claimed"`) {
						continue
					}
					refused++
					_, at, _ := strings.Cut(l, "run_id=j@")
					at, _, _ = strings.Cut(at, " ")
					if sched, err := time.Parse(time.RFC3339, at); err != nil || sched.After(bStart.Add(time.Minute)) {
						t.Errorf("refused %s, more than a minute after b started at %s", at, bStart.Format(time.TimeOnly))
					}
				}
				if refused == 0 {
					t.Errorf("no run refused: the later table's first instants were decided by the first table, their records expired")
				}
			})
		})
	}
}

// A replica that starts with a table whose schedule has instants the other
// table's has not (every minute → every 10 s, with a catch-up window) does
// not take the instants nobody decided since the job's last run for an
// outage: the other replica was up all along, and ran the job as its table
// said. It neither catches them up nor records them missed.
func TestScheduleChangeIsNotAnOutage(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		job := func(sched string, window time.Duration) []scheduler.Job {
			return []scheduler.Job{{Name: "j", Schedule: sched, CatchupWindow: window, Catchup: scheduler.CatchupAll,
				Handler: c.ledger.Job(sleepJob(100 * time.Millisecond))}}
		}
		c.replica("a", job("@every 1m", 0))
		time.Sleep(time.Minute + 55*time.Second)
		c.replica("b", job("@every 10s", time.Minute))
		time.Sleep(30 * time.Second)
		c.stop()
		for _, r := range c.history("j") {
			if r.Kind == scheduler.KindCatchup || r.Outcome == scheduler.Missed {
				t.Errorf("%s: %s %s (%s); no replica was down", r.ID, r.Kind, r.Outcome, r.Error)
			}
		}
		if n := len(c.ledger.Starts()); n < 5 {
			t.Errorf("%d runs started, want the 2 of the first table and those of the second after it started", n)
		}
	})
}
