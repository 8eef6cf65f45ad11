//go:build faults

package faults_test

import (
	"context"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// 21. A backfill and manual runs while daemons are killed. Three daemons
// run a job with concurrency 3 (runs of 1.5 s); a backfill of its 30 past
// instants (parallel 3) and 6 manual runs are asked for while, every 1–3 s,
// one live daemon is killed (kill -9) and started again 0.5–2 s later (at
// least one always lives). Asserted: no run id starts twice; never more
// than 3 job processes at once, nor two on one slot; the backfill finishes;
// every instant of its range has one record, and one that did not start
// is only a run whose daemon was killed between its claim and its end; every
// manual request ran once.
func TestScenario21BackfillAndManualUnderKills(t *testing.T) {
	t.Parallel()
	bound(t, 90*time.Second)
	row := report(t, "21", "a backfill (30 instants, parallel 3) and 6 manual runs of a concurrency-3 job while daemons are killed (kill -9) and restarted")
	c := newCluster(t, clusterConfig{Replicas: 3, Sink: newSlotSink(), Job: jobSpec{
		Schedule: "@every 1m", Concurrency: 3, Sleep: 1500 * time.Millisecond,
		Extra: []string{"-manual-sleep", "1500ms"}}})
	rng := rand.New(rand.NewPCG(21, 21))
	now := time.Now().UTC()
	from := now.Truncate(time.Minute).Add(-30 * time.Minute)
	to := now.Truncate(time.Minute).Add(-time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	bf, err := c.ctl.Backfill(ctx, scheduler.Job{Name: jobName, Schedule: c.cfg.Job.Schedule}, from, to, 3)
	cancel()
	if err != nil {
		t.Fatalf("backfill: %v", err)
	}
	t.Logf("backfill %s: %d instants", bf.ID, bf.Total)

	kills := map[string][]time.Time{}
	var triggers []string
	triggerAt := map[string]time.Time{}
	end := time.Now().Add(18 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		time.Sleep(time.Duration(1000+rng.IntN(2000)) * time.Millisecond)
		if i%2 == 0 && len(triggers) < 6 {
			at := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			id, err := c.ctl.Trigger(ctx, jobName)
			cancel()
			if err != nil {
				t.Errorf("trigger: %v", err)
			} else {
				triggers = append(triggers, id)
				triggerAt[id] = at
			}
		}
		live := c.live()
		if len(live) < 2 {
			continue
		}
		r := live[rng.IntN(len(live))]
		kills[r.id] = append(kills[r.id], r.kill9())
		down := time.Duration(500+rng.IntN(1500)) * time.Millisecond
		time.AfterFunc(down, func() { c.restart(r) })
	}
	time.Sleep(2 * time.Second) // the last restart
	for _, r := range c.Replicas() {
		r.waitReady()
	}
	var st *scheduler.Backfill
	testkit.WaitFor(t, 45*time.Second, "the backfill to finish", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		st, err = c.ctl.BackfillStatus(ctx, jobName)
		return err == nil && st != nil && !st.Finished.IsZero()
	})
	t.Logf("backfill: %+v", *st)
	ids := map[string]bool{}
	for _, id := range triggers {
		ids[id] = true
	}
	waitUntil(20*time.Second, func() bool {
		started := map[string]bool{}
		for _, r := range c.led.Runs() {
			started[r.RunID] = true
			if r.End.IsZero() {
				return false
			}
		}
		for id := range ids {
			if !started[id] {
				return false
			}
		}
		return true
	})

	all := c.led.Runs()
	if dups := duplicates(all); len(dups) > 0 {
		t.Errorf("run ids started twice: %v", dups)
	}
	// Processes alive at once, from the ledger (a killed daemon's jobs die
	// with it).
	sort.Slice(all, func(a, b int) bool { return all[a].Start.Before(all[b].Start) })
	most := 0
	for i, e := range all {
		n := 0
		for _, o := range all[:i+1] {
			if o.End.IsZero() || o.End.After(e.Start) {
				n++
				if o.RunID != e.RunID && o.Slot == e.Slot {
					t.Errorf("slot %d: %s (on %s, until %s) and %s (on %s, from %s) at once", e.Slot, o.RunID, o.Replica,
						o.End.Format("15:04:05.000"), e.RunID, e.Replica, e.Start.Format("15:04:05.000"))
				}
			}
		}
		most = max(most, n)
	}
	if most > 3 {
		t.Errorf("%d job processes at once, concurrency 3", most)
	}
	started := map[string]runRec{}
	for _, r := range all {
		started[r.RunID] = r
	}
	killedIn := func(replica string, a, b time.Time) bool {
		for _, k := range kills[replica] {
			if !k.Before(a) && !k.After(b) {
				return true
			}
		}
		return false
	}
	var notRun []string
	outcomes := map[string]int{}
	for at := from; !at.After(to); at = at.Add(time.Minute) {
		id := runID(at)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		rec, err := c.ctl.Get(ctx, id)
		cancel()
		if err != nil || rec == nil {
			t.Errorf("backfill instant %s has no record (%v)", id, err)
			continue
		}
		o := string(rec.Decision)
		if rec.Decision == scheduler.Started {
			o = string(rec.Outcome)
		}
		outcomes[o]++
		if _, ok := started[id]; ok {
			continue
		}
		notRun = append(notRun, id+" "+o)
		if !killedIn(rec.Replica, bf.Created.Add(-time.Second), rec.FinishedAt.Add(5*time.Second)) {
			t.Errorf("backfill instant %s never started and its daemon %s was not killed: %s", id, rec.Replica, describe(rec))
		}
	}
	for _, id := range triggers {
		if _, ok := started[id]; !ok {
			t.Errorf("manual run %s (asked at %s) never started: %s", id, triggerAt[id].Format("15:04:05.000"), describe(c.manualRecord(id)))
		}
	}
	n := 0
	for _, ks := range kills {
		n += len(ks)
	}
	row.Runs, row.Duplicates = len(starts(all)), len(duplicates(all))
	row.figure("%d kills; backfill instants %s (%d not run: their daemon died between claim and start); %d manual runs; at most %d processes at once",
		n, decisionSummary(outcomes), len(notRun), len(triggers), most)
	if len(notRun) > 0 {
		t.Logf("backfill instants not run: %s", strings.Join(notRun, ", "))
	}
}
