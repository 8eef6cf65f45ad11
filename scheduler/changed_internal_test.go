package scheduler

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
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
	st, err := newStore(c, backendConfig{prefix: "chg", pools: &poolPlace{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.preload(ctx); err != nil {
		t.Fatal(err)
	}
	lookback := changedLookback(time.Second, 2*time.Second)
	beat := func(after int64, publish ...string) hints {
		t.Helper()
		h, _, err := st.manualHints(ctx, hintReq{since: time.Now(), ttl: time.Minute,
			changedSince: time.Now().Add(-lookback), changedAfter: after, changed: publish})
		if err != nil {
			t.Fatal(err)
		}
		if h.changedAt <= 0 {
			t.Fatalf("no cursor: %+v", h)
		}
		return h
	}
	first := beat(0, "a|1|x")
	if !slices.Contains(first.changed, "a|1|x") {
		t.Fatalf("first read %v, want a's change", first.changed)
	}
	second := beat(first.changedAt, "b|2|y")
	if slices.Contains(second.changed, "a|1|x") {
		t.Errorf("second read %v: a's change read again", second.changed)
	}
	if !slices.Contains(second.changed, "b|2|y") {
		t.Errorf("second read %v, want b's change", second.changed)
	}
	// Another replica publishes after that read (its clock says nothing
	// of where the entry goes: its score rises past every earlier one).
	if _, _, err := st.manualHints(ctx, hintReq{since: time.Now(), ttl: time.Minute, changed: []string{"c|3|z"}}); err != nil {
		t.Fatal(err)
	}
	third := beat(second.changedAt)
	if !slices.Equal(third.changed, []string{"c|3|z"}) {
		t.Errorf("third read %v, want c's change alone", third.changed)
	}
}
