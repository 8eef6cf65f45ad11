package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
)

// A replica that read a finished backfill forgets its hint only if the
// hint is still that backfill's: one started between the read and the
// forget keeps it, and runs. Forced interleaving: the beat's read, a new
// backfill, then the beat's forget.
func TestBackfillForgetKeepsANewBackfillsHint(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	s, err := newStore(c, config{prefix: "bff"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ctl := &Control{store: s}
	job := Job{Name: "bf", Schedule: "@every 1m"}
	from := time.Now().Add(-3 * time.Hour).Truncate(time.Hour)
	if _, err := ctl.Backfill(ctx, job, from, from.Add(9*time.Minute), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.CancelBackfill(ctx, job.Name); err != nil {
		t.Fatal(err)
	}
	// The beat: the heartbeat's hints, then the backfill's state.
	if _, _, err := s.manualHints(ctx, hintReq{since: time.Now(), ttl: time.Minute}); err != nil {
		t.Fatal(err)
	}
	hints, _ := s.backfillJobs(ctx)
	if len(hints) != 1 || hints[0].job != job.Name {
		t.Fatalf("hints %+v, want the job's", hints)
	}
	st, err := ctl.BackfillStatus(ctx, job.Name)
	if err != nil || st == nil || !st.Done() {
		t.Fatalf("first backfill %+v, %v: want done", st, err)
	}
	// A backfill started in between.
	second, err := ctl.Backfill(ctx, job, from, from.Add(4*time.Minute), 1)
	if err != nil {
		t.Fatal(err)
	}
	// The beat forgets what it read.
	if err := s.backfillForget(ctx, hints[0]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.manualHints(ctx, hintReq{since: time.Now(), ttl: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if hints, _ := s.backfillJobs(ctx); len(hints) != 1 || hints[0].job != job.Name {
		t.Fatalf("after forgetting the finished backfill: hints %+v, want the new backfill's (id %s)", hints, second.ID)
	}
	// Once the new one is read and forgotten as done, the hint goes.
	if _, err := ctl.CancelBackfill(ctx, job.Name); err != nil {
		t.Fatal(err)
	}
	hints, _ = s.backfillJobs(ctx)
	if err := s.backfillForget(ctx, hints[0]); err != nil {
		t.Fatal(err)
	}
	if n, err := c.ZCard(ctx, s.backfillHintKey()).Result(); err != nil || n != 0 {
		t.Fatalf("hint key holds %d entries (%v), want none", n, err)
	}
}
