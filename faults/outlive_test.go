//go:build faults

package faults_test

import (
	"testing"
	"time"
)

// 25. The replica holding a run of a concurrency-2 job freezes (SIGSTOP)
// for 6 s, twice the lease, while its job process, in a process group of
// its own under its supervisor, runs on. SPEC §7: "A lost lease leaves no
// process of the job alive by the time Redis could give the slot to another
// holder". Asserted: the frozen replica's job process is gone by the time
// its lease ends at Redis, so that no more than 2 job processes are ever
// alive at once.
//
// Until 2026-11-27 nothing killed the job of a frozen (or wedged) daemon:
// only the daemon's own watchdog did, on SIGCONT, and the job outlived its
// lease at Redis by the rest of the freeze (about 3 s here), beside the
// slot's next holder — 3 processes of a concurrency-2 job at once. Now the
// job's supervisor, a separate process the freeze does not stop, has the
// lease's local deadline from the daemon at each renewal and stops the job
// itself (SIGTERM, then SIGKILL after kill_grace).
func TestScenario25FrozenReplicaJobOutlivesLease(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "25", "the holder of a concurrency-2 run frozen 6 s (2 × lease): is its job gone when its lease ends at Redis?")
	c := newCluster(t, clusterConfig{Replicas: 3, Sink: newSlotSink(), Job: jobSpec{Sleep: 12 * time.Second, Concurrency: 2}})
	first := c.firstRun()
	w := c.replica(first.Replica)
	c.watch.freshRenewal(t, first.RunID, 10*time.Second)
	stopped := w.stop()
	time.Sleep(6 * time.Second)
	resumed := w.cont()
	job := c.waitEnded(first.RunID, 5*time.Second)
	o, _ := c.watch.Obs(first.RunID)
	outlived := job.End.Sub(o.End())
	most := 0
	runs := c.led.Runs()
	for _, r := range runs {
		n := 0
		for _, x := range runs {
			if !x.Start.After(r.Start) && (x.End.IsZero() || x.End.After(r.Start)) {
				n++
			}
		}
		most = max(most, n)
	}
	row.Runs = len(starts(runs))
	row.figure("frozen at %s; lease ended at Redis %s into the freeze; the job ended %s after that (%s after SIGCONT); at most %d job processes at once",
		stopped.Format("15:04:05.000"), dur(o.End().Sub(stopped)), dur(outlived), ms(job.End.Sub(resumed)), most)
	if outlived > 0 {
		t.Errorf("the frozen replica's job outlived its lease at Redis by %s", outlived)
	}
	if most > 2 {
		t.Errorf("%d job processes of a concurrency-2 job alive at once", most)
	}
}
