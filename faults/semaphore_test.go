//go:build faults

package faults_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// 9. A job limited to 3 runs in flight across 10 replicas, a run every
// second lasting 6 s (longer than the lease), for 60 s of random SIGKILLs (of replicas holding
// runs; a fresh replica replaces each) and SIGSTOPs (1–6 s, so some outlast
// the 3 s lease). Never more than 3 leases valid at Redis, never more than 3
// effective holders at the sink; killed holders' slots are reclaimed within
// their lease; a holder frozen past its lease cancels its job as soon as it
// resumes. The sink keeps the highest token per slot (SOLOCRON_SLOT): no
// stale write is accepted once its slot's next holder has written, and no
// write is refused while its lease holds.
func TestScenario09SemaphoreChaos(t *testing.T) {
	t.Parallel()
	bound(t, 150*time.Second)
	row := report(t, "9", "concurrency 3, 10 replicas, random kill -9 / SIGSTOP for 60 s")
	const limit = 3
	c := newCluster(t, clusterConfig{Replicas: 10, Sink: newSlotSink(),
		Job: jobSpec{Sleep: 6 * time.Second, Concurrency: limit}})
	lease := c.cfg.Job.Lease
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("chaos seed %d", seed)

	type kill struct {
		at   time.Time
		runs []string
	}
	type pause struct {
		replica     string
		from, until time.Time
		runs        []string
	}
	var (
		mu     sync.Mutex
		paused = map[string]bool{}
		kills  []kill
		pauses []pause
		resume sync.WaitGroup
	)
	// holders returns the live, unpaused replicas with a job in flight, and
	// those jobs' run ids.
	holders := func() map[*replica][]string {
		out := map[*replica][]string{}
		byID := map[string]*replica{}
		for _, r := range c.Replicas() {
			byID[r.id] = r
		}
		mu.Lock()
		defer mu.Unlock()
		for _, run := range c.led.Runs() {
			if r := byID[run.Replica]; r != nil && run.End.IsZero() && r.alive() && !paused[r.id] {
				out[r] = append(out[r], run.RunID)
			}
		}
		return out
	}

	c.firstRun()
	begin := time.Now()
	chaosEnd := begin.Add(60 * time.Second)
	for time.Now().Before(chaosEnd) {
		time.Sleep(time.Duration(1500+rng.IntN(2000)) * time.Millisecond)
		hs := holders()
		if len(hs) == 0 {
			continue
		}
		var victims []*replica
		for r := range hs {
			victims = append(victims, r)
		}
		v := victims[rng.IntN(len(victims))]
		if rng.IntN(10) < 4 {
			at := v.kill9()
			mu.Lock()
			kills = append(kills, kill{at, hs[v]})
			mu.Unlock()
			c.addReplica()
			continue
		}
		d := time.Duration(1000+rng.IntN(5000)) * time.Millisecond
		mu.Lock()
		paused[v.id] = true
		mu.Unlock()
		from := v.stop()
		resume.Go(func() {
			time.Sleep(d)
			until := v.cont()
			mu.Lock()
			delete(paused, v.id)
			pauses = append(pauses, pause{v.id, from, until, hs[v]})
			mu.Unlock()
		})
	}
	resume.Wait()
	end := time.Now()
	time.Sleep(lease + 3*time.Second) // the last runs end, dead slots are reaped

	all := c.led.Runs()
	dups := duplicates(all)
	st := judge(all, c.watch)
	tokens := map[int64]string{}
	for _, r := range all {
		if prev, ok := tokens[r.Token]; ok {
			t.Errorf("%s and %s share fencing token %d", prev, r.RunID, r.Token)
		}
		tokens[r.Token] = r.RunID
		if r.Slot < 1 || r.Slot > limit {
			t.Errorf("%s held slot %d, outside 1..%d", r.RunID, r.Slot, limit)
		}
	}
	if st.HarmfulAccepted > 0 || st.LegitRejected > 0 {
		t.Errorf("per-slot fencing: %d stale writes accepted after their slot's next holder wrote, %d writes refused while their lease held",
			st.HarmfulAccepted, st.LegitRejected)
	}
	if len(dups) > 0 {
		t.Errorf("duplicate starts: %v", dups)
	}
	if m := c.watch.MaxValid(); m > limit {
		t.Errorf("Redis held %d valid leases at once, limit %d", m, limit)
	}
	if m := c.led.MaxEffective(); m > limit {
		t.Errorf("the sink had %d effective holders at once, limit %d", m, limit)
	}

	// Killed holders: their jobs died with them, their slots expired within
	// the lease and were reaped within a heartbeat after.
	var worstReclaim, worstJobGone time.Duration
	for _, k := range kills {
		for _, id := range k.runs {
			run, _ := c.led.Run(id)
			if run.End.IsZero() || run.EndReason != "" {
				t.Errorf("%s's job, on a replica killed at %s, ended %q at %v", id, k.at.Format("15:04:05.000"), run.EndReason, run.End)
			} else {
				worstJobGone = max(worstJobGone, run.End.Sub(k.at))
			}
			o, ok := c.watch.Obs(id)
			if !ok {
				continue
			}
			if o.Expiry.Sub(k.at) > lease {
				t.Errorf("%s's lease ran %s past its replica's death, more than the lease", id, o.Expiry.Sub(k.at))
			}
			if o.Removed.IsZero() || o.Removed.Sub(o.Expiry) > 1500*time.Millisecond {
				t.Errorf("%s's slot, expired at %s, reaped at %v", id, o.Expiry.Format("15:04:05.000"), o.Removed)
			} else {
				worstReclaim = max(worstReclaim, o.Removed.Sub(k.at))
			}
		}
	}
	// Frozen holders: a job whose lease ended during the freeze is cancelled
	// right after SIGCONT; one whose lease held goes on.
	var worstCancel time.Duration
	longPauses := 0
	for _, p := range pauses {
		for _, id := range p.runs {
			run, _ := c.led.Run(id)
			o, ok := c.watch.Obs(id)
			if !ok || run.End.IsZero() || !run.End.After(p.until) {
				continue // it ended before the replica resumed
			}
			if o.End().Before(p.until) {
				longPauses++
				d := run.End.Sub(p.until)
				worstCancel = max(worstCancel, d)
				if d > time.Second {
					t.Errorf("%s's lease ended during a freeze of %s; its job stopped %s after SIGCONT", id, p.replica, d)
				}
			}
		}
	}
	got := c.decisions(nextInstant(begin), end.Add(-time.Second))
	row.Runs, row.Duplicates, row.Missed, row.StaleAccepted = len(starts(all)), len(dups), got["missed"], st.HarmfulAccepted
	row.Recovery = fmt.Sprintf("≤ %s", dur(worstReclaim))
	row.figure("%d kills, %d pauses (%d outlived the lease); max %d valid leases at Redis, max %d effective holders at the sink",
		len(kills), len(pauses), longPauses, c.watch.MaxValid(), c.led.MaxEffective())
	row.figure("killed holders' jobs gone ≤ %s, slots reclaimed ≤ %s after the kill; frozen jobs cancelled ≤ %s after SIGCONT",
		ms(worstJobGone), dur(worstReclaim), ms(worstCancel))
	row.figure("stale writes %d, of which %d after their slot's next holder had written, %d accepted; %d writes refused while their lease held",
		st.Stale, st.Harmful, st.HarmfulAccepted, st.LegitRejected)
	row.figure("instants: %s", decisionSummary(got))
	if len(kills) == 0 || len(pauses) == 0 {
		t.Errorf("the chaos did not both kill (%d) and pause (%d)", len(kills), len(pauses))
	}
}
