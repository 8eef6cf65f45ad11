//go:build faults

package faults_test

import (
	"sort"
	"testing"
	"time"
)

// Every replica killed for several seconds on a job every second with
// catchup: all: once they are back, each instant of the outage inside the
// window has exactly one record, each catch-up run started once, in the
// order of its instants.
func TestScenario18CatchupAllAfterAllDown(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "18", "all replicas killed 6 s, catchup: all (job every 1 s)")
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Sleep: 50 * time.Millisecond,
		YAML: "starting_deadline: 1s\ncatchup_window: 1m\ncatchup: all"}})
	first := c.waitRun(20*time.Second, "a run started on time", func(r runRec) bool {
		return !r.Scheduled().IsZero() && r.Start.Sub(r.Scheduled()) < 500*time.Millisecond
	})
	c.waitEnded(first.RunID, 5*time.Second)
	down := time.Now()
	for _, r := range c.Replicas() {
		r.kill9()
	}
	time.Sleep(6 * time.Second)
	for _, r := range c.Replicas() {
		c.restart(r)
	}
	for _, r := range c.Replicas() {
		r.waitReady()
	}
	ready := time.Now()
	time.Sleep(8 * time.Second)
	end := time.Now().Add(-3 * time.Second)
	t.Logf("first %s down %s ready %s", first.RunID, down.UTC().Format(time.StampMilli), ready.UTC().Format(time.StampMilli))

	oneRecordPerInstant(t, c, first.Scheduled(), end, time.Second)
	all := c.led.Runs()
	if dups := duplicates(all); len(dups) > 0 {
		t.Errorf("duplicate starts: %v", dups)
	}
	var late []runRec
	for _, r := range all {
		if r.Start.After(ready.Add(-5*time.Second)) && r.Scheduled().Before(ready.Add(-2*time.Second)) {
			late = append(late, r)
		}
	}
	sort.Slice(late, func(a, b int) bool { return late[a].Start.Before(late[b].Start) })
	for i, r := range late {
		t.Logf("catch-up %s on %s at +%s", r.RunID, r.Replica, r.Start.Sub(ready))
		if i > 0 && !late[i-1].Scheduled().Before(r.Scheduled()) {
			t.Errorf("catch-up %s started after %s", r.RunID, late[i-1].RunID)
		}
	}
	row.Runs = len(starts(all))
}
