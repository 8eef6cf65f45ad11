package scheduler

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Runs that share a start time wait on one gate, which opens at that time
// and never before — on the real clock, where a gate many runs wait on
// spins out its last millisecond.
func TestStartGateOpensAtItsTimeNeverBefore(t *testing.T) {
	var g startGates
	at := time.Now().Add(30 * time.Millisecond)
	const runs = 2 * gateSpinAtLeast
	woke := make([]time.Time, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			if !g.wait(context.Background(), at) {
				t.Error("wait ended without its context ending")
			}
			woke[i] = time.Now()
		})
	}
	wg.Wait()
	for i, w := range woke {
		if w.Before(at) {
			t.Fatalf("run %d woke %s before its time", i, at.Sub(w))
		}
		if late := w.Sub(at); late > time.Second {
			t.Errorf("run %d woke %s late", i, late)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.m) != 0 {
		t.Errorf("%d gates left open after their time", len(g.m))
	}
}

// Under a fake clock a gate does not spin (time stands still while a
// goroutine runs): it sleeps, and opens at its time, rounded up to the
// grain. A waiter whose context ends leaves at once.
func TestStartGateUnderFakeClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var g startGates
		at := time.Now().Add(time.Second + 100*time.Microsecond)
		want := time.Now().Add(time.Second + gateGrain)
		var wg sync.WaitGroup
		for range 2 * gateSpinAtLeast {
			wg.Go(func() {
				if !g.wait(context.Background(), at) {
					t.Error("wait ended without its context ending")
				}
				if now := time.Now(); !now.Equal(want) {
					t.Errorf("opened at %s, want %s", now, want)
				}
			})
		}
		ctx, cancel := context.WithCancel(context.Background())
		wg.Go(func() {
			if g.wait(ctx, at) {
				t.Error("wait did not end with its context")
			}
		})
		time.Sleep(500 * time.Millisecond)
		cancel()
		wg.Wait()
		if g.wait(context.Background(), time.Now().Add(-time.Second)) != true {
			t.Error("a time already past did not pass at once")
		}
	})
}
