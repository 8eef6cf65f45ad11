package schedule

import "time"

// The range Next works in. Below it, Next starts from the zero time.Time;
// past it, Next returns the zero Time. Keeping well inside int64 means no
// arithmetic here can overflow.
const (
	minUnix = -62135596800 // 0001-01-01T00:00:00Z, the zero time.Time
	maxUnix = 253402300799 // 9999-12-31T23:59:59Z
)

// Assumptions about time zones, true of every zone in the IANA database
// (the largest offset ever used is under 16h, the shortest time between two
// offset changes in any zone is about four days):
//
//   - maxOffset bounds |UTC offset|, so an instant u shows a wall time within
//     maxOffset of u, and window = 2*maxOffset covers every instant that can
//     show a given wall time;
//   - a zone's offset never changes twice within changeStep, so one lookup
//     per changeStep finds every change, and a window holds at most one.
//
// We rely on these instead of time.Time.ZoneBounds, which gives wrong bounds
// in some years past a zone's last listed transition (golang/go#81583: the
// end of the period can come before the instant asked about).
const (
	maxOffset  = 18 * 3600
	window     = 2 * maxOffset
	changeStep = 48 * 3600
)

// offsetAt is the zone's UTC offset at Unix second u, in seconds.
func (s *Schedule) offsetAt(u int64) int64 {
	if s.loc == time.UTC {
		return 0
	}
	_, off := time.Unix(u, 0).In(s.loc).Zone()
	return int64(off)
}

// change is the first instant in (lo, hi] whose offset differs from off,
// given that offsetAt(lo) == off != offsetAt(hi) and that only one change
// lies between them.
func (s *Schedule) change(lo, hi, off int64) int64 {
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if s.offsetAt(mid) == off {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// nextEvery is the first instant at or after u0 that is a whole number of
// periods after the Unix epoch plus the offset.
func (s *Schedule) nextEvery(u0 int64) int64 {
	k := -floorDiv(s.offset-u0, s.every) // ceil((u0 - offset) / every)
	return k*s.every + s.offset
}

// nextElapsed serves specs with a wildcard hour field: an instant is
// scheduled when the clock shows a matching wall time, as often as it does,
// so a skipped wall time never fires and a repeated one fires twice.
func (s *Schedule) nextElapsed(u0 int64) (int64, bool) {
	u := u0
	for {
		off := s.offsetAt(u)
		w, ok := s.cron.next(u+off, maxUnix+maxOffset)
		if !ok {
			return 0, false
		}
		// w is the first match the clock reaches from u on if the offset
		// holds until then; if it changes first, start again from the change.
		c := w - off
		changed := false
		for lo := u; lo < c; {
			hi := min(lo+changeStep, c)
			if s.offsetAt(hi) != off {
				u, changed = s.change(lo, hi, off), true
				break
			}
			lo = hi
		}
		if !changed {
			return c, true
		}
	}
}

// nextFixed serves specs with a fixed hour field: each matching wall time
// fires once, at the first instant the clock shows it or a later one (see
// reach). Those instants grow with the wall time, so the answer is the
// first match after every wall time the clock has already shown.
func (s *Schedule) nextFixed(u0 int64) (int64, bool) {
	// shown is the latest wall time the clock showed before u0: its reading
	// at u0-1, unless it was set back within the window before that.
	ob := s.offsetAt(u0 - 1)
	shown := u0 - 1 + ob
	if oa := s.offsetAt(u0 - 1 - window); oa > ob {
		back := s.change(u0-1-window, u0-1, oa)
		shown = max(shown, back-1+oa)
	}
	w, ok := s.cron.next(shown+1, maxUnix+maxOffset)
	if !ok {
		return 0, false
	}
	return s.reach(w), true
}

// reach is the first instant at which the clock shows wall time w or a
// later one. For a wall time that occurs once, that is when it occurs; for
// one that occurs twice (the clock was set back), its first occurrence; for
// one that never occurs (the clock jumped over it), the instant of the jump.
func (s *Schedule) reach(w int64) int64 {
	lo, hi := w-maxOffset, w+maxOffset // every instant showing w lies in here
	before, after := s.offsetAt(lo), s.offsetAt(hi)
	if before == after {
		return w - before
	}
	jump := s.change(lo, hi, before)
	if u := w - before; u < jump {
		return u
	}
	return max(jump, w-after)
}
