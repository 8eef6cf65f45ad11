package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// A job's instants in its own zone carry the offset from UTC: "CST" alone
// reads as the US Central time, six hours behind UTC, for a job at noon in
// Shanghai, eight hours ahead; a zone with no abbreviation ("+04") shows
// the offset once.
func TestInstantsInTheJobsZoneAreUnambiguous(t *testing.T) {
	t.Parallel()
	nop := jobs.Func(func(context.Context) error { return nil })
	tab := []scheduler.Job{
		{Name: "lottery", Schedule: "0 0 12 * * *", Timezone: "Asia/Shanghai", Handler: nop},
		{Name: "chicago", Schedule: "0 0 12 * * *", Timezone: "America/Chicago", Handler: nop},
		{Name: "dubai", Schedule: "0 0 12 * * *", Timezone: "Asia/Dubai", Handler: nop},
	}
	c := newClusterOf(t, 0, tab)
	now := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	h := c.console(t, console.Config{Now: func() time.Time { return now }})
	for _, tc := range []struct{ path, want, not string }{
		{"/jobs/lottery", "2026-01-05 12:00:00 CST (UTC+08:00)", ""},
		{"/jobs/chicago", "2026-01-05 12:00:00 CST (UTC-06:00)", ""},
		{"/jobs/dubai", "2026-01-05 12:00:00 UTC+04:00", "+04 ("},
		{"/", "12:00:00 CST (UTC+08:00)", ""},
		{"/", "12:00:00 CST (UTC-06:00)", ""},
	} {
		w := get(t, h, tc.path)
		if w.Code != 200 {
			t.Fatalf("GET %s: %d", tc.path, w.Code)
		}
		body := strings.ReplaceAll(w.Body.String(), "&#43;", "+")
		if !strings.Contains(body, tc.want) || (tc.not != "" && strings.Contains(body, tc.not)) {
			t.Errorf("%s does not show %q (or shows %q)", tc.path, tc.want, tc.not)
		}
	}
}
