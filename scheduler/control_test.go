package scheduler_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
)

// A trigger (the request, its bound, its hint) is one round trip once the
// script is loaded.
func TestTriggerIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		rdb := c.client()
		trips := &testkit.RoundTripCounter{}
		rdb.AddHook(trips)
		ctl := schedtest.RedisStore(t, rdb).Control()
		ctx := context.Background()
		if _, err := ctl.Trigger(ctx, "j"); err != nil { // loads the script
			t.Fatal(err)
		}
		before := trips.Load()
		if _, err := ctl.Trigger(ctx, "j"); err != nil {
			t.Fatal(err)
		}
		if n := trips.Load() - before; n != 1 {
			t.Errorf("a trigger took %d round trips, want 1", n)
		}
		if st, _ := ctl.Status(ctx, "j", 1); st.PendingManual != 2 {
			t.Errorf("%d requests pending, want 2", st.PendingManual)
		}
	})
}
