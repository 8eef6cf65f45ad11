//go:build faults

package faults_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// TestScenario20RandomLinkFaults is TestRandomFaults with each daemon
// reaching Redis through its own fault proxy, and faults of one daemon's
// link drawn besides the others: added latency (50–500 ms each way, for
// 1–6 s), resets of every connection (for 0.2–3 s), a black hole that keeps
// the sockets open (half-open, for 1–6 s), replies dropped after Redis ran
// the command (the connection reset mid-call, 1–3 times), a flaky spell
// (3–6 s) dropping a reply every 200–600 ms, and a one-way partition (1–6 s:
// commands reach Redis, no answer comes back, the sockets stay open). The other daemons' links stay
// good. Judged as TestRandomFaults: in particular a job whose daemon was
// cut off ends before its lease ends at Redis, no slot is held twice, every
// instant is decided once, and a lease_lost record is only for a run that
// started.
//
// FAULTS_LINK_SEEDS (default 1) seeds from FAULTS_LINK_FIRST (default 1),
// each with FAULTS_LINK_CHAOS (default 20s) of faults.
func TestScenario20RandomLinkFaults(t *testing.T) {
	t.Parallel()
	n, first := 1, 1
	if v, err := strconv.Atoi(os.Getenv("FAULTS_LINK_SEEDS")); err == nil {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("FAULTS_LINK_FIRST")); err == nil {
		first = v
	}
	chaos := 20 * time.Second
	if v, err := time.ParseDuration(os.Getenv("FAULTS_LINK_CHAOS")); err == nil {
		chaos = v
	}
	for seed := first; seed < first+n; seed++ {
		t.Run("seed"+strconv.Itoa(seed), func(t *testing.T) {
			t.Parallel()
			bound(t, chaos+75*time.Second)
			row := report(t, "20", fmt.Sprintf("random faults with one daemon's link to Redis slow, reset, black-holed or dropping replies, seed %d: 3 daemons, 6 jobs, %s", seed, chaos))
			randomFaults(t, row, uint64(1000+seed), chaos, true)
		})
	}
}

// linkFault impairs daemon id's link to Redis for a while: fault kind k
// (14..19, from chaos.fault).
func (c *chaos) linkFault(id string, k int) {
	c.mu.Lock()
	px := c.links[id]
	c.mu.Unlock()
	if px == nil {
		return
	}
	c.impair(id)
	heal := func(what string, d time.Duration, undo func()) {
		c.mu.Lock()
		c.linkCounts[what]++
		c.mu.Unlock()
		c.wg.Go(func() {
			time.Sleep(d)
			undo()
			c.mu.Lock()
			delete(c.impaired, id)
			c.mu.Unlock()
			c.note("%s's link: %s over", id, what)
		})
	}
	switch k {
	case 14:
		lat := time.Duration(50+c.rng.IntN(451)) * time.Millisecond
		d := time.Duration(1000+c.rng.IntN(5000)) * time.Millisecond
		px.SetLatency(lat)
		c.note("%s's link: latency %s for %s", id, lat, d)
		heal("latency", d, func() { px.SetLatency(0) })
	case 15:
		d := time.Duration(200+c.rng.IntN(2800)) * time.Millisecond
		px.SetMode(modeReset)
		c.note("%s's link: reset for %s", id, d)
		heal("reset", d, func() { px.SetMode(modePass) })
	case 16:
		d := time.Duration(1000+c.rng.IntN(5000)) * time.Millisecond
		px.SetMode(modeBlackHole)
		c.note("%s's link: black hole for %s", id, d)
		heal("black hole", d, func() { px.SetMode(modePass) })
	case 17:
		n := 1 + c.rng.IntN(3)
		px.DropReplies(n)
		c.note("%s's link: the next %d replies dropped", id, n)
		heal("dropped replies", time.Second, func() { px.DropReplies(0) })
	case 19:
		d := time.Duration(1000+c.rng.IntN(5000)) * time.Millisecond
		px.SetMode(modeMute)
		c.note("%s's link: one way (commands reach Redis, no answer comes back) for %s", id, d)
		heal("one way", d, func() { px.SetMode(modePass) })
	default:
		d := time.Duration(3000+c.rng.IntN(3000)) * time.Millisecond
		every := time.Duration(200+c.rng.IntN(400)) * time.Millisecond
		c.note("%s's link: flaky for %s, a reply dropped every %s", id, d, every)
		stop := make(chan struct{})
		c.wg.Go(func() {
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					px.DropReplies(1)
				}
			}
		})
		heal("flaky", d, func() { close(stop); px.DropReplies(0) })
	}
}

// 23. One replica's link goes one way for 7 s: its commands reach Redis,
// no answer comes back, the sockets stay open. The two others are frozen
// for its first 4.5 s, so its claims win runs it never hears of; they
// resume while it is still cut off, past those runs' lease, and close them. Asserted: every instant decided once (one
// record); a run recorded started ran (its process reported), or is
// recorded missed, "never started" — never lease_lost without having run;
// no duplicate; and the replica is ready again after the link heals.
func TestScenario23OneWayLink(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "23", "one replica's link to Redis one way for 7 s (commands reach Redis, answers never come back), the others frozen for its first 4.5 s")
	c := newCluster(t, clusterConfig{Replicas: 3, Proxies: true, Job: jobSpec{Sleep: 300 * time.Millisecond}})
	first := c.firstRun()
	from := first.Scheduled().Add(time.Second)
	w := c.replica("r1")
	// The others frozen first, so that r1's claims win at Redis; they
	// resume while r1 is still cut off, past the lease of what it won, and
	// close that lease_lost before r1 can say it never started it.
	others := []*replica{c.replica("r2"), c.replica("r3")}
	sleepUntil(nextInstant(time.Now()).Add(-600 * time.Millisecond))
	for _, o := range others {
		o.stop()
	}
	cut := time.Now()
	w.px.SetMode(modeMute)
	time.Sleep(4500 * time.Millisecond)
	for _, o := range others {
		o.cont()
	}
	time.Sleep(2500 * time.Millisecond)
	w.px.SetMode(modePass)
	healed := time.Now()
	w.waitReady()
	time.Sleep(8 * time.Second)
	to := time.Now().Truncate(time.Second).Add(-4 * time.Second)
	st, got := c.tally(t, row, from, to)
	wantNoStaleWrites(t, st)
	ran := map[string]bool{}
	for _, r := range c.led.Runs() {
		ran[r.RunID] = true
	}
	claims := 0
	for _, e := range w.px.Events("claim") {
		if !e.Sent.Before(cut) && e.Sent.Before(healed) {
			claims++
		}
	}
	for _, r := range c.history() {
		if r.Decision == scheduler.Started && !ran[r.ID] && r.Outcome != scheduler.Missed {
			t.Errorf("%s recorded %s on %s (%q) but never ran", r.ID, r.Outcome, r.Replica, r.Error)
		}
	}
	row.figure("%d claims of the cut replica reached Redis unanswered; instants %s", claims, decisionSummary(got))
	t.Logf("%d claims reached Redis while r1's link was one way; instants %s", claims, decisionSummary(got))
}
