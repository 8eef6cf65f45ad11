//go:build faults

package faults_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/testkit"
)

func runID(at time.Time) string { return jobName + "@" + at.UTC().Format(time.RFC3339) }

// percentile returns the p-th percentile (0..100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

// 1. Three replicas, a job every second, for a minute: every run starts
// exactly once, none is skipped, tokens rise, the sink refuses nothing.
func TestScenario01SteadyState(t *testing.T) {
	t.Parallel()
	bound(t, 115*time.Second)
	row := report(t, "1", "steady state: 3 replicas, job every 1 s, 60 s")
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Sleep: 300 * time.Millisecond, WriteEvery: 50 * time.Millisecond}})

	// The window starts after the first run: a store the cluster finds
	// empty may be one that lost its data, so the instants of its first
	// seconds (up to now + max_clock_skew + the claim ahead) are recorded
	// missed, not run.
	from := c.firstRun().Scheduled().Add(time.Second)
	to := from.Add(59 * time.Second) // 60 instants
	sleepUntil(to)
	c.waitEnded(runID(to), 10*time.Second)
	// The job reports its end before its replica closes the run's record.
	testkit.WaitFor(t, 10*time.Second, "the window's records to be closed", func() bool {
		return c.decisions(from, to)["running"] == 0
	})

	all := c.led.Runs()
	var window []runRec
	for _, r := range all {
		if at := r.Scheduled(); !at.Before(from) && !at.After(to) {
			window = append(window, r)
		}
	}
	n := starts(window)
	var missing []string
	var delays []time.Duration
	perReplica := map[string]int{}
	for at := from; !at.After(to); at = at.Add(time.Second) {
		if n[runID(at)] == 0 {
			missing = append(missing, at.UTC().Format(time.TimeOnly))
		}
	}
	for _, r := range window {
		delays = append(delays, r.Start.Sub(r.Scheduled()))
		perReplica[r.Replica]++
	}
	dups := duplicates(all)
	row.Runs, row.Duplicates, row.Missed = len(n), len(dups), len(missing)
	st := judge(all, c.watch)
	row.StaleAccepted = st.HarmfulAccepted
	row.figure("start delay after the instant p50 %s, p99 %s, max %s", ms(percentile(delays, 50)), ms(percentile(delays, 99)), ms(percentile(delays, 100)))
	var share []string
	for _, r := range c.Replicas() {
		share = append(share, fmt.Sprintf("%s %d", r.id, perReplica[r.id]))
	}
	row.figure("runs per replica %s", strings.Join(share, ", "))

	if len(dups) > 0 {
		t.Errorf("runs started more than once: %v", dups)
	}
	if len(missing) > 0 {
		t.Errorf("%d of 60 instants never started: %v", len(missing), missing)
	}
	if len(n) != 60 {
		t.Errorf("%d runs in a 60-instant window, want 60", len(n))
	}
	if bad := tokensRise(window); bad != "" {
		t.Errorf("fencing tokens do not rise: %s", bad)
	}
	if st.Stale > 0 || st.LegitRejected > 0 || st.Unobserved > 0 {
		t.Errorf("steady state should have no stale or refused writes: %+v", st)
	}
	got := c.decisions(from, to)
	if got["succeeded"] != 60 {
		t.Errorf("records in the window: %v, want 60 succeeded", got)
	}
	for _, r := range c.Replicas() {
		if !r.alive() {
			t.Errorf("%s exited", r.id)
		}
	}
}
