//go:build faults

package faults_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// 6a. Redis is killed (SIGKILL) mid-run and restarted empty, as after a
// crash without persistence. No replica exits; the holder finds its run
// gone and cancels it; no run scheduled before the loss runs again; fencing
// tokens keep rising; runs resume within seconds.
func TestScenario06aRedisRestartEmpty(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "6a", "Redis kill -9 + restart without persistence, mid-run")
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Sleep: 4 * time.Second, KillGrace: termGrace}})
	lease := c.cfg.Job.Lease

	first := c.firstRun()
	sleepUntil(first.Start.Add(1500 * time.Millisecond))
	killed := time.Now()
	c.redis.Restart()
	restarted := time.Now()
	job := c.waitEnded(first.RunID, lease+3*time.Second)
	next := c.waitRun(15*time.Second, "a run after the restart", func(r runRec) bool { return r.Start.After(restarted) })
	last := c.waitRun(20*time.Second, "two runs after the restart", func(r runRec) bool {
		return r.Start.After(next.Start) && !r.End.IsZero()
	})
	sleepUntil(last.End.Add(time.Second))

	row.Recovery = dur(next.Start.Sub(killed))
	row.figure("Redis back %s after the kill; holder's job stopped %s after (its record was gone); first run after the loss: instant restart+%s, started kill+%s",
		ms(restarted.Sub(killed)), ms(job.End.Sub(restarted)), dur(next.Scheduled().Sub(restarted)), dur(next.Start.Sub(killed)))
	row.figure("tokens %d before, %d after", first.Token, next.Token)

	for _, r := range c.Replicas() {
		if !r.alive() {
			t.Errorf("%s exited when Redis lost its data", r.id)
		}
	}
	if job.EndReason != "term" {
		t.Errorf("the holder's job ended %q, want term: its run's record is gone, so its lease is", job.EndReason)
	}
	if job.End.Sub(restarted) > lease {
		t.Errorf("the holder stopped its job %s after Redis came back empty", job.End.Sub(restarted))
	}
	all := c.led.Runs()
	for _, r := range all {
		if r.Start.After(restarted) && !r.Scheduled().After(killed) {
			t.Errorf("%s, scheduled before the loss, started after it on %s", r.RunID, r.Replica)
		}
	}
	if bad := tokensRise(all); bad != "" {
		t.Errorf("fencing tokens do not rise across the loss: %s", bad)
	}
	if next.Start.Sub(killed) > 5*time.Second {
		t.Errorf("runs resumed %s after the kill", next.Start.Sub(killed))
	}
	// One loss, one new epoch: every replica that notices it learns the
	// same one (a store that drew a second epoch for the same loss would
	// push the floor again, and with it the runs after the loss).
	noticed := 0
	epochs := map[string][]string{}
	for _, r := range c.Replicas() {
		for _, l := range r.logs("Redis lost this job's state") {
			noticed++
			e, _ := l.Fields["new_epoch"].(string)
			epochs[e] = append(epochs[e], r.id+" at "+l.Time.Format("15:04:05.000"))
		}
	}
	if noticed == 0 {
		t.Errorf("no replica noticed the loss")
	}
	if len(epochs) > 1 {
		t.Errorf("one loss, %d new epochs (new epoch: replicas that logged it): %v", len(epochs), epochs)
	}
	// Every instant from the restart on is decided once, recorded: those
	// below the loss floor (loss + max_clock_skew + claim ahead) missed.
	st, got := c.tally(t, row, nextInstant(restarted), last.Scheduled())
	row.figure("%d loss reports by the replicas, %d new epoch(s); instants from the restart: %s", noticed, len(epochs), decisionSummary(got))
	if st.HarmfulAccepted > 0 || st.LegitRejected > 0 {
		t.Errorf("writes: %+v", st)
	}
}

// 6b. SCRIPT FLUSH while a run renews its lease: the scripts are loaded
// again, the run goes on, runs keep starting.
func TestScenario06bScriptFlush(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "6b", "SCRIPT FLUSH mid-run")
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Sleep: 2500 * time.Millisecond}})

	first := c.firstRun()
	sleepUntil(first.Start.Add(800 * time.Millisecond))
	flushed := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.direct.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	job := c.waitEnded(first.RunID, 10*time.Second)
	next := c.waitRun(10*time.Second, "a run after the flush", func(r runRec) bool { return r.Start.After(job.End) })
	last := c.waitRun(15*time.Second, "two runs after the flush", func(r runRec) bool {
		return r.Start.After(next.Start) && !r.End.IsZero()
	})
	sleepUntil(last.End.Add(time.Second))

	o, _ := c.watch.Obs(first.RunID)
	row.Recovery = dur(firstGrantAfter(o, flushed).Sub(flushed))
	row.figure("first renewal after the flush %s later; next run %s after the flushed run ended",
		ms(firstGrantAfter(o, flushed).Sub(flushed)), dur(next.Start.Sub(job.End)))

	if job.EndReason != "ok" {
		t.Errorf("the run in flight ended %q, want ok", job.EndReason)
	}
	checkRecord(t, c, first.RunID, scheduler.Succeeded)
	st, got := c.tally(t, row, first.Scheduled(), last.Scheduled())
	if got["missed"] > 0 || got["lease_lost"] > 0 || got["failed"] > 0 {
		t.Errorf("records after the flush: %v", got)
	}
	wantNoStaleWrites(t, st)
}

// 7a. Redis is frozen (SIGSTOP) for 2 s, less than the lease, right after a
// renewal: the holder's renewals wait, then succeed; nothing is lost.
func TestScenario07aRedisPausedShort(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "7a", "Redis SIGSTOP 2 s (< lease)")
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Sleep: 8 * time.Second}})
	lease := c.cfg.Job.Lease

	first := c.firstRun()
	w := c.replica(first.Replica)
	renewed := c.watch.freshRenewal(t, first.RunID, 3*lease)
	paused := time.Now()
	c.redis.Pause()
	time.Sleep(2 * time.Second)
	resumed := time.Now()
	c.redis.Resume()
	job := c.waitEnded(first.RunID, 15*time.Second)

	o, _ := c.watch.Obs(first.RunID)
	back := firstGrantAfter(o, resumed)
	row.Recovery = dur(back.Sub(resumed))
	row.figure("paused %s after a renewal; first renewal %s after SIGCONT; longest gap between renewals at Redis %s",
		ms(paused.Sub(renewed)), ms(back.Sub(resumed)), ms(maxRenewalGap(o)))

	if job.EndReason != "ok" {
		t.Errorf("the job ended %q, want ok", job.EndReason)
	}
	if lost := w.logs("lease lost"); len(lost) > 0 {
		t.Errorf("lease lost after Redis paused less than the lease: %v", lost[0].Fields)
	}
	if others := othersStarted(c.led.Runs(), first.Start, job.End, w.id); len(others) > 0 {
		t.Errorf("runs started elsewhere while the holder held the slot: %v", others)
	}
	if gap := maxRenewalGap(o); gap >= lease {
		t.Errorf("Redis saw a gap of %s between renewals", gap)
	}
	checkRecord(t, c, first.RunID, scheduler.Succeeded)
	st, _ := c.tally(t, row, first.Scheduled(), first.Scheduled().Add(6*time.Second))
	wantNoStaleWrites(t, st)
	for _, r := range c.Replicas() {
		if !r.alive() {
			t.Errorf("%s exited", r.id)
		}
	}
}

// 7b. Redis is frozen for 6 s, twice the lease. The holder's watchdog
// cancels the job on its own clock while Redis cannot answer; when Redis
// comes back the lease has expired and the runs due meanwhile are decided,
// once each.
func TestScenario07bRedisPausedLong(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "7b", "Redis SIGSTOP 6 s (2 × lease)")
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Sleep: 15 * time.Second, KillGrace: termGrace}})
	lease := c.cfg.Job.Lease

	first := c.firstRun()
	w := c.replica(first.Replica)
	c.watch.freshRenewal(t, first.RunID, 3*lease)
	paused := time.Now()
	c.redis.Pause()
	job := c.waitEnded(first.RunID, lease+2*time.Second)
	sleepUntil(paused.Add(2 * lease))
	resumed := time.Now()
	c.redis.Resume()
	next := c.waitRun(15*time.Second, "a run after Redis resumed", func(r runRec) bool { return r.Start.After(resumed) })
	sleepUntil(next.Start.Add(2 * time.Second))

	o, _ := c.watch.Obs(first.RunID)
	lost := w.logs("lease lost: cancelling the job")
	if len(lost) == 0 {
		t.Fatalf("the holder never logged its lease lost")
	}
	row.Recovery = dur(next.Start.Sub(resumed))
	row.figure("holder cancelled at pause+%s, %s before Redis' lease expiry and %s before Redis answered again; first run after: %s on %s, resume+%s",
		dur(lost[0].Time.Sub(paused)), ms(o.Expiry.Sub(lost[0].Time)), dur(resumed.Sub(lost[0].Time)), next.RunID, next.Replica, dur(next.Start.Sub(resumed)))

	if !lost[0].Time.Before(o.Expiry) {
		t.Errorf("the holder cancelled at %s, not before Redis' lease expiry %s", lost[0].Time, o.Expiry)
	}
	if job.EndReason != "term" || !job.End.Before(resumed) {
		t.Errorf("the holder's job ended %q at %s; want term, before Redis resumed at %s", job.EndReason, job.End, resumed)
	}
	if next.Token <= first.Token {
		t.Errorf("token %d after the pause is not above %d", next.Token, first.Token)
	}
	checkRecord(t, c, first.RunID, scheduler.LeaseLost)
	st, got := c.tally(t, row, first.Scheduled(), resumed.Add(time.Second))
	row.figure("instants from the holder's to resume: %s", decisionSummary(got))
	wantNoStaleWrites(t, st)
	if bad := tokensRise(c.led.Runs()); bad != "" {
		t.Errorf("fencing tokens do not rise: %s", bad)
	}
	for _, r := range c.Replicas() {
		if !r.alive() {
			t.Errorf("%s exited", r.id)
		}
		r.waitReady()
	}
}

// 14. Every replica is down (kill -9) when Redis loses its data (kill -9,
// restart without persistence); the replicas then start again, as new
// processes that remember nothing. The run that ran just before is still
// inside its starting deadline (10 s; the job runs every 5 s), but it must
// not run again: a job state created afresh may be a loss, so no instant
// that could have started before it starts after it. The runs after go on.
func TestScenario14RedisLossWhileAllDown(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "14", "all replicas down, Redis restarts empty, replicas restart (job every 5 s)")
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Schedule: "@every 5s", Sleep: 300 * time.Millisecond}})
	const every = 5 * time.Second

	// A run that started on time (not one a replica found due, late, when
	// it started), so that the restart fits before the next instant.
	first := c.waitRun(20*time.Second, "a run started on time", func(r runRec) bool {
		return !r.Scheduled().IsZero() && r.Start.Sub(r.Scheduled()) < 500*time.Millisecond
	})
	job := c.waitEnded(first.RunID, 5*time.Second)
	down := time.Now()
	for _, r := range c.Replicas() {
		r.kill9()
	}
	c.redis.Restart()
	restarted := time.Now()
	for _, r := range c.Replicas() {
		c.restart(r)
	}
	for _, r := range c.Replicas() {
		r.waitReady()
	}
	ready := time.Now()
	if !ready.Before(first.Scheduled().Add(every)) {
		t.Fatalf("the replicas were ready again %s after %s's instant, not before the next one: too slow to test a rerun",
			ready.Sub(first.Scheduled()), first.RunID)
	}
	next := c.waitRun(3*every, "a run after the restart", func(r runRec) bool { return r.Start.After(restarted) })
	last := c.waitRun(2*every+5*time.Second, "the run after it", func(r runRec) bool {
		return r.Scheduled().After(next.Scheduled()) && !r.End.IsZero()
	})
	next = c.waitEnded(next.RunID, 5*time.Second)

	row.Recovery = dur(next.Start.Sub(restarted))
	row.figure("%s ran at instant+%s and ended; all replicas killed %s after its instant, Redis empty %s later, replicas ready %s after its instant",
		first.RunID, ms(first.Start.Sub(first.Scheduled())), ms(down.Sub(first.Scheduled())), ms(restarted.Sub(down)), ms(ready.Sub(first.Scheduled())))
	row.figure("first run after the restart: %s (instant restart+%s), started restart+%s; tokens %d before, %d after",
		next.RunID, dur(next.Scheduled().Sub(restarted)), dur(next.Start.Sub(restarted)), job.Token, next.Token)

	all := c.led.Runs()
	for _, r := range all {
		if r.Start.After(restarted) && !r.Scheduled().After(down) {
			t.Errorf("%s, whose instant came before the loss, started (again) after it, on %s", r.RunID, r.Replica)
		}
	}
	dups := duplicates(all)
	if len(dups) > 0 {
		t.Errorf("duplicate starts: %v", dups)
	}
	if next.Scheduled().After(first.Scheduled().Add(2 * every)) {
		t.Errorf("runs resumed only at %s, more than one instant after the loss", next.RunID)
	}
	if last.EndReason != "ok" || next.EndReason != "ok" {
		t.Errorf("runs after the loss ended %q and %q, want ok", next.EndReason, last.EndReason)
	}
	// Only instants whose record survived count as decided: those before
	// the loss have none left.
	var decided []string
	for _, r := range c.history() {
		decided = append(decided, fmt.Sprintf("%s %s/%s", r.ScheduledAt.UTC().Format(time.TimeOnly), r.Decision, r.Outcome))
	}
	row.figure("records after the loss: %s", strings.Join(decided, ", "))
	n := starts(all)
	row.Runs, row.Duplicates, row.StaleAccepted = len(n), len(dups), judge(all, c.watch).HarmfulAccepted
	row.Missed = 0
	for _, r := range c.history() {
		if r.Decision == scheduler.Missed {
			row.Missed++
		}
	}
}
