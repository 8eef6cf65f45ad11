package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// backfillRig is a job on a real redis-server, run by n replicas, whose
// handler counts runs per run id and the most in flight at once.
type backfillRig struct {
	t        *testing.T
	ctl      *scheduler.Control
	job      scheduler.Job
	mu       sync.Mutex
	runs     map[string]int
	inflight atomic.Int32
	most     atomic.Int32
	release  chan struct{} // closed: runs return at once
}

func newBackfillRig(t *testing.T, replicas, concurrency int, hold time.Duration) *backfillRig {
	t.Helper()
	srv := redistest.Start(t)
	r := &backfillRig{t: t, runs: map[string]int{}, release: make(chan struct{})}
	r.ctl = schedtest.RedisStore(t, srv.Client(t, nil)).Control()
	r.job = scheduler.Job{Name: "bf", Schedule: "@every 1m", Concurrency: concurrency,
		Handler: jobs.Func(func(ctx context.Context) error {
			if time.Since(jobs.ScheduledAt(ctx)) < time.Hour {
				return nil // a scheduled run, not the backfill's
			}
			n := r.inflight.Add(1)
			defer r.inflight.Add(-1)
			for {
				m := r.most.Load()
				if n <= m || r.most.CompareAndSwap(m, n) {
					break
				}
			}
			r.mu.Lock()
			r.runs[jobs.RunID(ctx)]++
			r.mu.Unlock()
			select {
			case <-time.After(hold):
			case <-r.release:
			case <-ctx.Done():
			}
			return nil
		})}
	for i := range replicas {
		s, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil)), []scheduler.Job{r.job},
			scheduler.WithReplicaID("r"+string(rune('1'+i))), scheduler.WithSyncInterval(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	return r
}

// wait polls the job's backfill until done says so (generous limit).
func (r *backfillRig) wait(done func(*scheduler.Backfill) bool) *scheduler.Backfill {
	r.t.Helper()
	limit := time.Now().Add(60 * time.Second)
	for {
		b, err := r.ctl.BackfillStatus(context.Background(), r.job.Name)
		if err != nil {
			r.t.Fatal(err)
		}
		if b != nil && done(b) {
			return b
		}
		if time.Now().After(limit) {
			r.t.Fatalf("backfill did not get there in time: %+v", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A range runs each instant exactly once across three replicas, oldest
// first, never more than parallel at a time; a second backfill over it
// runs none again (its records are kept), only the new instants.
func TestBackfillRunsEachInstantOnce(t *testing.T) {
	t.Parallel() // real time, little CPU (main_test.go)
	r := newBackfillRig(t, 3, 5, 20*time.Millisecond)
	ctx := context.Background()
	from := time.Now().Add(-3 * time.Hour).Truncate(time.Hour)
	to := from.Add(29 * time.Minute)
	b, err := r.ctl.Backfill(ctx, r.job, from, to, 3)
	if err != nil {
		t.Fatal(err)
	}
	if b.Total != 30 {
		t.Fatalf("total %d, want 30", b.Total)
	}
	if _, err := r.ctl.Backfill(ctx, r.job, from, to, 3); !errors.Is(err, scheduler.ErrBackfillBusy) {
		t.Fatalf("second backfill while one goes on: %v, want ErrBackfillBusy", err)
	}
	b = r.wait((*scheduler.Backfill).Done)
	if !b.AllRan() || b.Started != 30 || b.Succeeded != 30 || b.Already != 0 {
		t.Fatalf("backfill ended %+v", b)
	}
	if m := r.most.Load(); m > 3 {
		t.Fatalf("%d runs in flight at once, parallel 3", m)
	}
	r.mu.Lock()
	for ts := from; !ts.After(to); ts = ts.Add(time.Minute) {
		id := "bf@" + ts.UTC().Format(time.RFC3339)
		if r.runs[id] != 1 {
			t.Errorf("%s ran %d times", id, r.runs[id])
		}
	}
	if len(r.runs) != 30 {
		t.Errorf("%d run ids ran, want 30", len(r.runs))
	}
	r.mu.Unlock()
	hist, err := r.ctl.History(ctx, "bf", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hist {
		if h.Kind != scheduler.KindBackfill && !h.ScheduledAt.After(to) {
			t.Fatalf("record %s kind %q, want backfill", h.ID, h.Kind)
		}
	}

	// Again, over a wider range: the first 30 ran already.
	b, err = r.ctl.Backfill(ctx, r.job, from, to.Add(10*time.Minute), 2)
	if err != nil {
		t.Fatal(err)
	}
	b = r.wait((*scheduler.Backfill).Done)
	if b.Total != 40 || b.Already != 30 || b.Started != 10 || !b.AllRan() {
		t.Fatalf("second backfill ended %+v", b)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, n := range r.runs {
		if n != 1 {
			t.Errorf("%s ran %d times", id, n)
		}
	}
	if len(r.runs) != 40 {
		t.Errorf("%d run ids ran, want 40", len(r.runs))
	}
	st, err := r.ctl.Status(ctx, "bf", 1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Backfill == nil || st.Backfill.Total != 40 || !st.Backfill.Done() {
		t.Fatalf("status backfill %+v", st.Backfill)
	}
}

// Cancel: what started finishes, the rest is dropped.
func TestBackfillCancelDropsTheRest(t *testing.T) {
	r := newBackfillRig(t, 2, 2, time.Minute)
	ctx := context.Background()
	from := time.Now().Add(-5 * time.Hour).Truncate(time.Hour)
	if _, err := r.ctl.Backfill(ctx, r.job, from, from.Add(59*time.Minute), 2); err != nil {
		t.Fatal(err)
	}
	r.wait(func(b *scheduler.Backfill) bool { return b.InFlight == 2 })
	b, err := r.ctl.CancelBackfill(ctx, "bf")
	if err != nil {
		t.Fatal(err)
	}
	if !b.Cancelled || b.Done() {
		t.Fatalf("just cancelled: %+v", b)
	}
	close(r.release)
	b = r.wait((*scheduler.Backfill).Done)
	if b.Started != 2 || b.Succeeded != 2 || b.Dropped() != 58 || b.AllRan() {
		t.Fatalf("cancelled backfill ended %+v", b)
	}
	if _, err := r.ctl.CancelBackfill(ctx, "bf"); !errors.Is(err, scheduler.ErrNoBackfill) {
		t.Fatalf("cancel with none going on: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.runs) != 2 {
		t.Fatalf("%d runs after cancel, want the 2 started", len(r.runs))
	}
}

func TestBackfillBadInput(t *testing.T) {
	srv := redistest.Start(t)
	ctl := schedtest.RedisStore(t, srv.Client(t, nil)).Control()
	job := scheduler.Job{Name: "bf", Schedule: "@every 1s"}
	now := time.Now()
	for _, c := range []struct {
		name     string
		from, to time.Time
		parallel int
		want     string
	}{
		{"from after to", now.Add(-time.Hour), now.Add(-2 * time.Hour), 1, "is after to"},
		{"future", now.Add(-time.Hour), now.Add(time.Hour), 1, "in the future"},
		{"too many", now.Add(-48 * time.Hour), now.Add(-time.Hour), 1, "more than 100000 instants"},
		{"parallel", now.Add(-2 * time.Hour), now.Add(-time.Hour), 1000, "parallel 1000"},
	} {
		_, err := ctl.Backfill(context.Background(), job, c.from, c.to, c.parallel)
		if !errors.Is(err, scheduler.ErrBackfillRange) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrBackfillRange saying %q", c.name, err, c.want)
		}
	}
	noon := scheduler.Job{Name: "bf", Schedule: "0 0 12 * * *"}
	at := time.Date(2020, 1, 1, 13, 0, 0, 0, time.UTC)
	if _, err := ctl.Backfill(context.Background(), noon, at, at.Add(time.Hour), 1); !errors.Is(err, scheduler.ErrBackfillRange) {
		t.Errorf("no instant: %v", err)
	}
}

// A backfill asked for with a schedule other than the replicas' (the
// schedule, time zone or offset changed, by a reload or a deploy) ends
// with a clear error instead of waiting for instants no replica takes.
func TestBackfillEndsWhenTheScheduleChanged(t *testing.T) {
	r := newBackfillRig(t, 2, 2, 0)
	ctx := context.Background()
	from := time.Now().Add(-3 * time.Hour).Truncate(time.Hour)
	asked := r.job
	asked.Schedule, asked.Offset = "@every 2m", 30*time.Second
	if _, err := r.ctl.Backfill(ctx, asked, from, from.Add(29*time.Minute), 2); err != nil {
		t.Fatal(err)
	}
	b := r.wait((*scheduler.Backfill).Done)
	if b.AllRan() || !b.Cancelled || !strings.Contains(b.Error, "schedule changed") {
		t.Fatalf("backfill ended %+v, want stopped with an error saying the schedule changed", b)
	}
	// A new backfill with the replicas' schedule is not refused.
	if _, err := r.ctl.Backfill(ctx, r.job, from, from.Add(2*time.Minute), 2); err != nil {
		t.Fatal(err)
	}
	if b := r.wait((*scheduler.Backfill).Done); !b.AllRan() {
		t.Fatalf("backfill with the replicas' schedule ended %+v", b)
	}
}
