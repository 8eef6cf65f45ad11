package scheduler

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// startGates lets the runs claimed ahead of one instant start together.
// Each would otherwise sleep on a timer of its own: a thousand timers that
// fire at once, each some hundreds of microseconds late (the runtime's
// timers are only as precise as the process' sleep), and each run's own
// bookkeeping in the way of the next. Runs due at the same moment wait on
// one gate instead; the gate wakes a little early and opens at the moment
// itself, and every waiter is ready to run at once.
type startGates struct {
	mu sync.Mutex
	m  map[int64]*gate // by opening time, unix ns
}

type gate struct {
	at      time.Time
	open    chan struct{}
	waiters int // under startGates.mu
}

// gateGrain groups start times: a gate opens at the first multiple of it at
// or after the start time of each run waiting on it (never before).
const gateGrain = 250 * time.Microsecond

// gateSpin is how long before its time a gate's timer fires; the gate then
// waits out the rest by yielding, which is precise. Only a gate that many
// runs wait on does so: for a few, the timer's precision is enough, and
// spinning for each run of a spread-out table would cost more than it saves.
const (
	gateSpin        = time.Millisecond
	gateSpinAtLeast = 32
)

// wait returns when at comes (true), or when ctx ends first (false).
func (g *startGates) wait(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	// Round up on the monotonic clock: at.Add keeps its monotonic reading.
	key := at.UnixNano()
	if r := key % int64(gateGrain); r != 0 {
		at = at.Add(gateGrain - time.Duration(r))
		key += int64(gateGrain) - r
	}
	g.mu.Lock()
	if g.m == nil {
		g.m = map[int64]*gate{}
	}
	gt := g.m[key]
	if gt == nil {
		gt = &gate{at: at, open: make(chan struct{})}
		g.m[key] = gt
		time.AfterFunc(max(0, time.Until(at)-gateSpin), func() { g.release(key, gt) })
	}
	gt.waiters++
	g.mu.Unlock()
	select {
	case <-gt.open:
		return true
	case <-ctx.Done():
		g.mu.Lock()
		gt.waiters--
		g.mu.Unlock()
		return false
	}
}

// release opens gt at its time.
func (g *startGates) release(key int64, gt *gate) {
	g.mu.Lock()
	many := gt.waiters >= gateSpinAtLeast
	g.mu.Unlock()
	if many {
		spin(gt.at)
	}
	if d := time.Until(gt.at); d > 0 {
		time.Sleep(d)
	}
	g.mu.Lock()
	delete(g.m, key)
	g.mu.Unlock()
	close(gt.open)
}

// spin yields until at, or until the clock stands still: under a fake clock
// (testing/synctest) time moves only while every goroutine is blocked, so
// the caller sleeps out the rest instead.
func spin(at time.Time) {
	last, still := time.Now(), 0
	for last.Before(at) && still < 8 {
		runtime.Gosched()
		now := time.Now()
		if now.Equal(last) {
			still++
		}
		last = now
	}
}
