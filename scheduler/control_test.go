package scheduler_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/schedtest"
)

// roundTrips counts a client's round trips: a command alone or a pipeline.
type roundTrips struct{ n atomic.Int64 }

func (c *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// A trigger (the request, its bound, its hint) is one round trip once the
// script is loaded.
func TestTriggerIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		rdb := c.client()
		trips := &roundTrips{}
		rdb.AddHook(trips)
		ctl := schedtest.RedisStore(t, rdb).Control()
		ctx := context.Background()
		if _, err := ctl.Trigger(ctx, "j"); err != nil { // loads the script
			t.Fatal(err)
		}
		before := trips.n.Load()
		if _, err := ctl.Trigger(ctx, "j"); err != nil {
			t.Fatal(err)
		}
		if n := trips.n.Load() - before; n != 1 {
			t.Errorf("a trigger took %d round trips, want 1", n)
		}
		if st, _ := ctl.Status(ctx, "j", 1); st.PendingManual != 2 {
			t.Errorf("%d requests pending, want 2", st.PendingManual)
		}
	})
}
