//go:build faults

package faults_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// 10. The job itself floods the Redis the scheduler coordinates through
// (16 connections of pipelined writes) while it runs. The replica's claims
// and renewals travel on its own connections and still meet their
// deadlines: no lease is lost, Redis sees a renewal every renewal interval.
func TestScenario10CoordinationUnderLoad(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "10", "the job floods the same Redis (16 connections, pipelined SETs)")
	c := newCluster(t, clusterConfig{Replicas: 2, Job: jobSpec{Sleep: 6 * time.Second,
		Extra: []string{"-flood", "{{redis}}", "-flood-conns", "16"}}})
	lease := c.cfg.Job.Lease

	first := c.firstRun()
	// Redis' latency seen by a client of its own, while the flood runs.
	var pings []time.Duration
	for time.Since(first.Start) < 12*time.Second {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		t0 := time.Now()
		if err := c.direct.Ping(ctx).Err(); err == nil {
			pings = append(pings, time.Since(t0))
		}
		cancel()
		time.Sleep(50 * time.Millisecond)
	}
	second := c.waitRun(10*time.Second, "a second run", func(r runRec) bool { return r.Start.After(first.Start) })
	c.waitEnded(second.RunID, 15*time.Second)

	var ops int64
	var busy time.Duration
	var worstGap time.Duration
	var flooded []runRec
	for _, r := range c.led.Runs() {
		if r.End.IsZero() {
			continue
		}
		flooded = append(flooded, r)
		if r.EndReason != "ok" {
			t.Errorf("%s ended %q under load, want ok", r.RunID, r.EndReason)
		}
		ops += r.Ops
		busy += r.End.Sub(r.Start)
		o, _ := c.watch.Obs(r.RunID)
		worstGap = max(worstGap, maxRenewalGap(o))
		if len(o.Grants) < 3 {
			t.Errorf("%s: Redis saw %d grants/renewals in a %s run, want at least 3", r.RunID, len(o.Grants), c.cfg.Job.Sleep)
		}
	}
	for _, r := range c.Replicas() {
		if lost := r.logs("lease lost"); len(lost) > 0 {
			t.Errorf("%s lost a lease under load: %v", r.id, lost[0].Fields)
		}
	}
	if worstGap >= lease-lockDrift(lease) {
		t.Errorf("Redis saw %s between two renewals, not less than the lease", worstGap)
	}
	for _, r := range flooded {
		checkRecord(t, c, r.RunID, scheduler.Succeeded)
	}
	st, _ := c.tally(t, row, first.Scheduled(), second.Scheduled())
	if busy > 0 {
		row.figure("flood %.0f k SET/s", float64(ops)/busy.Seconds()/1000)
	}
	row.figure("PING under the flood p50 %s, p99 %s; longest gap between renewals at Redis %s (lease %s, renewal every %s)",
		ms(percentile(pings, 50)), ms(percentile(pings, 99)), ms(worstGap), lease, c.renewEvery())
	wantNoStaleWrites(t, st)
	if ops == 0 {
		t.Errorf("the job did not flood Redis")
	}
}

// 11. A Redis whose maxmemory-policy may evict keys (every key Solocron
// keeps has a TTL, so volatile-* policies are as dangerous as allkeys-*) is
// reported loudly at start; noeviction is not.
func TestScenario11EvictionPolicyWarning(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "11", "Redis maxmemory-policy that can evict keys")
	var figs []string
	for _, policy := range []string{"allkeys-lru", "volatile-ttl", "noeviction"} {
		c := newCluster(t, clusterConfig{Replicas: 1, Job: jobSpec{Sleep: 100 * time.Millisecond},
			RedisArgs: []string{"--maxmemory-policy", policy}})
		r := c.Replicas()[0]
		started := r.logs("solocron starting")
		if len(started) != 1 {
			t.Fatalf("%s: no start record", policy)
		}
		if policy == "noeviction" {
			c.waitRun(20*time.Second, "a run", func(runRec) bool { return true })
			time.Sleep(time.Second)
			if w := r.logs("EVICT"); len(w) > 0 {
				t.Errorf("noeviction: warning anyway: %v", w[0].Fields)
			}
			figs = append(figs, "noeviction: no warning")
			continue
		}
		var w []logRec
		testkit.WaitFor(t, 15*time.Second, policy+" warning", func() bool { w = r.logs("EVICT"); return len(w) > 0 })
		if w[0].Level != "WARN" || w[0].Fields["maxmemory_policy"] != policy || !strings.Contains(w[0].Msg, "start twice") {
			t.Errorf("%s: warning %v", policy, w[0].Fields)
		}
		figs = append(figs, policy+": WARN "+ms(w[0].Time.Sub(started[0].Time))+" after start")
	}
	row.Runs, row.Duplicates = -1, -1
	row.figure("%s", strings.Join(figs, "; "))
}
