package scheduler

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// A heartbeat reads each published statistics change once: the next read
// starts where the last one ended (changed.lua's cursor), instead of
// looking back two heartbeats and the clock skew (which read every change
// ~4 times on every replica). A change published right after a read, in
// the same millisecond or not, is read by the next.
func TestStatsChangesReadOnce(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	ctx := context.Background()
	st, err := store.NewRedis(c, store.BackendConfig{Prefix: "chg", Pools: &store.PoolPlace{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Preload(ctx); err != nil {
		t.Fatal(err)
	}
	lookback := changedLookback(time.Second, 2*time.Second)
	beat := func(after int64, publish ...string) store.Hints {
		t.Helper()
		h, _, err := st.ManualHints(ctx, store.HintReq{Since: time.Now(), TTL: time.Minute,
			ChangedSince: time.Now().Add(-lookback), ChangedAfter: after, Changed: publish})
		if err != nil {
			t.Fatal(err)
		}
		if h.ChangedAt <= 0 {
			t.Fatalf("no cursor: %+v", h)
		}
		return h
	}
	first := beat(0, "a|1|x")
	if !slices.Contains(first.Changed, "a|1|x") {
		t.Fatalf("first read %v, want a's change", first.Changed)
	}
	second := beat(first.ChangedAt, "b|2|y")
	if slices.Contains(second.Changed, "a|1|x") {
		t.Errorf("second read %v: a's change read again", second.Changed)
	}
	if !slices.Contains(second.Changed, "b|2|y") {
		t.Errorf("second read %v, want b's change", second.Changed)
	}
	// Another replica publishes after that read (its clock says nothing
	// of where the entry goes: its score rises past every earlier one).
	if _, _, err := st.ManualHints(ctx, store.HintReq{Since: time.Now(), TTL: time.Minute, Changed: []string{"c|3|z"}}); err != nil {
		t.Fatal(err)
	}
	third := beat(second.ChangedAt)
	if !slices.Equal(third.Changed, []string{"c|3|z"}) {
		t.Errorf("third read %v, want c's change alone", third.Changed)
	}
}
