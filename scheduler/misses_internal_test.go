package scheduler

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// answersLost is a store whose claims run but whose answers never come back
// (a link answering everything past the claim timeout).
type answersLost struct{ store.Backend }

func (answersLost) Claim(context.Context, string, time.Duration, time.Duration, []store.StoreClaim) ([]store.ClaimRes, error) {
	return nil, context.DeadlineExceeded
}

// A miss the flush itself sends may be granted — a job that catches up
// starts a missed run — so once its answer is lost the miss is kept for as
// long as the run's record may live (lease and claim timeouts past the
// retention), as a claim the claim loop sent is: only this replica's owner
// token can say the run never started. The flush did not mark its own
// sends, and dropped such a miss at the retention (the search's seed 70430:
// a catch-up run granted to a replica whose answers came 5.8 s late for
// 18 s was left lease_lost, never run).
func TestMissSentByTheFlushKeptWhileItMayHoldTheRun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		_, c := redistest.MiniPipe(t)
		s, err := New(redisStore(t, c), []Job{{Name: "catch", Schedule: "@every 4s", Lease: 6 * time.Second,
			CatchupWindow: time.Minute, Catchup: CatchupAll, Handler: jobs.Func(func(context.Context) error { return nil })}},
			WithReplicaID("r"), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			t.Fatal(err)
		}
		s.store = answersLost{s.store}
		tab, _ := s.table()
		j := tab[0]
		// An instant whose record retention ends 1 s from now, never sent
		// by the claim loop (postponed, then past its starting deadline).
		sched := s.now().Add(-j.retention(s.now()) + time.Second).Truncate(time.Second)
		s.queueMiss(s.newClaim(j, sched, store.RunMiss))
		ctx := context.Background()
		s.recordMissed(ctx, ctx) // granted, perhaps; the answer lost
		time.Sleep(2 * time.Second)
		s.recordMissed(ctx, ctx) // past the retention, within lease + 2 claim timeouts of it
		s.missedMu.Lock()
		left := len(s.missed)
		s.missedMu.Unlock()
		if left != 1 {
			t.Errorf("%d misses queued after a lost answer, past the retention; want the one kept to be asked again", left)
		}
	})
}
