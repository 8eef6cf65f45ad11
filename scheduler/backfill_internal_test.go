package scheduler

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// A replica that read a finished backfill forgets its hint only if the
// hint is still that backfill's: one started between the read and the
// forget keeps it, and runs. Forced interleaving: the beat's read, a new
// backfill, then the beat's forget.
func TestBackfillForgetKeepsANewBackfillsHint(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	s, err := store.NewRedis(c, store.BackendConfig{Prefix: "bff"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ctl := &Control{store: s}
	job := Job{Name: "bf", Schedule: "@every 1m"}
	from := time.Now().Add(-3 * time.Hour).Truncate(time.Hour)
	if _, err := ctl.Backfill(ctx, job, from, from.Add(9*time.Minute), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.CancelBackfill(ctx, job.Name); err != nil {
		t.Fatal(err)
	}
	// The beat: the heartbeat's hints, then the backfill's state.
	if _, _, err := s.ManualHints(ctx, store.HintReq{Since: time.Now(), TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	hints, _ := s.BackfillJobs(ctx)
	if len(hints) != 1 || hints[0].Job != job.Name {
		t.Fatalf("hints %+v, want the job's", hints)
	}
	st, err := ctl.BackfillStatus(ctx, job.Name)
	if err != nil || st == nil || !st.Done() {
		t.Fatalf("first backfill %+v, %v: want done", st, err)
	}
	// A backfill started in between.
	second, err := ctl.Backfill(ctx, job, from, from.Add(4*time.Minute), 1)
	if err != nil {
		t.Fatal(err)
	}
	// The beat forgets what it read.
	if err := s.BackfillForget(ctx, hints[0]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ManualHints(ctx, store.HintReq{Since: time.Now(), TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if hints, _ := s.BackfillJobs(ctx); len(hints) != 1 || hints[0].Job != job.Name {
		t.Fatalf("after forgetting the finished backfill: hints %+v, want the new backfill's (id %s)", hints, second.ID)
	}
	// Once the new one is read and forgotten as done, the hint goes.
	if _, err := ctl.CancelBackfill(ctx, job.Name); err != nil {
		t.Fatal(err)
	}
	hints, _ = s.BackfillJobs(ctx)
	if err := s.BackfillForget(ctx, hints[0]); err != nil {
		t.Fatal(err)
	}
	if n, err := c.ZCard(ctx, s.BackfillHintKey()).Result(); err != nil || n != 0 {
		t.Fatalf("hint key holds %d entries (%v), want none", n, err)
	}
}

// backfillStore is a store on its own redis-server and job "bf" (every
// minute, concurrency 4) with an established state.
func backfillStore(t *testing.T, cfg config) (*store.Redis, *redis.Client, *jobState) {
	t.Helper()
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	s, err := store.NewRedis(c, cfg.backend())
	if err != nil {
		t.Fatal(err)
	}
	j := testJob(t, s, "bf", "@every 1m", func(j *Job) { j.Concurrency = 4 })
	seed(t, c, j)
	return s, c, j
}

// backfillClaims are the claims of a backfill's instants ts, as a beat
// sends them: each with the instant before it as the cursor it saw.
func backfillClaims(j *jobState, b *Backfill, cursor time.Time, ts ...time.Time) []claimReq {
	var out []claimReq
	for i, at := range ts {
		r := claimOf(j, at, store.RunBackfill, "bo-"+strconv.Itoa(i)+"-"+at.Format("150405"))
		r.Base, r.Backfill = cursor, b.ID
		out = append(out, r)
		cursor = at
	}
	return out
}

// A backfill runs the instants of its range that never started (missed,
// skipped): that is what it is for. An instant that started is not run
// again, and counts as run before.
func TestBackfillRunsInstantsThatNeverStarted(t *testing.T) {
	s, c, j := backfillStore(t, config{prefix: "bfr"})
	ctx := context.Background()
	ctl := &Control{store: s}
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Hour)
	ts := []time.Time{t0, t0.Add(time.Minute), t0.Add(2 * time.Minute), t0.Add(3 * time.Minute), t0.Add(4 * time.Minute)}
	record := func(at time.Time, decision, outcome string) {
		t.Helper()
		id := runID(j.Name, at)
		if err := c.HSet(ctx, s.Key(j.Name, "run:"+id[len(j.Name)+1:]), "kind", "s", "sched", at.UnixMilli(),
			"decision", decision, "outcome", outcome, "owner", "someone", "replica", "r0", "error", "as it was").Err(); err != nil {
			t.Fatal(err)
		}
	}
	record(ts[0], "missed", "missed")
	record(ts[1], "skipped_overlap", "skipped_overlap")
	record(ts[2], "skipped_paused", "skipped_paused")
	record(ts[3], "started", "succeeded")
	b, err := ctl.Backfill(ctx, j.Job, ts[0], ts[4], 10)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(backfillClaims(j, b, ts[0].Add(-time.Millisecond), ts...)...))
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Answer{store.AnswerStarted, store.AnswerStarted, store.AnswerStarted, store.AnswerDecided, store.AnswerStarted}
	for i, r := range res {
		if r.Status != want[i] {
			t.Errorf("instant %d: %q, want %q", i, r.Status, want[i])
		}
	}
	b, err = ctl.BackfillStatus(ctx, j.Name)
	if err != nil {
		t.Fatal(err)
	}
	if b.Decided != 5 || b.Started != 4 || b.Already != 1 || b.Skipped != 0 {
		t.Fatalf("backfill %+v: want 5 decided, 4 started, 1 run before", b)
	}
	for _, at := range ts[:3] {
		rec, _ := recordOf(t, s, c, j, runID(j.Name, at))
		if rec["outcome"] != "running" || rec["kind"] != "b" || rec["error"] != "" || rec["fence"] == "" {
			t.Errorf("%s after the backfill took it: %v, want a fresh running backfill record", at.Format(time.RFC3339), rec)
		}
	}
}

// With min_replicas_ack, a backfill's start too few replicas acknowledged
// is taken back: not counted as started, and taken again (before any new
// instant), never dropped with the cursor past it.
func TestBackfillTakesAgainInstantsTakenBack(t *testing.T) {
	s, c, j := backfillStore(t, config{prefix: "bfa", minAck: 1, ackTimeout: 20 * time.Millisecond})
	ctx := context.Background()
	ctl := &Control{store: s}
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Hour)
	ts := []time.Time{t0, t0.Add(time.Minute), t0.Add(2 * time.Minute)}
	b, err := ctl.Backfill(ctx, j.Job, ts[0], ts[2], 10)
	if err != nil {
		t.Fatal(err)
	}
	// No replica acknowledges: both starts are taken back.
	res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(backfillClaims(j, b, ts[0].Add(-time.Millisecond), ts[:2]...)...))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Status != store.AnswerRetry {
			t.Fatalf("instant %d unacknowledged: %q, want %q", i, r.Status, store.AnswerRetry)
		}
	}
	b, err = ctl.BackfillStatus(ctx, j.Name)
	if err != nil {
		t.Fatal(err)
	}
	if b.Started != 0 || b.Decided != 0 || len(redoOf(b)) != 2 || b.Done() {
		t.Fatalf("after the undo: %+v (redo %v), want nothing counted and both instants to take again", b, redoOf(b))
	}
	// A replica without the ack requirement (acks come back): a new
	// instant waits for those taken back.
	s2, err := store.NewRedis(c, store.BackendConfig{Prefix: "bfa"})
	if err != nil {
		t.Fatal(err)
	}
	res, err = s2.Claim(ctx, "r2", 2*time.Second, 3*time.Second, storeClaims(backfillClaims(j, b, ts[1], ts[2])...))
	if err != nil || res[0].Status != store.AnswerRefused {
		t.Fatalf("a new instant before those taken back: %+v, %v, want refused", res, err)
	}
	res, err = s2.Claim(ctx, "r2", 2*time.Second, 3*time.Second, storeClaims(append(backfillClaims(j, b, cursorOf(b), redoOf(b)...), backfillClaims(j, b, ts[1], ts[2])...)...))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Status != store.AnswerStarted {
			t.Errorf("instant %d taken again: %q, want started", i, r.Status)
		}
	}
	b, err = ctl.BackfillStatus(ctx, j.Name)
	if err != nil {
		t.Fatal(err)
	}
	if b.Started != 3 || b.Decided != 3 || len(redoOf(b)) != 0 {
		t.Fatalf("after taking them again: %+v, want 3 started and decided", b)
	}
}

// A backfill never starts an instant that started already, even once the
// run's record expired: a job that runs often keeps a record only its
// retention (max(2 x interval, skew + deadline)), seconds, and the history
// says it ran. Simulation seeds 7322, 7354, 7394, 7399, 7444, 7448: a
// backfill of a 1 s job started an instant that had succeeded ~10 s
// earlier. Both ways: a run that ended before the backfill began, and one
// that started after (the backfill reads the history's newer entries).
// An instant whose holder reported it never started (missed) is still
// run. The records are deleted as Redis expires them.
func TestBackfillSkipsInstantsThatRanWhoseRecordExpired(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	s, err := store.NewRedis(c, store.BackendConfig{Prefix: "bfx"})
	if err != nil {
		t.Fatal(err)
	}
	j := testJob(t, s, "catch", "@every 1s", nil)
	seed(t, c, j)
	ctx := context.Background()
	ctl := &Control{store: s}
	now := time.Now().Truncate(time.Second)
	ts := []time.Time{now.Add(-4 * time.Second), now.Add(-3 * time.Second), now.Add(-2 * time.Second)}
	run := func(at time.Time, o Outcome) {
		t.Helper()
		r := claimOf(j, at, store.RunScheduled, "sched-"+at.Format("150405"))
		res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(r))
		if err != nil || res[0].Status != store.AnswerStarted {
			t.Fatalf("scheduled claim of %s: %+v, %v", at.Format(time.RFC3339), res, err)
		}
		if got, err := s.Complete(ctx, []store.CompleteReq{{R: &r.StoreClaim, Replica: "r1", Outcome: o, Attempts: 1}}); err != nil || got[0] != "ok" {
			t.Fatalf("complete %s: %v, %v", at.Format(time.RFC3339), got, err)
		}
	}
	expire := func(at time.Time) {
		t.Helper()
		id := runID(j.Name, at)
		if err := c.Del(ctx, s.Key(j.Name, "run:"+id[len(j.Name)+1:])).Err(); err != nil {
			t.Fatal(err)
		}
	}
	run(ts[0], Succeeded)
	run(ts[1], Missed) // its holder never started it
	b, err := ctl.Backfill(ctx, j.Job, ts[0], ts[2], 10)
	if err != nil {
		t.Fatal(err)
	}
	run(ts[2], Succeeded) // after the backfill began
	for _, at := range ts {
		expire(at)
	}
	res, err := s.Claim(ctx, "r2", 2*time.Second, 3*time.Second, storeClaims(backfillClaims(j, b, ts[0].Add(-time.Millisecond), ts...)...))
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Answer{store.AnswerDecided, store.AnswerStarted, store.AnswerDecided}
	for i, r := range res {
		if r.Status != want[i] {
			t.Errorf("instant %s: %q, want %q", ts[i].Format(time.RFC3339), r.Status, want[i])
		}
	}
	if b, err = ctl.BackfillStatus(ctx, j.Name); err != nil {
		t.Fatal(err)
	}
	if b.Decided != 3 || b.Started != 1 || b.Already != 2 {
		t.Fatalf("backfill %+v: want 3 decided, 1 started, 2 run before", b)
	}
}

// cursorOf and redoOf are b's BackfillProgress.
func cursorOf(b *Backfill) time.Time { c, _, _ := store.BackfillProgress(b); return c }

func redoOf(b *Backfill) []time.Time { _, r, _ := store.BackfillProgress(b); return r }

// After Redis lost data (noticed: a replica remembers the job's epoch), a
// backfill does not run an instant from before the loss: its record, and
// the history entry that would tell, may have gone with the data, and the
// instant may have run. Within its record's retention it is recorded missed
// with the loss as its reason, as the scheduled claim of such an instant
// would be; older, nothing is written (a record made after the loss, the
// run recorded missed when a replica noticed it, may have expired since:
// a second decision would be filed, counted and notified). Either way the
// backfill counts it skipped. A new job (no replica had seen it: an unsure
// floor) backfills its past as before.
func TestBackfillDoesNotRunInstantsFromBeforeADataLoss(t *testing.T) {
	for _, tc := range []struct {
		name    string
		known   bool // a replica remembers the job's state: a sure loss
		recent  bool // the instants are within their records' retention (2 minutes)
		started int
	}{{"data lost", true, false, 0}, {"data lost, within the retention", true, true, 0}, {"new job", false, false, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			s, c, j := backfillStore(t, config{prefix: "bfl"})
			ctx := context.Background()
			ctl := &Control{store: s}
			t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Hour)
			ts := []time.Time{t0, t0.Add(time.Minute), t0.Add(2 * time.Minute)}
			if tc.recent {
				m0 := time.Now().Truncate(time.Minute)
				ts = []time.Time{m0.Add(-time.Minute), m0}
			}
			b, err := ctl.Backfill(ctx, j.Job, ts[0], ts[len(ts)-1], 10)
			if err != nil {
				t.Fatal(err)
			}
			// The job's state is gone (the backfill's survived: a failover
			// to a copy that had it, or a restore of an older snapshot).
			if err := c.Del(ctx, j.metaKey).Err(); err != nil {
				t.Fatal(err)
			}
			if !tc.known {
				j.memo = &memo{}
			}
			// One old instant's record survived: skipped, as decided before
			// the loss (a backfill reruns such a run when nothing was lost).
			survived := -1
			if !tc.recent {
				survived = 1
				id := runID(j.Name, ts[1])
				if err := c.HSet(ctx, s.Key(j.Name, "run:"+id[len(j.Name)+1:]), "kind", "s", "sched", ts[1].UnixMilli(),
					"decision", "skipped_overlap", "outcome", "skipped_overlap", "owner", "someone", "replica", "r0", "error", "as it was").Err(); err != nil {
					t.Fatal(err)
				}
			}
			res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(backfillClaims(j, b, ts[0].Add(-time.Millisecond), ts...)...))
			if err != nil {
				t.Fatal(err)
			}
			started := 0
			for i, r := range res {
				if r.Status == store.AnswerStarted {
					started++
					continue
				}
				rec, entry := recordOf(t, s, c, j, runID(j.Name, ts[i]))
				switch {
				case i == survived:
					// Its record stands, decided once: no second entry.
					if r.Status != store.AnswerSkippedOverlap || rec["error"] != "as it was" || entry != nil {
						t.Errorf("instant %s: %q, record %v, history %v; want its record left as it was", ts[i].Format(time.RFC3339), r.Status, rec, entry)
					}
				case tc.recent:
					if r.Status != store.AnswerMissed || rec["outcome"] != "missed" || !strings.Contains(rec["error"], "Redis lost data") || entry == nil {
						t.Errorf("instant %s: %q, record %v, history %v; want recorded missed for the data loss", ts[i].Format(time.RFC3339), r.Status, rec, entry)
					}
				default:
					// Past its retention: answered as decided missed, nothing written.
					if r.Status != store.AnswerDecided || r.Outcome != string(store.Missed) || len(rec) != 0 || entry != nil {
						t.Errorf("instant %s: %q (%q), record %v, history %v; want decided missed with nothing written", ts[i].Format(time.RFC3339), r.Status, r.Outcome, rec, entry)
					}
				}
			}
			if started != tc.started {
				t.Fatalf("%d of %d instants started, want %d", started, len(ts), tc.started)
			}
			if b, err = ctl.BackfillStatus(ctx, j.Name); err != nil {
				t.Fatal(err)
			}
			if n := len(ts); b.Decided != n || b.Started != tc.started || b.Skipped != n-tc.started {
				t.Fatalf("backfill %+v: want %d decided, %d started, %d skipped", b, n, tc.started, n-tc.started)
			}
		})
	}
}
