//go:build faults

package faults_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// 16a. The job ignores SIGTERM and has a child in its process group that
// ignores it too; its replica's network is black-holed for twice the lease
// (3 s, kill_grace 1 s). SIGKILL comes only kill_grace after SIGTERM, so the
// replica must declare the lease lost early enough that the whole group is
// gone before Redis' lease expires — before anyone else could be given the
// slot.
func TestScenario16aJobIgnoresSIGTERM(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "16a", "job and its child ignore SIGTERM (kill_grace 1 s); winner's network black-holed 6 s")
	c := newCluster(t, clusterConfig{Replicas: 3, Proxies: true, Job: jobSpec{Sleep: 15 * time.Second, KillGrace: time.Second,
		Extra: []string{"-ignore-term", "-child"}}})
	lease := c.cfg.Job.Lease

	first := c.firstRun()
	w := c.replica(first.Replica)
	c.watch.freshRenewal(t, first.RunID, 3*lease)
	cut := time.Now()
	w.px.SetMode(modeBlackHole)
	next := c.waitRun(lease+5*time.Second, "another replica's run", func(r runRec) bool {
		return r.Start.After(cut) && r.Replica != w.id
	})
	job := c.waitEnded(first.RunID, lease+3*time.Second)
	// The group's SIGKILL ends both; the ledger may hear of the child a
	// moment after the job.
	var child childRec
	childGone := func() bool {
		for _, ch := range c.led.Children() {
			if ch.RunID == first.RunID {
				child = ch
			}
		}
		return !child.End.IsZero()
	}
	deadline := time.Now().Add(2 * time.Second)
	for !childGone() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	sleepUntil(cut.Add(2 * lease))
	w.px.SetMode(modePass)

	o, _ := c.watch.Obs(first.RunID)
	expiry := o.Expiry
	gone := job.End
	if child.Start.IsZero() {
		t.Errorf("the job's child never reported: the scenario did not test a process group")
	} else if child.End.IsZero() {
		t.Errorf("the job's child (pid %d) is still alive after its run was cancelled", child.PID)
		gone = time.Now()
	} else if child.End.After(gone) {
		gone = child.End
	}
	lost := w.logs("lease lost")
	if len(lost) == 0 {
		t.Fatalf("the cut-off winner never logged its lease lost")
	}
	margin := expiry.Sub(gone)
	row.Recovery = dur(next.Start.Sub(cut))
	row.figure("lease lost declared %s Redis' lease expiry; job and child gone %s it; %s took over at cut+%s",
		relTo(expiry.Sub(lost[0].Time)), relTo(margin), next.Replica, dur(next.Start.Sub(cut)))

	if job.EndReason != "" {
		t.Errorf("the job ended %q: it should have ignored SIGTERM and been killed", job.EndReason)
	}
	if margin <= 0 {
		t.Errorf("the job's process group was gone %s after Redis' lease expired (%s): it ran on while Redis could give the slot away",
			-margin, expiry.Format("15:04:05.000"))
	}
	if !next.Start.After(gone) {
		t.Errorf("the next run started at %s, before the old job's process group was gone at %s",
			next.Start.Format("15:04:05.000"), gone.Format("15:04:05.000"))
	}
	checkRecord(t, c, first.RunID, scheduler.LeaseLost)
	st, _ := c.tally(t, row, first.Scheduled(), next.Scheduled().Add(-time.Second))
	if st.Stale > 0 {
		row.figure("%d writes after the lease ended, %d of them after the new holder's", st.Stale, st.Harmful)
	}
	wantNoStaleWrites(t, st)
	w.waitReady()
}

// 16b. A table whose kill_grace leaves no room inside the lease (the job
// could outlive its lease by up to kill_grace) is refused, by validate and
// by run, with FILE:LINE:COL naming the field.
func TestScenario16bKillGraceTooLong(t *testing.T) {
	t.Parallel()
	bound(t, 30*time.Second)
	row := report(t, "16b", "a table whose kill_grace leaves no room inside the lease")
	path := filepath.Join(t.TempDir(), "kill-grace.yaml")
	table := `jobs:
  - name: tick
    schedule: "@every 1s"
    lease: 3s
    kill_grace: 3s
    command: ["true"]
`
	if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	// validate prints each problem as a line of its own.
	const want = "5:5 jobs[0].kill_grace"
	line := regexp.MustCompile(`^` + regexp.QuoteMeta(path) + `:(\d+):(\d+): (\S+): (.+)$`)
	out, code, _ := runCLI(t, "validate", "--config", path)
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			got = append(got, m[1]+":"+m[2]+" "+strings.TrimSuffix(m[3], ":"))
		}
	}
	if code != 2 || len(got) != 1 || got[0] != want {
		t.Errorf("validate exited %d reporting %q, want exit 2 and %q:\n%s", code, got, want, out)
	} else {
		row.figure("validate: %s", strings.TrimPrefix(strings.TrimSpace(out), path+":"))
	}
	// run refuses it too, in its log (the embedded store: no network).
	out, code, _ = runCLIWithin(t, 10*time.Second, "run", "--config", path, "--admin-listen=")
	if code != 2 || !strings.Contains(out, path+":5:5: jobs[0].kill_grace:") {
		t.Errorf("run exited %d, want 2 with %s:5:5: jobs[0].kill_grace: …:\n%s", code, path, out)
	}
	row.Runs, row.Duplicates = -1, -1
}

// relTo says how long before (d > 0) or after (d < 0) a moment d is.
func relTo(d time.Duration) string {
	if d < 0 {
		return ms(-d) + " after"
	}
	return ms(d) + " before"
}
