package scheduler_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// serverClock keeps the in-process store's TIME on the replica's clock, so
// a test can live on any date while fake time runs in the bubble.
type serverClock struct {
	m   *miniredis.Miniredis
	clk scheduler.Clock
}

func (h serverClock) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h serverClock) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.m.SetTime(h.clk.Now())
		return next(ctx, cmd)
	}
}
func (h serverClock) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.m.SetTime(h.clk.Now())
		return next(ctx, cmds)
	}
}

// On DST nights a job runs at the instants the documented policy gives:
// a fixed wall time that does not exist runs once at the transition; one
// that occurs twice runs once, the first time; wildcard-hour specs follow
// elapsed time and run in both passes of a repeated hour. By default the
// New York nights play each of the three rules once; SOLOCRON_FULL=1 (as CI
// sets) plays the Berlin nights too, which cost as much again.
func TestDSTNights(t *testing.T) {
	t.Parallel()
	utc := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	for _, tc := range []struct {
		name, tz, spec string
		from           string
		want           []string // every run in the 12h after from
		long           bool     // SOLOCRON_FULL=1 only: a rule a default night plays too
	}{
		{"berlin-spring-forward", "Europe/Berlin", "30 2 * * *", "2026-03-28T20:00:00Z", []string{"2026-03-29T01:00:00Z"}, true},
		{"berlin-fall-back", "Europe/Berlin", "30 2 * * *", "2026-10-24T20:00:00Z", []string{"2026-10-25T00:30:00Z"}, true},
		{"newyork-spring-forward", "America/New_York", "30 2 * * *", "2026-03-08T00:00:00Z", []string{"2026-03-08T07:00:00Z"}, false},
		{"newyork-fall-back", "America/New_York", "30 1 * * *", "2026-11-01T00:00:00Z", []string{"2026-11-01T05:30:00Z"}, false},
		{"newyork-fall-back-wildcard-hour", "America/New_York", "30 * * * *", "2026-11-01T03:45:00Z",
			[]string{"2026-11-01T04:30:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:30:00Z", "2026-11-01T08:30:00Z",
				"2026-11-01T09:30:00Z", "2026-11-01T10:30:00Z", "2026-11-01T11:30:00Z", "2026-11-01T12:30:00Z", "2026-11-01T13:30:00Z",
				"2026-11-01T14:30:00Z", "2026-11-01T15:30:00Z"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.long {
				testkit.Long(t)
			}
			t.Parallel() // each night is a bubble of its own
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t)
				off := utc(tc.from).Sub(time.Now())
				clk := scheduler.ClockFunc(func() time.Time { return time.Now().Add(off) })
				table := []scheduler.Job{{Name: "dst", Schedule: tc.spec, Timezone: tc.tz, Handler: c.ledger.Job(nil)}}
				for _, name := range []string{"a", "b"} {
					rdb := c.client()
					rdb.AddHook(serverClock{m: c.m, clk: clk})
					s, err := scheduler.New(schedtest.RedisStore(t, rdb), table, scheduler.WithReplicaID(name), scheduler.WithClock(clk),
						scheduler.WithLogger(quiet), scheduler.WithSyncInterval(time.Hour))
					if err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan struct{})
					go func() { _ = s.Run(ctx); close(done) }()
					defer func() { cancel(); <-done }()
				}
				time.Sleep(12 * time.Hour)
				var got []string
				for _, e := range c.ledger.Runs("dst") {
					got = append(got, e.Scheduled.UTC().Format(time.RFC3339))
				}
				if len(got) != len(tc.want) {
					t.Fatalf("runs %v, want %v", got, tc.want)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Fatalf("runs %v, want %v", got, tc.want)
					}
				}
				if d := c.ledger.Duplicates(); len(d) > 0 {
					t.Fatalf("duplicates %v", d)
				}
			})
		})
	}
}
