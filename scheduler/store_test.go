package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/solocron/solocron/scheduler"
)

// Redis' memory is bounded: a job's pending manual requests (ErrQueueFull
// beyond MaxPendingManual), its history (history_limit at most
// MaxHistoryLimit) and each record's error text (2 KiB).
func TestStoreMemoryIsBounded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		ctx := context.Background()
		for i := range scheduler.MaxPendingManual {
			if _, err := c.ctl.Trigger(ctx, "nobody"); err != nil {
				t.Fatalf("trigger %d: %v", i, err)
			}
		}
		if _, err := c.ctl.Trigger(ctx, "nobody"); !errors.Is(err, scheduler.ErrQueueFull) {
			t.Errorf("trigger beyond the bound: %v, want ErrQueueFull", err)
		}
		if st, _ := c.ctl.Status(ctx, "nobody", 1); st.PendingManual != scheduler.MaxPendingManual {
			t.Errorf("%d pending, want %d", st.PendingManual, scheduler.MaxPendingManual)
		}

		big := scheduler.Job{Name: "h", Schedule: "@every 1s", HistoryLimit: scheduler.MaxHistoryLimit + 1, Handler: c.ledger.Job(nil)}
		if err := scheduler.ValidateTable([]scheduler.Job{big}); err == nil || !strings.Contains(err.Error(), "jobs[0].HistoryLimit") {
			t.Errorf("history_limit %d accepted: %v", big.HistoryLimit, err)
		}

		c.replicas(1, []scheduler.Job{{Name: "loud", Schedule: "@every 1s", Handler: c.ledger.Job(func(context.Context) error {
			return errors.New(strings.Repeat("é", 10000))
		})}})
		time.Sleep(6 * time.Second)
		c.stop()
		h := c.history("loud")
		if len(h) == 0 {
			t.Fatal("no runs recorded")
		}
		for _, r := range h {
			if len(r.Error) > 2048 || !utf8.ValidString(r.Error) || !strings.HasSuffix(r.Error, "(truncated)") {
				t.Errorf("record error of %d bytes (valid UTF-8: %v), want at most 2048, marked truncated", len(r.Error), utf8.ValidString(r.Error))
			}
		}
	})
}
