package schedule

import (
	"fmt"
	"testing"
	"time"
)

func TestNextEvery(t *testing.T) {
	tests := []struct {
		spec   string
		tz     string
		offset time.Duration
		from   string
		want   []string
	}{
		{spec: "@every 1h", from: "2026-05-01T10:17:23Z",
			want: []string{"2026-05-01T11:00:00Z", "2026-05-01T12:00:00Z"}},
		{spec: "@every 1h", offset: 15 * time.Minute, from: "2026-05-01T10:17:23Z",
			want: []string{"2026-05-01T11:15:00Z", "2026-05-01T12:15:00Z"}},
		{spec: "@every 1h", offset: 15 * time.Minute, from: "2026-05-01T11:15:00Z",
			want: []string{"2026-05-01T12:15:00Z"}},
		{spec: "@every 10s", from: "2026-05-01T10:00:09.999Z",
			want: []string{"2026-05-01T10:00:10Z", "2026-05-01T10:00:20Z"}},
		{spec: "@every 10s", offset: 3 * time.Second, from: "2026-05-01T10:00:10Z",
			want: []string{"2026-05-01T10:00:13Z", "2026-05-01T10:00:23Z"}},
		// 7m does not divide an hour: instants are multiples of 420s since
		// the epoch, and 2026-01-01T00:00:00Z happens to be one.
		{spec: "@every 7m", from: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T00:07:00Z", "2026-01-01T00:14:00Z"}},
		{spec: "@every 7m", from: "2026-01-01T01:00:00Z",
			want: []string{"2026-01-01T01:03:00Z", "2026-01-01T01:10:00Z"}},
		{spec: "@every 90m", from: "2026-05-01T00:00:00Z",
			want: []string{"2026-05-01T01:30:00Z", "2026-05-01T03:00:00Z"}},
		{spec: "@every 1m", offset: 10 * time.Second, from: "1969-12-31T23:58:30Z",
			want: []string{"1969-12-31T23:59:10Z", "1970-01-01T00:00:10Z"}},
		// The zone plays no part.
		{spec: "@every 24h", tz: "Asia/Tokyo", from: "2026-05-01T12:00:00Z",
			want: []string{"2026-05-02T00:00:00Z", "2026-05-03T00:00:00Z"}},
		{spec: "CRON_TZ=America/New_York @every 24h", from: "2026-03-07T12:00:00Z",
			want: []string{"2026-03-08T00:00:00Z", "2026-03-09T00:00:00Z"}},
		{spec: "@every 1h", tz: "Europe/Berlin", from: "2026-10-25T00:30:00Z",
			want: []string{"2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s+%v from %s", tt.spec, tt.offset, tt.from), func(t *testing.T) {
			s, err := Parse(tt.spec, tt.tz, tt.offset)
			if err != nil {
				t.Fatal(err)
			}
			at := mustTime(t, tt.from)
			for i, w := range tt.want {
				next := s.Next(at)
				if want := mustTime(t, w); !next.Equal(want) {
					t.Fatalf("Next #%d after %v = %v, want %v", i+1, at, next.UTC(), want)
				}
				at = next
			}
		})
	}
}

// Two replicas that start far apart compute the same instants: each walks
// from its own start time, and once both have passed the later start they
// produce identical sequences, all on the epoch grid.
func TestEveryAlignedToEpoch(t *testing.T) {
	tests := []struct {
		period, offset time.Duration
	}{
		{time.Second, 0},
		{7 * time.Second, 5 * time.Second},
		{time.Minute, 0},
		{7 * time.Minute, 0},
		{7 * time.Minute, 6*time.Minute + 59*time.Second},
		{time.Hour, 15 * time.Minute},
		{90 * time.Minute, 0},
		{24 * time.Hour, 0},
		{36 * time.Hour, time.Hour},
		{1000 * time.Hour, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v+%v", tt.period, tt.offset), func(t *testing.T) {
			s, err := Parse("@every "+tt.period.String(), "Europe/Berlin", tt.offset)
			if err != nil {
				t.Fatal(err)
			}
			// Replica A started at some odd time; B started 300 periods and
			// 12.345s later.
			startA := time.Date(2026, 3, 28, 13, 17, 23, 456789, time.UTC)
			startB := startA.Add(300*tt.period + 12345*time.Millisecond)

			a, b := s.Next(startA), s.Next(startB)
			for _, r := range []struct {
				start, first time.Time
			}{{startA, a}, {startB, b}} {
				if !r.first.After(r.start) || r.first.Sub(r.start) > tt.period {
					t.Errorf("first instant after %v is %v, want within one period after it", r.start, r.first)
				}
			}
			for a.Before(b) {
				a = s.Next(a)
			}
			for i := range 20 {
				if !a.Equal(b) {
					t.Fatalf("instant #%d: replica A has %v, replica B %v", i, a, b)
				}
				if got := (a.Unix() - int64(tt.offset/time.Second)) % int64(tt.period/time.Second); got != 0 {
					t.Fatalf("instant %v (unix %d) is %ds off the epoch grid", a, a.Unix(), got)
				}
				if a.Nanosecond() != 0 {
					t.Fatalf("instant %v is not on a whole second", a)
				}
				next := s.Next(a)
				if next.Sub(a) != tt.period {
					t.Fatalf("instants %v and %v are not one period apart", a, next)
				}
				a, b = next, s.Next(b)
			}
		})
	}
}

// An offset shifts every instant by itself.
func TestEveryOffsetShifts(t *testing.T) {
	plain, err := Parse("@every 10m", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	from := mustTime(t, "2026-05-01T10:03:00Z")
	for _, off := range []time.Duration{time.Second, time.Minute, 9*time.Minute + 59*time.Second} {
		shifted, err := Parse("@every 10m", "", off)
		if err != nil {
			t.Fatal(err)
		}
		p, s := plain.Next(from.Add(-off)), shifted.Next(from)
		for range 5 {
			if !s.Equal(p.Add(off)) {
				t.Fatalf("offset %v: instant %v, want %v + offset", off, s, p)
			}
			p, s = plain.Next(p), shifted.Next(s)
		}
	}
}
