// Package across holds what the console's pages across jobs and the admin
// API's answers for them share: the summary strip's counts, the runs
// filter and how many runs of each job a read across jobs takes. The
// console renders them and the API writes them as JSON; both count the
// same way, from one place.
package across

import (
	"slices"
	"strings"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// Summary is what needs a look: runs in flight, jobs with a run that went
// wrong (failed, timed out or lost its lease) or was missed within the last
// hour and day, and paused jobs (however paused). The JSON names are the
// admin API's GET /api/v1/summary.
type Summary struct {
	Jobs       int `json:"jobs"`
	Running    int `json:"running"`
	BadHour    int `json:"bad_last_hour"`
	BadDay     int `json:"bad_last_day"`
	MissedHour int `json:"missed_last_hour"`
	MissedDay  int `json:"missed_last_day"`
	Paused     int `json:"paused"`
}

// BadOutcomes are what Summary and the filter "bad" count as gone wrong.
var BadOutcomes = []scheduler.Outcome{scheduler.Failed, scheduler.TimedOut, scheduler.LeaseLost}

// Filters are the values of the runs filter (?outcome=): an outcome, or
// bad (failed, timed out, lease lost), skipped (any skip) or running (also
// waiting and started). The empty filter matches every run.
var Filters = []string{"bad", "failed", "timed_out", "lease_lost", "missed", "cancelled", "interrupted", "replaced", "succeeded", "skipped", "running"}

// readAcross bounds a read across jobs: each job's latest
// readAcross/len(jobs) runs, at least 5 and at most 100.
const readAcross = 5000

// PerJob is how many of each job's latest runs a read across jobs of a
// table of jobs jobs takes.
func PerJob(jobs int) int { return min(max(readAcross/max(jobs, 1), 5), 100) }

// Summarize counts ov, the overviews of the table tab (in its order), at now.
func Summarize(tab []scheduler.Job, ov []scheduler.Overview, now time.Time) Summary {
	within := func(o scheduler.Overview, ocs []scheduler.Outcome, d time.Duration) bool {
		for _, oc := range ocs {
			if at, ok := o.LastEnded[oc]; ok && now.Sub(at) <= d {
				return true
			}
		}
		return false
	}
	missed := []scheduler.Outcome{scheduler.Missed}
	s := Summary{Jobs: len(tab)}
	for i, o := range ov {
		s.Running += len(o.Running)
		if o.Paused || tab[i].Paused {
			s.Paused++
		}
		for _, c := range []struct {
			n   *int
			ocs []scheduler.Outcome
			d   time.Duration
		}{{&s.BadHour, BadOutcomes, time.Hour}, {&s.BadDay, BadOutcomes, 24 * time.Hour},
			{&s.MissedHour, missed, time.Hour}, {&s.MissedDay, missed, 24 * time.Hour}} {
			if within(o, c.ocs, c.d) {
				(*c.n)++
			}
		}
	}
	return s
}

// Outcome is a run's outcome, or its decision while it has none.
func Outcome(r scheduler.Run) scheduler.Outcome {
	if r.Outcome != "" {
		return r.Outcome
	}
	return r.Decision
}

// Match says whether run r passes the filter want (one of Filters, or "").
func Match(want string, r scheduler.Run) bool {
	o := Outcome(r)
	switch want {
	case "":
		return true
	case "bad":
		return slices.Contains(BadOutcomes, o)
	case "skipped":
		return strings.HasPrefix(string(o), "skipped")
	case "running":
		return o == scheduler.Running || o == scheduler.Waiting || o == scheduler.Started
	}
	return string(o) == want
}
