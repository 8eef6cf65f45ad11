package schedule_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/solocron/solocron/internal/schedule"
)

// A fixed-hour job on the day Berlin's clocks skip from 02:00 to 03:00 runs
// at 03:00, once.
func Example() {
	s, err := schedule.Parse("30 2 * * *", "Europe/Berlin", 0)
	if err != nil {
		panic(err)
	}
	t := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	for range 3 {
		t = s.Next(t)
		fmt.Println(t.UTC().Format(time.RFC3339), t.Format("Jan 2 15:04 MST"))
	}
	// Output:
	// 2026-03-29T01:00:00Z Mar 29 03:00 CEST
	// 2026-03-30T00:30:00Z Mar 30 02:30 CEST
	// 2026-03-31T00:30:00Z Mar 31 02:30 CEST
}

// "@every" instants lie on a grid that starts at the Unix epoch, shifted by
// the offset, so every replica gets the same ones whenever it started.
func ExampleParse_every() {
	s, err := schedule.Parse("@every 1h", "", 15*time.Minute)
	if err != nil {
		panic(err)
	}
	started := time.Date(2026, 5, 1, 10, 17, 23, 0, time.UTC)
	t := s.Next(started)
	fmt.Println(t.Format(time.RFC3339))
	fmt.Println(s.Next(t).Format(time.RFC3339))
	// Output:
	// 2026-05-01T11:15:00Z
	// 2026-05-01T12:15:00Z
}

// A wildcard hour follows elapsed time: in New York's repeated hour, a job
// every 30 minutes runs in both passes.
func ExampleSchedule_Next_repeatedHour() {
	s, err := schedule.Parse("*/30 * * * *", "America/New_York", 0)
	if err != nil {
		panic(err)
	}
	t := time.Date(2026, 11, 1, 4, 45, 0, 0, time.UTC)
	for range 4 {
		t = s.Next(t)
		fmt.Println(t.UTC().Format("15:04Z"), t.Format("15:04 MST"))
	}
	// Output:
	// 05:00Z 01:00 EDT
	// 05:30Z 01:30 EDT
	// 06:00Z 01:00 EST
	// 06:30Z 01:30 EST
}

// Errors name the scheduler.Job field at fault; config reports them as
// "solocron.yaml:12:15: jobs[2].schedule: ...".
func ExampleError() {
	_, err := schedule.Parse("0 0 25 * * * *", "UTC", 0)
	var perr *schedule.Error
	if errors.As(err, &perr) {
		fmt.Printf("%s: %v\n", perr.Field, perr)
	}
	_, err = schedule.Parse("0 0 30 2 *", "UTC", 0)
	fmt.Println(err)
	_, err = schedule.Parse("@daily", "Europe/Berlni", 0)
	fmt.Println(err)
	// Output:
	// Schedule: "0 0 25 * * * *": expected 5 or 6 fields, found 7
	// "0 0 30 2 *": never fires: no month matching "2" has a day matching "30"
	// unknown time zone "Europe/Berlni"; expected an IANA name such as "Europe/Berlin" or "UTC"
}
