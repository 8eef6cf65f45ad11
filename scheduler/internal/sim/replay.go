package sim

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing/synctest"
	"time"
)

// simTraceDiff describes where b first departs from a, "" if equal.
func simTraceDiff(a, b []string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) && i == len(b) {
		return ""
	}
	var out strings.Builder
	for k := max(0, i-3); k < i; k++ {
		fmt.Fprintf(&out, "    %s\n", a[k])
	}
	for k := i; k < min(len(a), i+4); k++ {
		fmt.Fprintf(&out, "  - %s\n", a[k])
	}
	for k := i; k < min(len(b), i+4); k++ {
		fmt.Fprintf(&out, "  + %s\n", b[k])
	}
	return out.String()
}

// noteCall adds one store call to the trace, as the store ran it.
func (w *simWorld) noteCall(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.obs.calls = append(w.obs.calls, fmt.Sprintf("t=%s ", w.rel(time.Now()))+fmt.Sprintf(format, args...))
}

// replayTrace is what a replay of the seed must repeat: the store calls
// in the order the store ran them, then the attempts and the records.
// Manual run ids (random suffixes) read as the order of their trigger.
func (w *simWorld) replayTrace() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := map[string]string{}
	for i, m := range w.obs.manual {
		names[m.id] = fmt.Sprintf("%s@manual#%d", m.job, i+1)
	}
	norm := func(s string) string {
		for id, n := range names {
			s = strings.ReplaceAll(s, id, n)
		}
		return s
	}
	// The calls of one instant, sorted: two calls a replica makes from two
	// goroutines woken at the same instant (two runs ending together, whose
	// contexts Go cancels in the order of a map) may reach the store in
	// either order; what a replay must repeat is every call and its answer
	// at its instant.
	var out []string
	for i := 0; i < len(w.obs.calls); {
		at, _, _ := strings.Cut(w.obs.calls[i], " ")
		k := i
		for k < len(w.obs.calls) && strings.HasPrefix(w.obs.calls[k], at+" ") {
			k++
		}
		group := make([]string, 0, k-i)
		for _, c := range w.obs.calls[i:k] {
			group = append(group, norm(c))
		}
		slices.Sort(group)
		out = append(out, group...)
		i = k
	}
	var as []string
	for _, e := range w.ledger.Entries() {
		as = append(as, norm(fmt.Sprintf("attempt %s #%d on %s token %d t=%s..%s err=%v", e.RunID, e.Attempt, e.Replica, e.Token,
			w.rel(e.Start), w.rel(e.End), e.Err)))
	}
	slices.Sort(as)
	out = append(out, as...)
	var rs []string
	for id, recs := range w.obs.records {
		for _, r := range recs {
			rs = append(rs, norm(fmt.Sprintf("record %s %s->%s by %s fence %d started %s finished %s error %q", id, r.Decision,
				r.Outcome, r.Replica, r.FencingToken, w.relZ(r.StartedAt), w.relZ(r.FinishedAt), r.Error)))
		}
	}
	slices.Sort(rs)
	return append(out, rs...)
}

// What escapes a seed, and how the simulation orders it. Fake time alone
// does not make a seed replay: at one instant of fake time many goroutines
// are runnable at once (every replica's dispatcher, renewer, heartbeat and
// jobs, the plan's events), and the Go scheduler runs them on every core
// in an order of its own, so the store ran their calls in a different
// order on every replay — whose claim came first, whose renewal found the
// lease still there. The sequencer takes that order back: a store call (or
// a plan event, or an operator's call) is queued, and one goroutine runs
// the queue one item at a time, each only once every other goroutine of
// the bubble is blocked (synctest.Wait), picking the item with the lowest
// priority, a hash of the seed, the instant and the item's name. So the
// calls of one instant run in an order drawn from the seed — varied
// between seeds, as real races are, and the same on every replay.

// simItem is one queued call or event.
type simItem struct {
	prio uint64
	name string
	seq  uint64 // arrival: the last tie-break only
	run  func()
	done chan struct{}
}

// simSequencer runs queued items one at a time at quiescent points.
type simSequencer struct {
	seed uint64
	mu   sync.Mutex
	q    []*simItem
	n    uint64
	ran  atomic.Uint64 // items run: the watchdog's measure of progress
	wake chan struct{}
	stop chan struct{}
	quit chan struct{}
}

func newSimSequencer(seed uint64) *simSequencer {
	return &simSequencer{seed: seed, wake: make(chan struct{}, 1), stop: make(chan struct{}), quit: make(chan struct{})}
}

// do runs fn on the sequencer, once every other goroutine of the bubble
// is blocked and the items of lower priority have run, and waits for it.
// fn must not wait for anything that needs the sequencer.
func (q *simSequencer) do(name string, first bool, fn func()) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%d|%s", q.seed, time.Now().UnixNano(), name)
	it := &simItem{prio: h.Sum64() | 1, name: name, run: fn, done: make(chan struct{})}
	if first {
		it.prio = 0 // the plan's events come before the calls of their instant
	}
	q.mu.Lock()
	q.n++
	it.seq = q.n
	q.q = append(q.q, it)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-it.done
}

// loop runs the queue until stop is closed.
func (q *simSequencer) loop() {
	defer close(q.quit)
	for {
		select {
		case <-q.wake:
		case <-q.stop:
			return
		}
		for {
			// Every goroutine that runs at this instant has queued its
			// call (or blocked on something else) by the time Wait
			// returns: the queue is the instant's whole set.
			synctest.Wait()
			q.mu.Lock()
			if len(q.q) == 0 {
				q.mu.Unlock()
				break
			}
			best := 0
			for i, it := range q.q {
				b := q.q[best]
				if it.prio < b.prio || (it.prio == b.prio && (it.name < b.name || (it.name == b.name && it.seq < b.seq))) {
					best = i
				}
			}
			it := q.q[best]
			q.q = slices.Delete(q.q, best, best+1)
			q.mu.Unlock()
			it.run()
			q.ran.Add(1)
			close(it.done)
		}
	}
}

// close stops the loop once the queue is empty and waits for it.
func (q *simSequencer) close() {
	close(q.stop)
	<-q.quit
}
