package schedule

import (
	"testing"
	"time"
)

func TestShortestGap(t *testing.T) {
	from := time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC) // just after New York's spring change
	for _, tc := range []struct {
		spec, tz string
		below    time.Duration
		want     time.Duration
		at       string // the gap's first instant, UTC; "" = any
	}{
		{"@every 90s", "", 0, 90 * time.Second, ""},
		{"*/5 * * * * *", "", 0, 5 * time.Second, ""},
		{"0 9,17 * * 1-5", "", 0, 8 * time.Hour, ""},
		{"0 0 1 * *", "", 0, 28 * 24 * time.Hour, "2027-02-01T00:00:00Z"},
		// Every 6 hours of New York's wall clock: 5 hours the night its
		// clocks go forward, a year ahead, past the 1000 instants of the
		// walk through the year: found by the walk around the change.
		{"0 */6 * * *", "America/New_York", 0, 5 * time.Hour, "2027-03-14T05:00:00Z"},
		// Berlin changes two weeks later: found by the walk through the year.
		{"0 */6 * * *", "Europe/Berlin", 0, 5 * time.Hour, "2026-03-28T23:00:00Z"},
		// below stops at the first gap shorter: the first of a dense spec.
		{"* * * * * *", "", 2 * time.Second, time.Second, "2026-03-15T00:00:01Z"},
	} {
		s, err := Parse(tc.spec, tc.tz, 0)
		if err != nil {
			t.Fatal(err)
		}
		g, ok := s.ShortestGap(from, tc.below)
		if !ok || g.Len() != tc.want || tc.at != "" && g.From.UTC().Format(time.RFC3339) != tc.at {
			t.Errorf("%s in %q: ShortestGap = %s..%s (%s, %v), want %s at %s", tc.spec, tc.tz, g.From.UTC().Format(time.RFC3339), g.To.UTC().Format(time.RFC3339), g.Len(), ok, tc.want, tc.at)
		}
	}
	s, err := Parse("0 0 30 2 *", "", 0) // never
	if err == nil {
		if _, ok := s.ShortestGap(from, 0); ok {
			t.Error("a schedule that never fires has a gap")
		}
	}
}

// A table loads on every reload; each job with a jitter walks its
// schedule. The walk of a dense spec stops at once, and that of a sparse
// one in a zone with changes stays well under a millisecond.
func BenchmarkShortestGap(b *testing.B) {
	from := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	for _, spec := range []string{"*/10 * * * * *", "0 */6 * * *", "30 2 * * 1-5"} {
		s, err := Parse(spec, "Europe/Berlin", 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(spec, func(b *testing.B) {
			for b.Loop() {
				s.ShortestGap(from, 5*time.Second)
			}
		})
	}
}
