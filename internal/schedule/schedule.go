package schedule

import "time"

// Schedule yields the scheduled instants of one job. It is immutable and
// safe for concurrent use. Create one with Parse; the zero Schedule never
// fires.
type Schedule struct {
	spec string
	loc  *time.Location

	// every is the "@every" period in seconds, 0 for cron specs; offset
	// shifts its instants.
	every, offset int64

	cron fields
}

// Next returns the first scheduled instant strictly after t, in the
// schedule's Location, or the zero Time if there is none before the year
// 10000. Its result depends on t only, never on when or where it is called,
// so every replica computes the same instants. Instants fall on whole
// seconds, and calling Next on its own result walks through every scheduled
// instant once, in increasing order.
func (s *Schedule) Next(t time.Time) time.Time {
	sec := t.Unix()
	if sec >= maxUnix || s.loc == nil {
		return time.Time{}
	}
	// The first candidate is the first whole second after t.
	u0 := max(sec+1, minUnix)
	var u int64
	switch {
	case s.every > 0:
		u = s.nextEvery(u0)
	case s.cron.fixedHour:
		var ok bool
		if u, ok = s.nextFixed(u0); !ok {
			return time.Time{}
		}
	default:
		var ok bool
		if u, ok = s.nextElapsed(u0); !ok {
			return time.Time{}
		}
	}
	if u > maxUnix {
		return time.Time{}
	}
	return time.Unix(u, 0).In(s.loc)
}

// Location is the zone the schedule is evaluated in: the CRON_TZ= or TZ=
// prefix of the spec if it has one, else the tz given to Parse, else UTC.
// "@every" schedules ignore it except for display.
func (s *Schedule) Location() *time.Location { return s.loc }

// String returns the spec as given to Parse.
func (s *Schedule) String() string { return s.spec }

// Every returns the period of an "@every" schedule, or 0 for any other.
func (s *Schedule) Every() time.Duration { return time.Duration(s.every) * time.Second }

// Error is a problem with a schedule. Field is the Go name of the
// scheduler.Job field at fault: "Schedule", "Timezone" or "Offset" (the
// config package maps it to the YAML field). The message is meant to follow
// the field's name in a report such as
//
//	solocron.yaml:12:15: jobs[2].schedule: "0 0 25 * * * *": expected 5 or 6 fields, found 7
type Error struct {
	Field string
	Err   error
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }
