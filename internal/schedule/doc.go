// Package schedule turns a job's schedule text into the instants at which it
// runs.
//
// Every replica of a service must compute the same instants, whatever time
// it started: a run is named after its scheduled instant, and the replicas
// race for that name. So Next depends only on the time it is given, never on
// when the process started, and "@every" schedules are aligned to the Unix
// epoch rather than to process start.
//
// # Syntax
//
// A schedule is one of:
//
//   - a cron spec of 5 fields, "minute hour day-of-month month day-of-week"
//     (seconds are 0), or of 6 fields with seconds first;
//   - a descriptor (below);
//   - "@every <duration>", a Go duration that is a whole number of seconds,
//     at least 1s: "@every 10s", "@every 1h30m".
//
// The descriptors and the specs they stand for:
//
//	@yearly, @annually   0 0 1 1 *
//	@monthly             0 0 1 * *
//	@weekly              0 0 * * 0   (Sunday)
//	@daily, @midnight    0 0 * * *
//	@hourly              0 * * * *
//
// Cron fields follow github.com/robfig/cron/v3, whose parser is used:
//
//	field          values   names
//	second         0-59
//	minute         0-59
//	hour           0-23
//	day-of-month   1-31
//	month          1-12     JAN-DEC
//	day-of-week    0-6      SUN-SAT (0 is Sunday; 7 is not accepted)
//
// A field is "*" (every value), a value, a range "a-b", a step "*/n" or
// "a-b/n" or "a/n" (from a to the maximum), or a comma-separated list of
// those; "?" means the same as "*"; names are case-insensitive. When both
// day-of-month and day-of-week are restricted (neither is "*" or "?"; "*/2"
// counts as restricted), a day matches if either field matches: "0 0 1 * MON"
// runs on the 1st of each month and on every Monday. Otherwise both must
// match.
//
// A spec that can never fire, such as "0 0 30 2 *", is an error. February
// 29th is valid: "0 0 29 2 *" runs in leap years.
//
// # Time zones
//
// Cron specs and descriptors are evaluated in the job's time zone, an IANA
// name such as "Europe/Berlin" (default UTC). A prefix CRON_TZ=<zone> or
// TZ=<zone>, followed by a space, wins over the job's zone:
// "CRON_TZ=Asia/Tokyo 0 9 * * MON-FRI". The zone "Local" is refused: it is
// whatever each machine is configured with, and replicas could disagree.
// Replicas should use the same version of the time zone database.
//
// # @every and the epoch
//
// "@every d" runs at exactly the instants t for which
//
//	(t.Unix() - offset) mod d == 0   (in seconds)
//
// that is, at whole multiples of d since 1970-01-01T00:00:00Z, shifted by
// the job's offset (0 <= offset < d, whole seconds). Every replica computes
// the same instants however long it has been running: "@every 1h" runs at
// the top of every UTC hour, "@every 1h" with offset 15m at quarter past,
// "@every 10m" at :00, :10, :20 ... The time zone and daylight saving time
// play no part: "@every 24h" runs at 00:00 UTC, whatever the job's zone; use
// "@daily" for local midnight. A period that does not divide a day evenly, such as 7m, does not
// line up with the hour: its instants are multiples of 420s since the epoch.
//
// # Daylight saving time
//
// Where the clocks go forward, some wall times do not exist; where they go
// back, some occur twice. What a spec does there depends on its hour field,
// as in cronie, the cron of most Linux systems:
//
// Fixed hour. The hour field is a value, list or range (it does not begin
// with "*" or "?"), or the spec is @daily, @midnight, @weekly, @monthly,
// @yearly or @annually. Such a job is meant to run once at a given time of
// day, so it does, even across a change:
//
//   - a wall time that does not exist runs at the first instant after the
//     gap: "30 2 * * *" in Europe/Berlin runs at 03:00 CEST on the day the
//     clocks go from 02:00 to 03:00. Matching wall times that fall in the
//     same gap, or in the gap and at its end, run once, at that instant:
//     "*/15 2 * * *" and "0 2,3 * * *" both run once at 03:00 CEST that day.
//   - a wall time that occurs twice runs once, at its first occurrence:
//     "30 2 * * *" in Europe/Berlin runs at 02:30 CEST, not again at
//     02:30 CET, on the day the clocks go from 03:00 back to 02:00.
//
// Precisely: each matching wall time runs at the first instant at which the
// zone's clock shows that wall time or a later one.
//
// Wildcard hour. The hour field begins with "*" or "?" ("*", "*/2",
// "*/6,3"), or the spec is @hourly. Such a job follows elapsed time: it runs
// whenever the clock shows a matching wall time. Nothing runs for the wall
// times a gap skips, and a repeated hour runs twice: "*/30 * * * *" in
// America/New_York runs at 01:00 and 01:30 EDT and again at 01:00 and 01:30
// EST on the day the clocks go back from 02:00 to 01:00, and skips 02:00 and
// 02:30 on the day they go forward.
//
// In both cases the instants are strictly increasing: Next(t) is after t,
// and no instant comes twice.
//
// # Limits
//
// Instants fall on whole seconds between the years 1 and 9999; past that,
// Next returns the zero Time. Zone offsets are assumed to stay within 18
// hours of UTC and never to change twice within 48 hours, which holds for
// every zone in the IANA database.
package schedule
