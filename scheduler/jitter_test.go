package scheduler_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	sched "github.com/solocron/solocron/internal/schedule"
	"github.com/solocron/solocron/scheduler"
)

// A jitter as long as the schedule's shortest interval keeps the runs in
// order (a run's delay is always less than the jitter): every instant is
// decided, once.
func TestJitterAsLongAsTheIntervalDecidesEveryInstant(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		schedule string
		jitter   time.Duration
	}{
		{"@every 1s", time.Second},
		{"@every 5s", 5 * time.Second},
		{"*/2 * * * * *", 2 * time.Second},
	} {
		t.Run(tc.schedule, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				checkEveryInstantDecided(t, tc.schedule, tc.jitter)
			})
		})
	}
}

// checkEveryInstantDecided runs a job on schedule with jitter for two
// minutes and checks that every instant from its first run to the last
// instant whose deadline passed has exactly one record.
func checkEveryInstantDecided(t *testing.T, schedule string, jitter time.Duration) {
	t.Helper()
	c := newCluster(t)
	c.replica("a", []scheduler.Job{{Name: "j", Schedule: schedule, Jitter: jitter, Handler: c.ledger.Job(nil)}})
	time.Sleep(2 * time.Minute)
	c.stop()
	end := time.Now()
	recs := map[time.Time]int{}
	var first time.Time
	for _, r := range c.history("j") {
		recs[r.ScheduledAt.UTC()]++
		if first.IsZero() || r.ScheduledAt.Before(first) {
			first = r.ScheduledAt.UTC()
		}
	}
	if first.IsZero() {
		t.Fatal("no run recorded")
	}
	s, err := sched.Parse(schedule, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	n := 0
	for at := first; at.Add(jitter + 10*time.Second).Before(end); at = s.Next(at).UTC() {
		n++
		switch recs[at] {
		case 1:
		case 0:
			missing = append(missing, at.Format(time.TimeOnly))
		default:
			t.Errorf("%s has %d records", at.Format(time.TimeOnly), recs[at])
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d instants have no record (neither run nor missed): %s", len(missing), n, strings.Join(missing, " "))
	}
}

// A jitter longer than the schedule's shortest interval is refused, by
// Validate, New and Reload, naming the interval: the dispatcher takes a
// job's instants in order, so runs firing out of order left instants with
// no record at all (70 of 106 instants of "@every 1s" with a jitter of 1m
// were neither run nor recorded missed).
func TestJitterLongerThanTheIntervalIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		schedule, tz string
		jitter       time.Duration
		want         string // "" = accepted
	}{
		{"@every 1s", "", time.Minute, "1m0s is longer than the schedule's interval, 1s"},
		{"@every 1s", "", 1001 * time.Millisecond, "1.001s is longer than the schedule's interval, 1s"},
		{"@every 1m", "", time.Minute, ""},
		{"@every 1m", "", 59 * time.Second, ""},
		{"@every 10s", "", 11 * time.Second, "longer than the schedule's interval, 10s"},
		{"*/5 * * * * *", "", 6 * time.Second, "longer than the schedule's shortest interval, 5s"},
		{"*/5 * * * * *", "", 5 * time.Second, ""},
		// Weekdays at 9 and 17: 8 hours is the shortest gap, not 16 or 64.
		{"0 9,17 * * 1-5", "", 9 * time.Hour, "longer than the schedule's shortest interval, 8h0m0s"},
		{"0 9,17 * * 1-5", "", 8 * time.Hour, ""},
		// Every 6 hours of the wall clock in New York: 5 hours of elapsed
		// time the night the clocks go forward (00:00 EST to 06:00 EDT),
		// once a year; 6 on every other day.
		{"0 */6 * * *", "America/New_York", 330 * time.Minute, "longer than the schedule's shortest interval, 5h0m0s"},
		{"0 */6 * * *", "America/New_York", 5 * time.Hour, ""},
		{"0 */6 * * *", "UTC", 6 * time.Hour, ""},
		{"@daily", "", 2 * time.Hour, ""},
		{"@every 1s", "", time.Second, ""},
	} {
		j := scheduler.Job{Name: "j", Schedule: tc.schedule, Timezone: tc.tz, Jitter: tc.jitter, Handler: noop}
		err := j.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s jitter %s: %v", tc.schedule, tc.jitter, err)
			}
			continue
		}
		var fe *scheduler.FieldError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &fe) || fe.Field != "Jitter" {
			t.Errorf("%s jitter %s: Validate() = %v, want a Jitter error with %q", tc.schedule, tc.jitter, err, tc.want)
		}
	}

	// New and Reload refuse it too (an embedding program's table).
	bad := []scheduler.Job{{Name: "j", Schedule: "@every 1s", Jitter: time.Minute, Handler: noop}}
	_, rdb := redistest.Mini(t)
	store := schedtest.RedisStore(t, rdb)
	if _, err := scheduler.New(store, bad); err == nil || !strings.Contains(err.Error(), "jobs[0].Jitter: 1m0s is longer than the schedule's interval, 1s") {
		t.Errorf("New = %v, want the jitter refused", err)
	}
	s, err := scheduler.New(store, []scheduler.Job{{Name: "j", Schedule: "@every 1s", Handler: noop}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(bad); err == nil || !strings.Contains(err.Error(), "jobs[0].Jitter:") {
		t.Errorf("Reload = %v, want the jitter refused", err)
	}
}
