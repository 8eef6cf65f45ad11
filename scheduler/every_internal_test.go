package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// every runs no round once its context is done, even when a tick is
// waiting too (a round longer than the period leaves one): select picks
// between the two at random, and a stopped loop ran a round more about one
// time in two. Twenty trials: without the check, all pass with odds of one
// in a million.
func TestEveryRunsNoRoundOnceDone(t *testing.T) {
	t.Parallel()
	for range 20 {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			rounds := 0
			every(ctx, time.Second, func() {
				rounds++
				if rounds == 1 {
					cancel() // stopped during the first round...
				}
				time.Sleep(1500 * time.Millisecond) // ...which outlasts the period
			})
			if rounds != 1 {
				t.Fatalf("%d rounds after the context ended during the first; want 1", rounds)
			}
		})
	}
}
