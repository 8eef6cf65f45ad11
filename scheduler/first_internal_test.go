package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/solocron/solocron/jobs"
)

// firstByWalking is first as it was: every instant from the deadline's
// start, one at a time.
func firstByWalking(j *jobState, now time.Time) time.Time {
	return walkFirst(j, now.Add(-(j.StartingDeadline + j.Jitter)), now)
}

func testState(t *testing.T, spec Job) *jobState {
	t.Helper()
	spec = spec.withDefaults()
	j, err := newJobState(spec, "k:{"+spec.Name+"}:meta", &memo{}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// The first instant a replica considers is the same as walking every
// instant from the deadline's start, for schedules, jitters and deadlines
// drawn at random.
func TestFirstInstantAsWalking(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	schedules := []string{"@every 1s", "@every 7s", "*/5 * * * * *", "0 */3 * * * *", "30 2 * * *", "@hourly", "0 0 29 2 *"}
	durations := []time.Duration{0, 500 * time.Millisecond, time.Second, 3 * time.Second, 10 * time.Second, time.Minute, 2 * time.Hour}
	base := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for i := range 400 {
		spec := Job{Name: fmt.Sprintf("j%d", i), Schedule: schedules[rng.IntN(len(schedules))], Handler: jobs.Func(func(context.Context) error { return nil }),
			Jitter: durations[rng.IntN(len(durations))], StartingDeadline: durations[1+rng.IntN(len(durations)-1)]}
		j := testState(t, spec)
		now := base.Add(time.Duration(rng.Int64N(int64(48 * time.Hour))))
		if got, want := firstInstant(j, now), firstByWalking(j, now); !got.Equal(want) {
			t.Errorf("%s jitter %s deadline %s at %s: first %s, walking gives %s", spec.Schedule, spec.Jitter, spec.StartingDeadline, now, got, want)
		}
	}
}

// A starting deadline of a hundred years on a job every second: the first
// instant is the one due now, found at once (walking took minutes: every
// start and reload of the daemon hung, and it claimed nothing meanwhile).
func TestFirstInstantWithAHugeDeadline(t *testing.T) {
	j := testState(t, Job{Name: "j", Schedule: "@every 2s", Handler: jobs.Func(func(context.Context) error { return nil }), StartingDeadline: 100 * 365 * 24 * time.Hour})
	now := time.Date(2026, 11, 27, 10, 0, 1, 0, time.UTC)
	done := make(chan time.Time, 1)
	go func() { done <- firstInstant(j, now) }()
	select {
	case got := <-done:
		if want := j.sched.Next(now.Add(-2 * time.Second)); !got.Equal(want) || got.After(now) {
			t.Errorf("first = %s, want %s (the instant due now)", got, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("first did not return within 20 s: it walks the deadline's instants one by one")
	}
}
