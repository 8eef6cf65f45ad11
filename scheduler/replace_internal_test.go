package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// overlap: replace stops an older run for a newer one, never the other way
// round: a claim of an earlier instant that comes late (after an outage,
// or answered late) finds the slot held by a later instant's run and is
// skipped, whether that run has started or was claimed ahead and waits
// for its instant. Replacing a run claimed ahead let it start at its
// instant anyway with the lower token (simulation seeds 20, 48, 68:
// slot-tokens-rise), and replacing a newer run with an older one runs the
// instants out of order.
func TestReplaceStopsOnlyOlderRuns(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	s, err := store.NewRedis(c, store.BackendConfig{Prefix: "rep", MaxAhead: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const skew, ttl = 2 * time.Second, 3 * time.Second
	job := func(name string) *jobState {
		j := testJob(t, s, name, "@every 1s", func(j *Job) {
			j.Overlap, j.Concurrency = OverlapReplace, 1
			j.Lease, j.StartingDeadline = 10*time.Second, time.Minute
		})
		seed(t, c, j)
		return j
	}
	claim := func(j *jobState, at time.Time, owner string) store.ClaimRes {
		t.Helper()
		res, err := s.Claim(ctx, "r1", skew, ttl, storeClaims(claimOf(j, at, 's', owner)))
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	outcome := func(j *jobState, at time.Time) string {
		t.Helper()
		o, err := c.HGet(ctx, s.Key(j.Name, "run:"+runID(j.Name, at)[len(j.Name)+1:]), "outcome").Result()
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	now = now.Truncate(time.Millisecond)

	t.Run("claimed ahead", func(t *testing.T) {
		j := job("ahead")
		later, earlier := now.Add(300*time.Millisecond), now.Add(-5*time.Second)
		if r := claim(j, later, "o1"); r.Status != store.AnswerStarted {
			t.Fatalf("claim ahead: %+v", r)
		}
		if r := claim(j, earlier, "o2"); r.Status != store.AnswerSkippedOverlap {
			t.Errorf("a late claim of an earlier instant, the slot held by a run claimed ahead: %q, want %q", r.Status, store.AnswerSkippedOverlap)
		}
		if o := outcome(j, later); o != "running" {
			t.Errorf("the run claimed ahead is %q, want running", o)
		}
	})
	t.Run("started later instant", func(t *testing.T) {
		j := job("newer")
		later, earlier := now.Add(-time.Second), now.Add(-3*time.Second)
		if r := claim(j, later, "o1"); r.Status != store.AnswerStarted {
			t.Fatalf("claim: %+v", r)
		}
		if r := claim(j, earlier, "o2"); r.Status != store.AnswerSkippedOverlap {
			t.Errorf("a late claim of an earlier instant, the slot held by a later one: %q, want %q", r.Status, store.AnswerSkippedOverlap)
		}
		if o := outcome(j, later); o != "running" {
			t.Errorf("the later instant's run is %q, want running", o)
		}
	})
	t.Run("started earlier instant", func(t *testing.T) {
		j := job("older")
		earlier, later := now.Add(-3*time.Second), now.Add(-time.Second)
		first := claim(j, earlier, "o1")
		if first.Status != store.AnswerStarted {
			t.Fatalf("claim: %+v", first)
		}
		second := claim(j, later, "o2")
		if second.Status != store.AnswerStarted {
			t.Fatalf("a later instant, the slot held by an earlier one: %+v, want started", second)
		}
		if o := outcome(j, earlier); o != "replaced" {
			t.Errorf("the earlier run is %q, want replaced", o)
		}
		if second.Fence <= first.Fence || second.Slot != first.Slot {
			t.Errorf("the replacing run: token %d slot %d; the replaced: token %d slot %d", second.Fence, second.Slot, first.Fence, first.Slot)
		}
	})
}
