//go:build faults

package faults_test

import (
	"testing"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// renewedAfter is when the first renewal sent through px after t was
// answered "ok" while its caller still waited (answered within the
// renewal's deadline): a renewal the replica counts.
func renewedAfter(px *proxy, t time.Time, deadline time.Duration) (time.Time, bool) {
	for _, e := range px.Events("renew") {
		if e.Reply == "ok" && !e.Replied.Before(t) && e.Replied.Sub(e.Read) < deadline {
			return e.Replied, true
		}
	}
	return time.Time{}, false
}

// shortNetworkFault cuts the winner off Redis (mode) for d, less than the
// lease, right after a renewal reached Redis: the renewals recover, the run
// goes on and succeeds, nobody else starts.
func shortNetworkFault(t *testing.T, row *row, mode proxyMode, d time.Duration) {
	c := newCluster(t, clusterConfig{Replicas: 3, Proxies: true, Job: jobSpec{Sleep: 8 * time.Second}})
	lease := c.cfg.Job.Lease

	first := c.firstRun()
	w := c.replica(first.Replica)
	renewed := c.watch.freshRenewal(t, first.RunID, 3*lease)
	cut := time.Now()
	w.px.SetMode(mode)
	time.Sleep(d)
	healed := time.Now()
	w.px.SetMode(modePass)
	job := c.waitEnded(first.RunID, 15*time.Second)

	o, _ := c.watch.Obs(first.RunID)
	back, ok := renewedAfter(w.px, healed, c.renewEvery())
	if !ok {
		t.Errorf("no renewal succeeded after the network came back")
		for _, e := range w.px.Events("renew") {
			t.Logf("renew read %s sent %s replied %s: %q", e.Read.Format("15:04:05.000"), e.Sent.Format("15:04:05.000"), e.Replied.Format("15:04:05.000"), e.Reply)
		}
		t.Logf("cut %s healed %s", cut.Format("15:04:05.000"), healed.Format("15:04:05.000"))
	}
	row.Recovery = dur(back.Sub(healed))
	row.figure("cut %s after a renewal reached Redis; a renewal succeeded %s after the network came back; longest gap between renewals at Redis %s",
		ms(cut.Sub(renewed)), ms(back.Sub(healed)), ms(maxRenewalGap(o)))

	keptLease(t, c, w, first, job, o, "a cut")

	st, _ := c.tally(t, row, first.Scheduled(), first.Scheduled().Add(6*time.Second))
	wantNoStaleWrites(t, st)
	w.waitReady()
}

// 4a. The winner's network to Redis is black-holed (sockets stay open,
// nothing arrives) for 2 s, less than the 3 s lease.
func TestScenario04aBlackHoleShort(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "4a", "winner's network black-holed 2 s (< lease)")
	shortNetworkFault(t, row, modeBlackHole, 2*time.Second)
}

// 4c. Every connection of the winner to Redis is reset, and new ones are
// reset at once, for 2 s.
func TestScenario04cReset(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "4c", "winner's connections reset for 2 s")
	shortNetworkFault(t, row, modeReset, 2*time.Second)
}

// 4b. The winner's network is black-holed for twice the lease. Its watchdog
// cancels the job before Redis' lease expires, that is before anyone else
// could claim; the margin is measured. Another replica then runs the next
// run; the winner comes back when the network does.
func TestScenario04bBlackHoleLong(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "4b", "winner's network black-holed 6 s (2 × lease)")
	c := newCluster(t, clusterConfig{Replicas: 3, Proxies: true, Job: jobSpec{Sleep: 15 * time.Second, KillGrace: termGrace}})
	lease := c.cfg.Job.Lease

	first := c.firstRun()
	w := c.replica(first.Replica)
	c.watch.freshRenewal(t, first.RunID, 3*lease)
	cut := time.Now()
	w.px.SetMode(modeBlackHole)
	next := c.waitRun(lease+5*time.Second, "another replica's run", func(r runRec) bool {
		return r.Start.After(cut) && r.Replica != w.id
	})
	job := c.waitEnded(first.RunID, lease+2*time.Second)
	sleepUntil(cut.Add(2 * lease))
	healed := time.Now()
	w.px.SetMode(modePass)

	o, _ := c.watch.Obs(first.RunID)
	g, _ := c.watch.Obs(next.RunID)
	expiry := o.Expiry // the last renewal Redis received + the lease
	lost := w.logs("lease lost: cancelling the job")
	if len(lost) == 0 {
		t.Fatalf("the cut-off winner never logged its lease lost")
	}
	margin := expiry.Sub(lost[0].Time)
	jobMargin := expiry.Sub(job.End)
	row.Recovery = dur(next.Start.Sub(cut))
	row.figure("winner cancelled %s before Redis' lease expiry (job process gone %s before); %s took over at cut+%s, %s after the expiry",
		ms(margin), ms(jobMargin), next.Replica, dur(next.Start.Sub(cut)), ms(next.Start.Sub(expiry)))

	if margin <= 0 {
		t.Errorf("the winner cancelled its job %s after Redis' lease expired (%s): another replica could have claimed first",
			-margin, expiry.Format("15:04:05.000"))
	}
	if job.EndReason != "term" {
		t.Errorf("the cut-off winner's job ended %q, want term (cancelled)", job.EndReason)
	}
	if len(g.Grants) > 0 && g.Granted().Before(expiry) {
		t.Errorf("the slot was granted again at %s, before the lease expired at %s", g.Granted(), expiry)
	}
	if !next.Start.After(job.End) {
		t.Errorf("the next run started at %s, before the cut-off winner's job was gone at %s", next.Start, job.End)
	}
	if next.Token <= first.Token {
		t.Errorf("the new holder's token %d is not above the old one's %d", next.Token, first.Token)
	}
	checkRecord(t, c, first.RunID, scheduler.LeaseLost)

	st, _ := c.tally(t, row, first.Scheduled(), next.Scheduled().Add(-time.Second))
	wantNoStaleWrites(t, st)
	w.waitReady()
	row.figure("cut-off replica ready again %s after the network came back", ms(time.Since(healed)))
}
