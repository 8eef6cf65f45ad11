package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// randomSpec builds a random cron spec that robfig accepts; the hour field
// is wildcard or fixed about equally often.
func randomSpec(r *rand.Rand) string {
	field := func(lo, hi int, names []string, question bool) string {
		val := func() string {
			v := lo + r.IntN(hi-lo+1)
			if names != nil && r.IntN(3) == 0 {
				return names[v-lo]
			}
			return fmt.Sprint(v)
		}
		switch r.IntN(9) {
		case 0, 1:
			if question && r.IntN(2) == 0 {
				return "?"
			}
			return "*"
		case 2:
			return fmt.Sprintf("*/%d", 1+r.IntN(hi-lo+1))
		case 3:
			a := lo + r.IntN(hi-lo+1)
			b := a + r.IntN(hi-a+1)
			return fmt.Sprintf("%d-%d", a, b)
		case 4:
			a := lo + r.IntN(hi-lo+1)
			b := a + r.IntN(hi-a+1)
			return fmt.Sprintf("%d-%d/%d", a, b, 1+r.IntN(hi-lo+1))
		case 5:
			return fmt.Sprintf("%d/%d", lo+r.IntN(hi-lo+1), 1+r.IntN(hi-lo+1))
		case 6:
			return val() + "," + val() + "," + val()
		default:
			return val()
		}
	}
	months := []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	days := []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
	// Dense low fields and loose day fields keep instants in short windows.
	sec := []string{"0", "0", "*/15", "30", field(0, 59, nil, false)}[r.IntN(5)]
	min := []string{"*", "*/5", "0,30", "*/7", field(0, 59, nil, false)}[r.IntN(5)]
	hour := []string{"*", "*/2", "*/3", "1-3", "2", "0-4/2", "1,2,3", field(0, 23, nil, false)}[r.IntN(8)]
	dom, month, dow := "*", "*", "*"
	if r.IntN(3) == 0 {
		dom = field(1, 31, nil, true)
	}
	if r.IntN(3) == 0 {
		month = field(1, 12, months, false)
	}
	if r.IntN(3) == 0 {
		dow = field(0, 6, days, true)
	}
	if r.IntN(2) == 0 {
		return strings.Join([]string{min, hour, dom, month, dow}, " ")
	}
	return strings.Join([]string{sec, min, hour, dom, month, dow}, " ")
}

// zoneChanges lists the instants in [from, to) at which loc's offset
// changes, found by hourly lookups then bisection (no change here comes
// within an hour of another).
func zoneChanges(t *testing.T, loc *time.Location, from, to time.Time) []int64 {
	t.Helper()
	offset := func(u int64) int { _, off := time.Unix(u, 0).In(loc).Zone(); return off }
	var changes []int64
	for u := from.Unix(); u < to.Unix(); u += 3600 {
		if o := offset(u); o != offset(u+3600) {
			lo, hi := u, u+3600
			for hi-lo > 1 {
				if mid := (lo + hi) / 2; offset(mid) == o {
					lo = mid
				} else {
					hi = mid
				}
			}
			changes = append(changes, hi)
		}
	}
	return changes
}

// span is a stretch of time in one zone, with the wall time the zone's
// clock shows at each second, worked out with the time package alone.
type span struct {
	loc      *time.Location
	from, to int64   // Unix seconds; the instants compared are in (from, to]
	walls    []int64 // walls[i] is the wall time at from+i, in wall seconds
	minWall  int64
	civil    []civilTime // civil[w-minWall] is wall time w
}

// civilTime is a wall time read by the time package, not this package's
// calendar code.
type civilTime struct{ month, day, weekday, hour, minute, second uint8 }

// newSpan needs the zone's offset not to have changed in the two days
// before from, so the clock has shown no later wall time than at from.
func newSpan(loc *time.Location, from, to int64) *span {
	w := &span{loc: loc, from: from, to: to}
	lo, hi := int64(1<<62), int64(-1<<62)
	for u := from; u <= to; u++ {
		_, off := time.Unix(u, 0).In(loc).Zone()
		wall := u + int64(off)
		w.walls = append(w.walls, wall)
		lo, hi = min(lo, wall), max(hi, wall)
	}
	w.minWall = lo
	for x := lo; x <= hi; x++ {
		tm := time.Unix(x, 0).UTC()
		_, month, day := tm.Date()
		h, m, s := tm.Clock()
		w.civil = append(w.civil, civilTime{uint8(month), uint8(day), uint8(tm.Weekday()), uint8(h), uint8(m), uint8(s)})
	}
	return w
}

// matches reports whether wall time x matches f.
func (w *span) matches(f *fields, x int64) bool {
	c := w.civil[x-w.minWall]
	domMatch, dowMatch := f.dom&(1<<c.day) != 0, f.dow&(1<<c.weekday) != 0
	dayMatch := domMatch && dowMatch
	if f.dayOr {
		dayMatch = domMatch || dowMatch
	}
	return dayMatch && f.month&(1<<c.month) != 0 && f.hour&(1<<c.hour) != 0 && f.minute&(1<<c.minute) != 0 && f.second&(1<<c.second) != 0
}

// reference lists the instants of s in (from, to] the slow way, straight
// from the policy of doc.go: with a wildcard hour, every second whose wall
// time matches; with a fixed hour, every second at which the clock first
// shows (or jumps past) a matching wall time.
func (w *span) reference(s *Schedule) []int64 {
	var out []int64
	shown := w.walls[0]
	for i := 1; i < len(w.walls); i++ {
		u, wall := w.from+int64(i), w.walls[i]
		if !s.cron.fixedHour {
			if w.matches(&s.cron, wall) {
				out = append(out, u)
			}
			continue
		}
		for x := shown + 1; x <= wall; x++ {
			if w.matches(&s.cron, x) {
				out = append(out, u)
				break
			}
		}
		shown = max(shown, wall)
	}
	return out
}

// check compares Next with the reference over the span: walking from the
// start, and from random times inside it.
func (w *span) check(t *testing.T, s *Schedule, r *rand.Rand) {
	t.Helper()
	want := w.reference(s)
	var got []int64
	at := time.Unix(w.from, 0)
	for {
		next := s.Next(at)
		if next.IsZero() || !next.After(at) {
			t.Fatalf("%q in %v: Next(%v) = %v", s, w.loc, at, next)
		}
		if next.Unix() > w.to {
			break
		}
		got = append(got, next.Unix())
		if len(got) > len(want) {
			break
		}
		at = next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%q in %v over (%v, %v]:\n got  %v\n want %v", s, w.loc,
			time.Unix(w.from, 0).UTC(), time.Unix(w.to, 0).UTC(), unixTimes(got, w.loc), unixTimes(want, w.loc))
	}
	for range 20 {
		at := time.Unix(w.from, 0).Add(time.Duration(r.Int64N((w.to - w.from) * int64(time.Second))))
		next := s.Next(at)
		i, _ := slices.BinarySearch(want, at.Unix()+1)
		if i == len(want) {
			// No instant is left in the span.
			if next.Unix() <= w.to {
				t.Fatalf("%q in %v: Next(%v) = %v, want none before %v", s, w.loc, at.UTC(), next.UTC(), time.Unix(w.to, 0).UTC())
			}
			continue
		}
		if next.Unix() != want[i] {
			t.Fatalf("%q in %v: Next(%v) = %v, want %v", s, w.loc, at.UTC(), next.UTC(), time.Unix(want[i], 0).UTC())
		}
	}
}

func unixTimes(us []int64, loc *time.Location) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = time.Unix(u, 0).In(loc).Format("01-02T15:04:05Z07:00")
	}
	return out
}

// TestNextMatchesReference compares Next, second by second, with a
// brute-force reference in four-hour spans around real offset changes, for
// chosen and random specs, in zones whose changes differ in size, direction
// and time of day.
func TestNextMatchesReference(t *testing.T) {
	zones := []struct {
		name     string
		from, to string // the changes in this range are tested
	}{
		{"Europe/Berlin", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"America/New_York", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"Australia/Lord_Howe", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"}, // 30 minutes
		{"America/Santiago", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},    // at midnight
		{"America/St_Johns", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},    // -03:30
		{"Europe/Dublin", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},       // "negative" DST
		{"Africa/Casablanca", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},   // Ramadan, four changes a year
		{"Pacific/Apia", "2011-12-01T00:00:00Z", "2012-01-01T00:00:00Z"},        // skipped December 30, 2011
		{"Antarctica/Casey", "2009-09-01T00:00:00Z", "2010-06-01T00:00:00Z"},    // three hours each way
		{"Europe/Berlin", "2040-12-01T00:00:00Z", "2041-12-01T00:00:00Z"},       // past the zone file's table
	}
	specs := []string{
		"* * * * * *", "*/7 * * * * *", "* * * * *", "*/10 * * * *", "0 * * * *", "30 * * * *",
		"0 */2 * * *", "15,45 * * * *", "@hourly",
		"* 2 * * *", "*/15 2 * * *", "30 2 * * *", "0 2 * * *", "0 1 * * *", "30 1 * * *", "0 3 * * *",
		"0 2,3 * * *", "59 1 * * *", "0 0 * * *", "@daily", "0 23 * * *", "30 0-3 * * *", "0 0 0-4 * * *",
		"*/20 1-3 * * *", "0 0,30 1-2 * * *", "0 0 12 * * *",
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 30 {
		specs = append(specs, randomSpec(r))
	}
	type center struct {
		zone string
		at   int64
	}
	var centers []center
	for _, z := range zones {
		loc, err := time.LoadLocation(z.name)
		if err != nil {
			t.Fatal(err)
		}
		changes := zoneChanges(t, loc, mustTime(t, z.from), mustTime(t, z.to))
		if len(changes) == 0 {
			t.Fatalf("%s: no offset change between %s and %s", z.name, z.from, z.to)
		}
		for _, c := range changes {
			centers = append(centers, center{z.name, c})
		}
	}
	// Quiet times too: a zone without changes, and the last UTC day of a
	// leap year past Berlin's table, where time.Time.ZoneBounds goes wrong.
	centers = append(centers,
		center{"Asia/Kathmandu", mustTime(t, "2026-06-15T18:00:00Z").Unix()},
		center{"Europe/Berlin", mustTime(t, "2040-12-31T23:00:00Z").Unix()},
	)
	for _, c := range centers {
		t.Run(fmt.Sprintf("%s@%s", c.zone, time.Unix(c.at, 0).UTC().Format(time.RFC3339)), func(t *testing.T) {
			loc, err := time.LoadLocation(c.zone)
			if err != nil {
				t.Fatal(err)
			}
			w := newSpan(loc, c.at-2*3600, c.at+2*3600)
			for _, spec := range specs {
				s, err := Parse(spec, c.zone, 0)
				if err != nil {
					t.Fatalf("Parse(%q): %v", spec, err)
				}
				w.check(t, s, r)
			}
		})
	}
}

// TestNextRandom checks, for random specs, zones and times from 1900 to
// 2200, that Next strictly increases and that each instant's wall time
// matches the spec — or, for a fixed hour, that the instant is the moment a
// clock jumped forward.
func TestNextRandom(t *testing.T) {
	zones := []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu",
		"America/Santiago", "Africa/Casablanca", "Pacific/Chatham", "Europe/London", "Asia/Tehran"}
	r := rand.New(rand.NewPCG(3, 4))
	lo, hi := mustTime(t, "1900-01-01T00:00:00Z").Unix(), mustTime(t, "2200-01-01T00:00:00Z").Unix()
	for range 400 {
		spec, zone := randomSpec(r), zones[r.IntN(len(zones))]
		s, err := Parse(spec, zone, 0)
		if err != nil {
			t.Fatalf("Parse(%q): %v", spec, err)
		}
		at := time.Unix(lo+r.Int64N(hi-lo), r.Int64N(1e9))
		for range 10 {
			next := s.Next(at)
			if next.IsZero() {
				t.Fatalf("%q in %s: Next(%v) is zero", spec, zone, at)
			}
			if !next.After(at) {
				t.Fatalf("%q in %s: Next(%v) = %v, not after it", spec, zone, at, next)
			}
			tm := next.In(s.loc)
			_, month, day := tm.Date()
			h, m, sec := tm.Clock()
			f := &s.cron
			domMatch, dowMatch := f.dom&(1<<day) != 0, f.dow&(1<<int(tm.Weekday())) != 0
			dayMatch := domMatch && dowMatch
			if f.dayOr {
				dayMatch = domMatch || dowMatch
			}
			match := dayMatch && f.month&(1<<int(month)) != 0 && f.hour&(1<<h) != 0 && f.minute&(1<<m) != 0 && f.second&(1<<sec) != 0
			_, before := next.Add(-time.Second).Zone()
			_, after := next.Zone()
			jump := f.fixedHour && after > before
			if !match && !jump {
				t.Fatalf("%q in %s: Next(%v) = %v, which does not match", spec, zone, at.UTC(), tm)
			}
			at = next
		}
	}
}

// Where zones do not change, Next agrees with robfig's own Next (which
// gives up after five years).
func TestNextAgreesWithRobfig(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	lo, hi := mustTime(t, "1970-01-01T00:00:00Z").Unix(), mustTime(t, "2100-01-01T00:00:00Z").Unix()
	zones := []string{"UTC", "Asia/Tokyo", "Asia/Kolkata", "Etc/GMT+11"} // no changes since 1970
	for range 2000 {
		spec, zone := randomSpec(r), zones[r.IntN(len(zones))]
		s, err := Parse(spec, zone, 0)
		if err != nil {
			t.Fatalf("Parse(%q): %v", spec, err)
		}
		sched, err := specParser.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		theirs := sched.(*cron.SpecSchedule)
		theirs.Location = s.loc
		at := time.Unix(lo+r.Int64N(hi-lo), r.Int64N(1e9))
		for range 5 {
			want := theirs.Next(at)
			if want.IsZero() {
				break
			}
			if got := s.Next(at); !got.Equal(want) {
				t.Fatalf("%q in %s: Next(%v) = %v, robfig says %v", spec, zone, at, got, want)
			}
			at = want
		}
	}
}

// The calendar code agrees with the time package.
func TestCivil(t *testing.T) {
	for days := int64(-800_000); days <= 3_000_000; days += 7 {
		tm := time.Unix(days*secondsPerDay, 0).UTC()
		y, m, d := civil(days)
		if int(y) != tm.Year() || time.Month(m) != tm.Month() || d != tm.Day() {
			t.Fatalf("civil(%d) = %d-%d-%d, want %v", days, y, m, d, tm)
		}
		if wd := weekday(days); time.Weekday(wd) != tm.Weekday() {
			t.Fatalf("weekday(%d) = %d, want %v", days, wd, tm.Weekday())
		}
		if dim := daysIn(y, m); time.Date(tm.Year(), tm.Month(), dim+1, 0, 0, 0, 0, time.UTC).Day() != 1 {
			t.Fatalf("daysIn(%d, %d) = %d", y, m, dim)
		}
	}
}
