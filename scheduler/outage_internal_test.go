package scheduler

import (
	"slices"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/testkit"
)

// naiveOutage is outageInstants without any bound: every instant after
// last, the latest limit kept.
func naiveOutage(j *jobState, last, started time.Time, limit int) []time.Time {
	var out []time.Time
	for t := j.sched.Next(last); !t.IsZero() && !j.fire(t).After(started); t = j.sched.Next(t) {
		out = append(out, t)
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// A short gap (a replica restarted seconds after the last decided
// instant) is walked without the schedule's nominal period, which costs a
// cron job every second up to periodCap instants of its schedule: at a
// restart of 3 replicas × 3,000 such jobs, ~11 s of CPU before any job
// ran. A long gap still starts its walk limit periods back. Both give the
// latest limit instants since last.
func TestOutageInstantsShortGapNeedsNoPeriod(t *testing.T) {
	started := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	// A long gap of an every-second schedule is an instant a second for
	// naiveOutage to walk: 30 days (2.6 million instants, twice) took a
	// minute under -race on a loaded 2-core machine. By default 2 days,
	// still thousands of nominal periods: the same long-gap path.
	// SOLOCRON_FULL=1 (as CI sets) walks the 30 days.
	long := 2 * 24 * time.Hour
	if testkit.Full() {
		long = 30 * 24 * time.Hour
	}
	for _, tc := range []struct {
		spec       string
		gap        time.Duration
		wantPeriod bool
	}{
		{"* * * * * *", 5 * time.Second, false},
		{"* * * * * *", 100 * time.Second, false},
		{"* * * * * *", 300 * time.Second, true},
		{"0 0 9 * * 1-5", 10 * 24 * time.Hour, false},
		{"* * * * * *", long, true},
		{"@every 1s", long, true},
	} {
		spec := Job{Name: "j", Schedule: tc.spec, HistoryLimit: 10}.withDefaults()
		j, err := newJobState(spec, "p:{j}:meta", &memo{}, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		last := started.Add(-tc.gap)
		got := outageInstants(j, last, time.Time{}, started, 10, nil)
		if want := naiveOutage(j, last, started, 10); !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("%s, gap %s: %v, want %v", tc.spec, tc.gap, got, want)
		}
		computed := true
		j.periodOnce.Do(func() { computed = false })
		if computed != tc.wantPeriod {
			t.Errorf("%s, gap %s: period computed %v, want %v", tc.spec, tc.gap, computed, tc.wantPeriod)
		}
	}
}
