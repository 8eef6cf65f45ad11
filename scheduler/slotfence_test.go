package scheduler_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// slotSink is a downstream store that keeps the highest fencing token per
// slot, as examples/fencing does: it refuses a write whose token is below
// its slot's.
type slotSink struct {
	// shared: a replaced run may still run until its next renewal; its
	// slot's new holder has the higher token (which the sink checks).
	shared   bool
	mu       sync.Mutex
	inFlight map[int]string // slot -> run id
	top      map[int]int64
	problems []string
	starts   int
}

func (k *slotSink) job(concurrency int, d time.Duration) jobs.Func {
	return func(ctx context.Context) error {
		info, _ := jobs.FromContext(ctx)
		k.mu.Lock()
		k.starts++
		if info.Slot < 1 || info.Slot > concurrency {
			k.problems = append(k.problems, fmt.Sprintf("%s: slot %d outside 1..%d", info.RunID, info.Slot, concurrency))
		}
		if other, busy := k.inFlight[info.Slot]; busy && !k.shared {
			k.problems = append(k.problems, fmt.Sprintf("%s and %s hold slot %d at once", other, info.RunID, info.Slot))
		}
		if info.FencingToken <= k.top[info.Slot] {
			k.problems = append(k.problems, fmt.Sprintf("%s: token %d not above slot %d's %d", info.RunID, info.FencingToken, info.Slot, k.top[info.Slot]))
		}
		k.inFlight[info.Slot] = info.RunID
		k.top[info.Slot] = info.FencingToken
		k.mu.Unlock()
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		k.mu.Lock()
		if k.inFlight[info.Slot] == info.RunID {
			delete(k.inFlight, info.Slot)
		}
		k.mu.Unlock()
		return nil
	}
}

// With concurrency N every run holds a numbered slot 1..N that no other run
// in flight holds, and each slot's tokens rise.
func TestRunsHoldNumberedSlots(t *testing.T) {
	t.Parallel()
	for _, overlap := range []scheduler.Overlap{scheduler.OverlapSkip, scheduler.OverlapWait, scheduler.OverlapReplace} {
		t.Run(string(overlap), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t)
				sink := &slotSink{inFlight: map[int]string{}, top: map[int]int64{}, shared: overlap == scheduler.OverlapReplace}
				job := scheduler.Job{Name: "batch", Schedule: "@every 1s", Concurrency: 3, Overlap: overlap,
					Handler: c.ledger.Job(sink.job(3, 3500*time.Millisecond))}
				if overlap == scheduler.OverlapWait {
					job.MaxWait = 10 * time.Second
				}
				c.replicas(3, []scheduler.Job{job})
				secs := 16 // 40 with SOLOCRON_FULL=1: ~5 rounds of the three slots by default
				if testkit.Full() {
					secs = 40
				}
				time.Sleep(time.Duration(secs) * time.Second)
				c.stop()
				sink.mu.Lock()
				defer sink.mu.Unlock()
				if sink.starts < secs/2 {
					t.Errorf("only %d runs started", sink.starts)
				}
				for _, p := range sink.problems {
					t.Error(p)
				}
				slots := map[int]bool{}
				for _, r := range c.history("batch") {
					if r.Decision == scheduler.Started {
						slots[r.Slot] = true
					}
				}
				if len(slots) != 3 || !slots[1] || !slots[2] || !slots[3] {
					t.Errorf("records' slots %v, want 1, 2 and 3", slots)
				}
			})
		})
	}
}
