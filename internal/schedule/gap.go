package schedule

import "time"

// gapWalkCap bounds the instants ShortestGap looks at in each of its walks:
// the coming year, and the hours around each change of the zone's offset.
// A dense schedule shows its shortest gaps within its first instants; a
// sparse one (a few a day) is walked through the whole year.
const gapWalkCap = 1000

// everyDay reports whether every day matches the spec's day fields.
func (f *fields) everyDay() bool {
	const days, wdays, months = 1<<32 - 2, 1<<7 - 1, 1<<13 - 2 // bits 1-31, 0-6, 1-12
	if f.month != months {
		return false
	}
	if f.dayOr {
		return f.dom == days || f.dow == wdays
	}
	return f.dom == days && f.dow == wdays
}

// Gap is two consecutive instants of a schedule.
type Gap struct {
	From, To time.Time
}

// Len is the time between the two instants.
func (g Gap) Len() time.Duration { return g.To.Sub(g.From) }

// ShortestGap looks for the shortest time between two consecutive instants
// of the schedule, from t on: for "@every d", d exactly; for a cron spec,
// over the coming year (at most gapWalkCap instants; one day for a spec
// that matches every day, all days being alike) and around each change of
// the zone's offset in that year (where a daylight-saving change can bring
// two instants closer than on any other day). It stops at the first gap
// shorter than below (0: never), which is what a caller checking a bound
// needs, and cheap for a dense schedule. ok is false when the schedule has
// fewer than two instants after t.
//
// For a cron spec the result is what a bounded walk finds, not a proof: a
// pattern that comes closer only in a leap year outside the walk (Feb 28
// and 29) is not seen. Jitter bounds checked with it hold for every
// schedule whose pattern repeats within a year.
func (s *Schedule) ShortestGap(t time.Time, below time.Duration) (g Gap, ok bool) {
	if s.every > 0 {
		from := s.Next(t)
		return Gap{from, from.Add(s.Every())}, !from.IsZero()
	}
	consider := func(a, b time.Time) bool {
		if !ok || b.Sub(a) < g.Len() {
			g, ok = Gap{a, b}, true
		}
		return below > 0 && g.Len() < below
	}
	// walk looks at the gaps after start, up to end or gapWalkCap instants;
	// it reports whether one shorter than below was found.
	walk := func(start, end time.Time) bool {
		prev := s.Next(start)
		for n := 0; n < gapWalkCap && !prev.IsZero() && !prev.After(end); n++ {
			next := s.Next(prev)
			if next.IsZero() {
				break
			}
			if consider(prev, next) {
				return true
			}
			prev = next
		}
		return false
	}
	end := t.AddDate(1, 0, 0)
	stop := end
	if s.cron.everyDay() {
		// Every day alike (on the wall clock): one day and the gap into
		// the next show every gap but those around an offset change.
		stop = t.Add(25 * time.Hour)
	}
	if walk(t, stop) || s.loc == time.UTC || s.loc == nil {
		return g, ok
	}
	// Around each offset change of the year: from the last instant
	// before it (found by looking back over windows that double), past
	// it by below and twice the change (a change of d moves instants by
	// d at most, so gaps further on are those of any other day).
	u, last := t.Unix(), end.Unix()
	off := s.offsetAt(u)
	for u < last {
		hi := min(u+changeStep, last)
		if o := s.offsetAt(hi); o != off {
			c := time.Unix(s.change(u, hi, off), 0)
			start := c.Add(-time.Second)
			for w := time.Second; w <= 400*24*time.Hour; w *= 2 {
				if x := s.Next(c.Add(-w)); !x.IsZero() && x.Before(c) {
					start = c.Add(-w)
					break
				}
			}
			d := time.Duration(max(o-off, off-o)) * time.Second
			if walk(start, c.Add(below+2*d)) {
				return g, ok
			}
			off = o
		}
		u = hi
	}
	return g, ok
}
