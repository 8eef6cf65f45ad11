package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// Timing is the schedule and blackouts as validation parses them: the
// instants a console or `scheduler next` lists are the ones the table runs.
func TestTiming(t *testing.T) {
	j := scheduler.Job{Name: "t", Schedule: "0 0 12 * * *", Timezone: "Europe/Berlin",
		Blackouts: []scheduler.Blackout{{From: time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 12, 26, 0, 0, 0, 0, time.UTC)}}}
	tm, err := j.Timing()
	if err != nil {
		t.Fatal(err)
	}
	if got := tm.Location().String(); got != "Europe/Berlin" {
		t.Errorf("Location = %s", got)
	}
	next := tm.Next(time.Date(2026, 12, 23, 12, 0, 0, 0, time.UTC))
	if want := time.Date(2026, 12, 24, 11, 0, 0, 0, time.UTC); !next.Equal(want) {
		t.Errorf("Next = %s, want %s", next, want)
	}
	if _, in := tm.InBlackout(next); !in {
		t.Errorf("%s not in the blackout", next)
	}
	if _, in := tm.InBlackout(next.Add(-24 * time.Hour)); in {
		t.Errorf("%s in the blackout", next.Add(-24*time.Hour))
	}
	bad := scheduler.Job{Name: "t", Schedule: "61 * * * *"}
	if _, err := bad.Timing(); err == nil || !strings.Contains(err.Error(), "Schedule") {
		t.Errorf("Timing of a bad schedule: %v, want an error naming Schedule", err)
	}
}
