package scheduler

import (
	"errors"
	"fmt"
	"time"

	"github.com/solocron/solocron/internal/schedule"
)

// Blackout is a window in which a job's scheduled instants do not run: they
// are recorded skipped_blackout (neither run nor missed). Manual runs are
// not held back. A Blackout is either recurring (Cron, Duration and
// optionally Timezone: each instant of Cron opens a window of Duration) or
// one-off (From and To: From inclusive, To exclusive).
type Blackout struct {
	// Cron is when each window opens: a cron spec (5 fields, 6 with
	// seconds first) or a descriptor (@daily, ...); not "@every".
	Cron string
	// Duration is how long each window lasts.
	Duration time.Duration
	// Timezone is the IANA zone Cron is read in. Default UTC.
	Timezone string
	// From and To bound a one-off window.
	From, To time.Time
}

// Validate reports every problem with b, as *FieldError values (Field is
// Cron, Duration, Timezone, From or To) joined with errors.Join.
func (b Blackout) Validate() error {
	_, errs := b.parse()
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return errors.Join(out...)
}

// parse checks b and parses its Cron: the one place a blackout's schedule
// is parsed.
func (b Blackout) parse() (blackoutWindow, []*FieldError) {
	var errs []*FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Job: -1, Field: field, Err: fmt.Errorf(format, args...)})
	}
	w := blackoutWindow{b: b}
	recurring := b.Cron != "" || b.Duration != 0 || b.Timezone != ""
	oneOff := !b.From.IsZero() || !b.To.IsZero()
	switch {
	case recurring && oneOff:
		bad("Cron", "a blackout is either cron + duration (+ timezone) or from + to, not both")
	case !recurring && !oneOff:
		bad("Cron", "a blackout needs cron + duration (+ timezone), or from + to")
	case recurring:
		if b.Cron == "" {
			bad("Cron", "is required with duration")
		} else if s, err := schedule.Parse(b.Cron, b.Timezone, 0); err != nil {
			field := "Cron"
			var se *schedule.Error
			if errors.As(err, &se) && se.Field == "Timezone" {
				field = "Timezone"
			}
			bad(field, "%w", err)
		} else if s.Every() > 0 {
			bad("Cron", "must be a cron spec or descriptor, not @every")
		} else {
			w.sched = s
		}
		if b.Duration <= 0 {
			bad("Duration", "must be positive (got %s)", b.Duration)
		}
	default:
		if b.From.IsZero() {
			bad("From", "is required with to")
		}
		if b.To.IsZero() {
			bad("To", "is required with from")
		}
		if !b.From.IsZero() && !b.To.IsZero() && !b.To.After(b.From) {
			bad("To", "must be after from (%s)", b.From.UTC().Format(time.RFC3339))
		}
	}
	return w, errs
}

// blackouts is a job's Blackout windows, parsed.
type blackouts []blackoutWindow

type blackoutWindow struct {
	b     Blackout
	sched *schedule.Schedule // nil for a one-off window
}

// at returns the window t falls in, if any. A recurring window opened by
// the cron instant s covers [s, s+Duration): t is inside one when the first
// instant after t-Duration is at or before t.
func (bs blackouts) at(t time.Time) (Blackout, bool) {
	for _, w := range bs {
		if w.sched == nil {
			if !t.Before(w.b.From) && t.Before(w.b.To) {
				return w.b, true
			}
			continue
		}
		if s := w.sched.Next(t.Add(-w.b.Duration)); !s.IsZero() && !s.After(t) {
			return w.b, true
		}
	}
	return Blackout{}, false
}

// String describes the window for records and logs.
func (b Blackout) String() string {
	if b.Cron != "" {
		tz := b.Timezone
		if tz == "" {
			tz = "UTC"
		}
		return fmt.Sprintf("%q for %s (%s)", b.Cron, b.Duration, tz)
	}
	return b.From.UTC().Format(time.RFC3339) + " to " + b.To.UTC().Format(time.RFC3339)
}

// InBlackout reports whether the instant t falls in one of j's Blackouts,
// and which. Invalid windows are ignored (see Validate). To ask about many
// instants, parse once with Timing.
func (j Job) InBlackout(t time.Time) (Blackout, bool) {
	var bs blackouts
	for _, b := range j.Blackouts {
		if w, errs := b.parse(); len(errs) == 0 {
			bs = append(bs, w)
		}
	}
	return bs.at(t)
}
