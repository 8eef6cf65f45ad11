package scheduler

import (
	"errors"
	"time"
)

// Timing is a job's schedule and blackout windows, parsed by the one parser
// validation uses: what a caller listing a job's instants (a console page,
// `scheduler next`) asks, without parsing the schedule itself or again for
// every instant.
type Timing struct {
	p parsed
}

// Timing parses j's schedule and blackout windows. The error is what
// Validate reports about them.
func (j Job) Timing() (*Timing, error) {
	p, errs := j.parse()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Timing{p: p}, nil
}

// Next returns the first instant of the schedule after t (blackouts
// included: an instant in a blackout window is recorded skipped_blackout,
// see InBlackout), or the zero time if there is none.
func (t *Timing) Next(after time.Time) time.Time { return t.p.sched.Next(after) }

// Location is the time zone the schedule is read in.
func (t *Timing) Location() *time.Location { return t.p.sched.Location() }

// InBlackout reports whether the instant at falls in one of the job's
// blackout windows, and which.
func (t *Timing) InBlackout(at time.Time) (Blackout, bool) { return t.p.blackouts.at(at) }
