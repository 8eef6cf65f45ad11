package scheduler

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// slowFirstSync is a store whose replica spends delay on its first heartbeat
// before the store answers it, as a table of many jobs catching up did.
type slowFirstSync struct {
	store.Backend
	once  sync.Once
	delay time.Duration
}

func (b *slowFirstSync) Sync(ctx context.Context, replica string, skew, manualTTL time.Duration, reqs []store.SyncReq) ([]store.SyncRes, error) {
	slow := false
	b.once.Do(func() { slow = true })
	if slow {
		time.Sleep(b.delay)
		ctx = context.WithoutCancel(ctx) // the time went on this side, not on Redis'
	}
	return b.Backend.Sync(ctx, replica, skew, manualTTL, reqs)
}

// The only replica starts after an outage, and its first heartbeat (which
// reads the gap the outage left, before anything is claimed) takes longer
// than the starting deadline: the instants due meanwhile are recorded
// missed, as those of the outage are. They were neither the outage's (due
// after the replica started) nor the dispatcher's (planned from the clock
// once that heartbeat returned), and were left with no record: three real
// daemons with 40 jobs catching up 1,000 instants each left the instants
// of their first 2 s so.
func TestInstantsDueDuringTheFirstHeartbeatRecorded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		_, c := redistest.MiniPipe(t)
		st := redisStore(t, c)
		table := []Job{{Name: "tick", Schedule: "@every 1s", StartingDeadline: time.Second,
			Handler: jobs.Func(func(context.Context) error { return nil })}}
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		run := func(delay, d time.Duration) {
			s, err := New(st, table, WithReplicaID("r"), WithLogger(quiet), WithShutdownGrace(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if delay > 0 {
				s.store = &slowFirstSync{Backend: s.store, delay: delay}
			}
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			_ = s.Run(ctx)
		}
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 300*time.Millisecond)))
		run(0, 4*time.Second) // the job's state, and runs
		down := time.Now()
		time.Sleep(3 * time.Second) // the outage
		run(4*time.Second, 10*time.Second)
		end := time.Now()
		time.Sleep(5 * time.Second)

		h, err := st.Control().History(context.Background(), "tick", 1000)
		if err != nil {
			t.Fatal(err)
		}
		got := map[time.Time]int{}
		for _, r := range h {
			got[r.ScheduledAt.UTC()]++
		}
		for at := down.Truncate(time.Second); at.Before(end.Add(-2 * time.Second)); at = at.Add(time.Second) {
			if n := got[at.UTC()]; n != 1 {
				t.Errorf("instant %s (outage from %s, replica back at %s): %d records, want 1",
					at.Format(time.TimeOnly), down.Format(time.TimeOnly), down.Add(3*time.Second).Format(time.TimeOnly), n)
			}
		}
	})
}
