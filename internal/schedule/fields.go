package schedule

import "math/bits"

// fields is a cron spec as bit sets: bit n set means value n matches. They
// are robfig/cron's SpecSchedule masks with its "star" bit removed.
type fields struct {
	second, minute, hour uint64 // bits 0-59, 0-59, 0-23
	dom                  uint64 // bits 1-31
	month                uint64 // bits 1-12
	dow                  uint64 // bits 0-6, 0 = Sunday

	// dayOr is robfig's (and Vixie cron's) day rule: when both the
	// day-of-month and the day-of-week field are restricted (neither was
	// written as "*" or "?"), a day matches if either matches; otherwise both
	// must match.
	dayOr bool

	// fixedHour selects the daylight-saving policy; see doc.go.
	fixedHour bool
}

// nextBit is the smallest set bit of mask at or above n, or -1.
func nextBit(mask uint64, n int) int {
	if n >= 64 {
		return -1
	}
	m := mask & (^uint64(0) << n)
	if m == 0 {
		return -1
	}
	return bits.TrailingZeros64(m)
}

func (f *fields) dayMatches(day, wday int) bool {
	domMatch := f.dom&(1<<day) != 0
	dowMatch := f.dow&(1<<wday) != 0
	if f.dayOr {
		return domMatch || dowMatch
	}
	return domMatch && dowMatch
}

// timeOfDay is the first second of the day at or after sod (seconds since
// midnight) whose hour, minute and second match.
func (f *fields) timeOfDay(sod int64) (int64, bool) {
	h, m, s := int(sod/3600), int(sod/60%60), int(sod%60)
	for {
		nh := nextBit(f.hour, h)
		if nh < 0 {
			return 0, false
		}
		if nh != h {
			h, m, s = nh, 0, 0
		}
		for {
			nm := nextBit(f.minute, m)
			if nm < 0 {
				break
			}
			if nm != m {
				m, s = nm, 0
			}
			if ns := nextBit(f.second, s); ns >= 0 {
				return int64(h*3600 + m*60 + ns), true
			}
			m, s = m+1, 0
		}
		h, m, s = h+1, 0, 0
	}
}

// next is the first wall time at or after w (wall seconds, see civil.go)
// that the spec matches, if there is one no later than limit.
func (f *fields) next(w, limit int64) (int64, bool) {
	days := floorDiv(w, secondsPerDay)
	sod := w - days*secondsPerDay
	year, month, day := civil(days)
	lastDay := floorDiv(limit, secondsPerDay)
	for days <= lastDay {
		dim := daysIn(year, month)
		if f.month&(1<<month) == 0 {
			days += int64(dim - day + 1)
			day, sod = 1, 0
			if month++; month > 12 {
				month, year = 1, year+1
			}
			continue
		}
		if !f.dayOr {
			// Both day fields must match: skip straight to the next
			// matching day of the month.
			nd := nextBit(f.dom, day)
			if nd < 0 || nd > dim {
				days += int64(dim - day + 1)
				day, sod = 1, 0
				if month++; month > 12 {
					month, year = 1, year+1
				}
				continue
			}
			if nd != day {
				days += int64(nd - day)
				day, sod = nd, 0
			}
		}
		if f.dayMatches(day, weekday(days)) {
			if tod, ok := f.timeOfDay(sod); ok {
				r := days*secondsPerDay + tod
				return r, r <= limit
			}
		}
		days++
		day, sod = day+1, 0
		if day > dim {
			day = 1
			if month++; month > 12 {
				month, year = 1, year+1
			}
		}
	}
	return 0, false
}
