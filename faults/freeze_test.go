//go:build faults

package faults_test

import (
	"testing"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// Every replica frozen at once (SIGSTOP: a host or VM paused, a laptop
// asleep) for several seconds on a job every second, Redis up: once they
// run again, each instant of the freeze has exactly one record — missed,
// as its starting deadline passed with no replica to claim it — and none
// is started late or twice. Before, the resumed dispatchers passed over
// them as "decided elsewhere", and they had no record at all.
func TestScenario19AllReplicasFrozen(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "19", "all replicas frozen 6 s (SIGSTOP), Redis up (job every 1 s)")
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Sleep: 50 * time.Millisecond,
		YAML: "starting_deadline: 1s"}})
	first := c.waitRun(20*time.Second, "a run started on time", func(r runRec) bool {
		return !r.Scheduled().IsZero() && r.Start.Sub(r.Scheduled()) < 500*time.Millisecond
	})
	c.waitEnded(first.RunID, 5*time.Second)
	var frozen time.Time
	for _, r := range c.Replicas() {
		frozen = r.stop()
	}
	time.Sleep(6 * time.Second)
	var thawed time.Time
	for _, r := range c.Replicas() {
		thawed = r.cont()
	}
	time.Sleep(8 * time.Second)
	end := time.Now().Add(-3 * time.Second)
	t.Logf("first %s frozen %s thawed %s", first.RunID, frozen.UTC().Format(time.StampMilli), thawed.UTC().Format(time.StampMilli))

	missed := oneRecordPerInstant(t, c, first.Scheduled(), end, time.Second)
	if missed < 3 {
		t.Errorf("%d instants recorded missed across a 6 s freeze of every replica, want at least 3", missed)
	}
	all := c.led.Runs()
	if dups := duplicates(all); len(dups) > 0 {
		t.Errorf("duplicate starts: %v", dups)
	}
	for _, r := range all {
		if r.Start.After(thawed) && r.Scheduled().Before(frozen) {
			t.Errorf("%s, due before the freeze, started after it on %s", r.RunID, r.Replica)
		}
	}
	row.Runs = len(starts(all))
	row.Missed = missed
}

// oneRecordPerInstant checks that every instant of a job every step from
// first to end has exactly one record in the cluster's history, logging
// each; it returns how many were recorded missed.
func oneRecordPerInstant(t *testing.T, c *cluster, first, end time.Time, step time.Duration) (missed int) {
	t.Helper()
	byInstant := map[time.Time][]scheduler.Run{}
	for _, r := range c.history() {
		byInstant[r.ScheduledAt.UTC()] = append(byInstant[r.ScheduledAt.UTC()], r)
	}
	for at := first; !at.After(end); at = at.Add(step) {
		rs := byInstant[at.UTC()]
		var desc []string
		for _, r := range rs {
			desc = append(desc, string(r.Kind)+"/"+string(r.Decision)+"/"+string(r.Outcome)+" by "+r.Replica)
			if r.Outcome == scheduler.Missed {
				missed++
			}
		}
		t.Logf("%s: %v", at.UTC().Format(time.TimeOnly), desc)
		if len(rs) != 1 {
			t.Errorf("instant %s has %d records", at.UTC().Format(time.TimeOnly), len(rs))
		}
	}
	return missed
}
