//go:build faults

package faults_test

import (
	"context"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/testkit"
)

// slotObs is what Redis said, over time, about one run's concurrency slot.
type slotObs struct {
	ID string
	// Grants are the server times at which Redis granted or renewed the
	// lease (slot score − lease), oldest first.
	Grants []time.Time
	// Expiry is the lease's last known expiry on Redis' clock.
	Expiry time.Time
	// Removed is when the slot was first seen gone (released, reaped, or
	// Redis lost it); zero while it is there.
	Removed time.Time
}

// End is when the run stopped holding its slot, as far as Redis was
// concerned: released or reaped, or its lease expired, whichever was first.
func (o *slotObs) End() time.Time {
	if !o.Removed.IsZero() && o.Removed.Before(o.Expiry) {
		return o.Removed
	}
	return o.Expiry
}

// Granted is when Redis first gave the run its slot.
func (o *slotObs) Granted() time.Time { return o.Grants[0] }

// ValidAt reports whether the run held a live lease at t.
func (o *slotObs) ValidAt(t time.Time) bool { return !t.Before(o.Granted()) && t.Before(o.End()) }

// slotWatch reads a job's slots straight from Redis every 10ms: the ground
// truth of who held a lease when. Scores are lease expiries in Redis' clock
// (milliseconds), which on one machine is the test's clock.
type slotWatch struct {
	c     *redis.Client
	key   string
	lease time.Duration

	mu       sync.Mutex
	obs      map[string]*slotObs
	maxValid int
	polls    int
}

func watchSlots(t *testing.T, c *redis.Client, key string, lease time.Duration) *slotWatch {
	t.Helper()
	w := &slotWatch{c: c, key: key, lease: lease, obs: map[string]*slotObs{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			w.poll(ctx)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func (w *slotWatch) poll(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	var now *redis.TimeCmd
	var zs *redis.ZSliceCmd
	_, err := w.c.Pipelined(cctx, func(p redis.Pipeliner) error {
		now = p.Time(cctx)
		zs = p.ZRangeWithScores(cctx, w.key, 0, -1)
		return nil
	})
	if err != nil {
		return
	}
	seen := time.Now()
	server := now.Val()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	present := map[string]bool{}
	valid := 0
	for _, z := range zs.Val() {
		id, _ := z.Member.(string)
		present[id] = true
		exp := time.UnixMilli(int64(z.Score))
		o := w.obs[id]
		if o == nil {
			o = &slotObs{ID: id}
			w.obs[id] = o
		}
		if !exp.Equal(o.Expiry) {
			o.Expiry = exp
			o.Grants = append(o.Grants, exp.Add(-w.lease))
		}
		o.Removed = time.Time{}
		if exp.After(server) {
			valid++
		}
	}
	for id, o := range w.obs {
		if !present[id] && o.Removed.IsZero() {
			o.Removed = seen
		}
	}
	w.maxValid = max(w.maxValid, valid)
}

// Obs returns a copy of what was seen of runID's slot.
func (w *slotWatch) Obs(runID string) (slotObs, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.obs[runID]
	if !ok {
		return slotObs{}, false
	}
	c := *o
	c.Grants = append([]time.Time(nil), o.Grants...)
	return c, true
}

// All returns a copy of every slot seen, by grant time.
func (w *slotWatch) All() []slotObs {
	w.mu.Lock()
	var out []slotObs
	for _, o := range w.obs {
		c := *o
		c.Grants = append([]time.Time(nil), o.Grants...)
		out = append(out, c)
	}
	w.mu.Unlock()
	sort.Slice(out, func(a, b int) bool { return out[a].Granted().Before(out[b].Granted()) })
	return out
}

// MaxValid is the most unexpired slots seen at once.
func (w *slotWatch) MaxValid() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxValid
}

// waitRenewal waits for Redis to record a renewal of runID (a grant newer
// than any seen before the call) and returns its server time.
func (w *slotWatch) waitRenewal(t *testing.T, runID string, timeout time.Duration) time.Time {
	t.Helper()
	before := 0
	if o, ok := w.Obs(runID); ok {
		before = len(o.Grants)
	}
	var at time.Time
	testkit.WaitFor(t, timeout, "a renewal of "+runID+" at Redis", func() bool {
		o, ok := w.Obs(runID)
		if ok && len(o.Grants) > before && len(o.Grants) > 1 {
			at = o.Grants[len(o.Grants)-1]
			return true
		}
		return false
	})
	return at
}

// freshRenewal waits for a renewal of runID that reached Redis less than
// 150ms ago, so that a fault injected now starts right after it (on a busy
// machine the test may notice a renewal late; then it waits for the next).
func (w *slotWatch) freshRenewal(t *testing.T, runID string, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		at := w.waitRenewal(t, runID, time.Until(deadline))
		if time.Since(at) < 150*time.Millisecond {
			return at
		}
	}
}

// maxRenewalGap is the longest time between two grants of one run's lease
// that Redis recorded (renewals of a run that ended normally).
func maxRenewalGap(o slotObs) time.Duration {
	var gap time.Duration
	for i := 1; i < len(o.Grants); i++ {
		gap = max(gap, o.Grants[i].Sub(o.Grants[i-1]))
	}
	return gap
}

func ms(d time.Duration) string {
	return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
}
