package scheduler_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/solocron/solocron/scheduler"
)

func TestBlackoutWindows(t *testing.T) {
	berlin := scheduler.Blackout{Cron: "0 0 24 12 *", Duration: 48 * time.Hour, Timezone: "Europe/Berlin"}
	oneOff := scheduler.Blackout{From: time.Date(2026, 12, 31, 22, 0, 0, 0, time.UTC), To: time.Date(2027, 1, 1, 2, 0, 0, 0, time.UTC)}
	j := scheduler.Job{Blackouts: []scheduler.Blackout{berlin, oneOff}}
	for _, c := range []struct {
		at   string
		want bool
	}{
		{"2026-12-23T22:59:59Z", false}, // 23:59:59 in Berlin
		{"2026-12-23T23:00:00Z", true},  // midnight of the 24th in Berlin: opens
		{"2026-12-25T22:59:59Z", true},
		{"2026-12-25T23:00:00Z", false}, // 48h later: closed
		{"2027-12-24T12:00:00Z", true},  // every year
		{"2026-12-31T21:59:59Z", false},
		{"2026-12-31T22:00:00Z", true}, // from: inclusive
		{"2027-01-01T01:59:59Z", true},
		{"2027-01-01T02:00:00Z", false}, // to: exclusive
	} {
		at, _ := time.Parse(time.RFC3339, c.at)
		if _, got := j.InBlackout(at); got != c.want {
			t.Errorf("InBlackout(%s) = %v, want %v", c.at, got, c.want)
		}
	}
}

func TestBlackoutValidation(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	j := scheduler.Job{Name: "b", Schedule: "@hourly", Handler: scheduler.Job{}.Handler, Blackouts: []scheduler.Blackout{
		{Cron: "61 * * * *", Duration: time.Hour},
		{Cron: "@daily"},
		{From: at, To: at},
		{Cron: "@every 1h", Duration: time.Hour},
		{Cron: "@daily", Duration: time.Hour, From: at},
		{Cron: "@daily", Duration: time.Hour, Timezone: "Mars/Olympus"},
	}}
	err := j.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"Blackouts[0].Cron", "Blackouts[1].Duration: must be positive", "Blackouts[2].To: must be after from",
		"Blackouts[3].Cron: must be a cron spec", "Blackouts[4].Cron: a blackout is either", "Blackouts[5].Timezone"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v\nwant %q", err, want)
		}
	}
}

// Instants inside a blackout window are recorded skipped_blackout, once,
// across replicas; the others run.
func TestBlackoutSkipsInstants(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		start := time.Now().Truncate(time.Second)
		from, to := start.Add(5*time.Second), start.Add(10*time.Second)
		c.replicas(3, []scheduler.Job{{Name: "quiet", Schedule: "@every 1s",
			Blackouts: []scheduler.Blackout{{From: from, To: to}}, Handler: c.ledger.Job(nil)}})
		time.Sleep(15 * time.Second)
		c.stop()
		n := 0
		for _, r := range c.history("quiet") {
			inside := !r.ScheduledAt.Before(from) && r.ScheduledAt.Before(to)
			switch {
			case inside && r.Outcome != scheduler.SkippedBlackout:
				t.Errorf("%s inside the window: %s", r.ID, r.Outcome)
			case !inside && r.Outcome == scheduler.SkippedBlackout:
				t.Errorf("%s outside the window: skipped_blackout", r.ID)
			case inside:
				n++
			}
		}
		if n != 5 {
			t.Errorf("%d instants recorded skipped_blackout, want 5", n)
		}
		for _, e := range c.ledger.Entries() {
			if !e.Scheduled.Before(from) && e.Scheduled.Before(to) {
				t.Errorf("run %s started inside the blackout", e.RunID)
			}
		}
		if d := c.ledger.Duplicates(); len(d) > 0 {
			t.Errorf("duplicates: %v", d)
		}
	})
}
