package scheduler_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// tripCounter counts round trips: one per command or pipeline sent. A new
// connection's handshake (HELLO, CLIENT SETINFO, CLIENT MAINT_NOTIFICATIONS)
// passes through the hooks too when the pool dials during the measured
// call; it is the client's, not the operation's, and is not counted.
type tripCounter struct{ n atomic.Int64 }

func handshake(cmds ...redis.Cmder) bool {
	for _, c := range cmds {
		if n := c.Name(); n != "hello" && n != "client" {
			return false
		}
	}
	return len(cmds) > 0
}

func (c *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !handshake(cmd) {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (c *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !handshake(cmds...) {
			c.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// The overview of a thousand jobs, one of them running, costs two round
// trips, and shows the running run with its lease; HistoryPage pages.
func TestOverviewRoundTrips(t *testing.T) {
	t.Parallel()
	srv := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	release := make(chan struct{})
	busy := jobs.Func(func(ctx context.Context) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	s, err := scheduler.New(schedtest.RedisStore(t, rdb), []scheduler.Job{{Name: "busy", Schedule: "@every 1h", Handler: busy}},
		scheduler.WithLogger(quiet), scheduler.WithSyncInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	stop := newFleet(t).run(s)
	defer stop()
	defer close(release)
	ctl := s.Control()
	for range 3 {
		if _, err := ctl.Trigger(t.Context(), "busy"); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"busy"}
	for i := range 999 {
		names = append(names, fmt.Sprintf("idle-%d", i))
	}
	var ov []scheduler.Overview
	counted := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	var trips tripCounter
	counted.AddHook(&trips)
	cctl := schedtest.RedisStore(t, counted).Control()
	testkit.WaitFor(t, 10*time.Second, "a run in flight", func() bool {
		trips.n.Store(0)
		ov, err = cctl.Overview(t.Context(), names, 5)
		return err == nil && len(ov[0].Running) == 1
	})
	if got := trips.n.Load(); got != 2 {
		t.Errorf("overview of %d jobs took %d round trips, want 2", len(names), got)
	}
	r := ov[0].Running[0]
	if until := ov[0].LeaseUntil[r.ID]; until.Before(time.Now()) || until.After(time.Now().Add(time.Minute)) {
		t.Errorf("lease of %s until %s", r.ID, until)
	}
	if ov[0].PendingManual+ov[0].Waiting > 2 || ov[1].Job != "idle-0" || len(ov[1].Running) != 0 {
		t.Errorf("overview: %+v / %+v", ov[0].Status, ov[1].Status)
	}
	if _, err := cctl.HistoryPage(t.Context(), "busy", 0, 10); err != nil {
		t.Fatal(err)
	}
}
