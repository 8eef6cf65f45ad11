package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/solocron/solocron/jobs"
)

// catchupByWalking is catchupInstants as it was: every instant from the
// later of the last decided one and the window's start.
func catchupByWalking(j *jobState, last, now time.Time) []time.Time {
	if last.IsZero() {
		return nil
	}
	from := now.Add(-j.CatchupWindow)
	if last.After(from) {
		from = last
	}
	var out []time.Time
	for t := j.sched.Next(from); !t.IsZero() && j.fire(t).Add(j.StartingDeadline).Before(now); t = j.sched.Next(t) {
		if j.Catchup == CatchupLatest {
			out = append(out[:0], t)
			continue
		}
		if len(out) == maxCatchup {
			out = append(out[:0], out[1:]...)
		}
		out = append(out, t)
	}
	return out
}

// The instants a replica catches up are those walking every instant since
// the last decided one gives, for schedules, jitters, deadlines, windows
// and gaps drawn at random.
func TestCatchupInstantsAsWalking(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 20))
	schedules := []string{"@every 1s", "@every 7s", "*/5 * * * * *", "* * 9-10 * * *", "0 */3 * * * *", "30 2 * * *", "@hourly", "0 0 29 2 *"}
	durations := []time.Duration{0, 500 * time.Millisecond, time.Second, 3 * time.Second, 10 * time.Second, time.Minute, 2 * time.Hour}
	windows := []time.Duration{time.Second, 10 * time.Second, time.Minute, time.Hour, 6 * time.Hour, 100000 * time.Hour}
	base := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for i := range 400 {
		mode := CatchupLatest
		if rng.IntN(2) == 0 {
			mode = CatchupAll
		}
		spec := Job{Name: fmt.Sprintf("j%d", i), Schedule: schedules[rng.IntN(len(schedules))], Handler: jobs.Func(func(context.Context) error { return nil }),
			Jitter: durations[rng.IntN(len(durations))], StartingDeadline: durations[1+rng.IntN(len(durations)-1)],
			CatchupWindow: windows[rng.IntN(len(windows))], Catchup: mode}
		j := testState(t, spec)
		now := base.Add(time.Duration(rng.Int64N(int64(48 * time.Hour))))
		last := now.Add(-time.Duration(rng.Int64N(int64(8 * time.Hour))))
		if got, want := catchupInstants(j, last, now), catchupByWalking(j, last, now); !slices.Equal(got, want) {
			t.Errorf("%s %s jitter %s deadline %s window %s, last %s, now %s: %d instants %v..., walking gives %d %v...", spec.Schedule, mode,
				spec.Jitter, spec.StartingDeadline, spec.CatchupWindow, last, now, len(got), got[:min(len(got), 3)], len(want), want[:min(len(want), 3)])
		}
	}
}

// A job every second whose last decided instant is years old, with a
// catch-up window longer still: the instants to catch up (the latest
// 1,000) are found at once. Walking every instant since the last decided
// one took about a second per job for a state a month old, at the first
// heartbeat, which every replica makes before it claims anything: with 40
// such jobs, three real daemons claimed nothing for two minutes, and Redis
// refused every catch-up claim and outage record once they came (the gap
// was read longer ago than the record retention) — those instants were
// left with no record at all.
func TestCatchupInstantsAfterYears(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 1, 0, time.UTC)
	for _, mode := range []Catchup{CatchupAll, CatchupLatest} {
		j := testState(t, Job{Name: "j", Schedule: "@every 1s", Handler: jobs.Func(func(context.Context) error { return nil }),
			StartingDeadline: 2 * time.Second, CatchupWindow: 100000 * time.Hour, Catchup: mode})
		done := make(chan []time.Time, 1)
		go func() { done <- catchupInstants(j, now.AddDate(-10, 0, 0), now) }()
		select {
		case got := <-done:
			n := maxCatchup
			if mode == CatchupLatest {
				n = 1
			}
			// Due and past their deadline: every instant up to now - 3 s.
			latest := now.Add(-3 * time.Second).Truncate(time.Second)
			if len(got) != n || !got[n-1].Equal(latest) || !got[0].Equal(latest.Add(-time.Duration(n-1)*time.Second)) {
				t.Errorf("%s: %d instants from %v to %v, want %d up to %s", mode, len(got), got[0], got[len(got)-1], n, latest)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: catch-up did not return within 20 s: it walks every instant since the last decided one", mode)
		}
	}
}
