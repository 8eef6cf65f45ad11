package schedule

import "testing"

// The daylight-saving policy of doc.go, on both transitions of 2026 in
// Europe/Berlin (02:00 CET -> 03:00 CEST on March 29, 03:00 CEST -> 02:00 CET
// on October 25, both at 01:00 UTC) and America/New_York (02:00 EST -> 03:00
// EDT on March 8 at 07:00 UTC, 02:00 EDT -> 01:00 EST on November 1 at 06:00
// UTC). Instants are in UTC; comments give the wall time.
func TestNextDST(t *testing.T) {
	const (
		berlin  = "Europe/Berlin"
		newYork = "America/New_York"
	)
	tests := []nextTest{
		// Berlin, spring forward: 02:00-02:59 does not exist.
		{name: "Berlin spring, fixed, skipped time runs at the jump", spec: "30 2 * * *", tz: berlin, from: "2026-03-28T00:00:00Z",
			want: []string{
				"2026-03-28T01:30:00Z", // 02:30 CET
				"2026-03-29T01:00:00Z", // 03:00 CEST, for 02:30
				"2026-03-30T00:30:00Z", // 02:30 CEST
			}},
		{name: "Berlin spring, fixed, whole hour", spec: "0 2 * * *", tz: berlin, from: "2026-03-28T12:00:00Z",
			want: []string{"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"}},
		{name: "Berlin spring, fixed, skipped times collapse", spec: "*/15 2 * * *", tz: berlin, from: "2026-03-28T01:40:00Z",
			want: []string{
				"2026-03-28T01:45:00Z", // 02:45 CET
				"2026-03-29T01:00:00Z", // 03:00 CEST, once for 02:00, 02:15, 02:30, 02:45
				"2026-03-30T00:00:00Z", // 02:00 CEST
				"2026-03-30T00:15:00Z",
			}},
		{name: "Berlin spring, fixed, skipped and real time on the same instant", spec: "0 2,3 * * *", tz: berlin, from: "2026-03-28T12:00:00Z",
			want: []string{
				"2026-03-29T01:00:00Z", // 03:00 CEST, for 02:00 and 03:00
				"2026-03-30T00:00:00Z", // 02:00 CEST
				"2026-03-30T01:00:00Z", // 03:00 CEST
			}},
		{name: "Berlin spring, fixed, 6 fields", spec: "0 30 2 * * SUN", tz: berlin, from: "2026-03-22T12:00:00Z",
			want: []string{"2026-03-29T01:00:00Z", "2026-04-05T00:30:00Z"}},
		{name: "Berlin spring, @daily is unaffected", spec: "@daily", tz: berlin, from: "2026-03-28T12:00:00Z",
			want: []string{"2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z"}},
		{name: "Berlin spring, wildcard, nothing invented", spec: "*/30 * * * *", tz: berlin, from: "2026-03-29T00:00:00Z",
			want: []string{
				"2026-03-29T00:30:00Z", // 01:30 CET
				"2026-03-29T01:00:00Z", // 03:00 CEST
				"2026-03-29T01:30:00Z", // 03:30 CEST
			}},
		{name: "Berlin spring, wildcard, skipped hour is skipped", spec: "0 */2 * * *", tz: berlin, from: "2026-03-28T22:30:00Z",
			want: []string{
				"2026-03-28T23:00:00Z", // 00:00 CET
				"2026-03-29T02:00:00Z", // 04:00 CEST; 02:00 does not exist
			}},
		{name: "Berlin spring, @hourly", spec: "@hourly", tz: berlin, from: "2026-03-28T23:30:00Z",
			want: []string{"2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},

		// Berlin, fall back: 02:00-02:59 happens twice.
		{name: "Berlin fall, fixed, first occurrence only", spec: "30 2 * * *", tz: berlin, from: "2026-10-24T00:00:00Z",
			want: []string{
				"2026-10-24T00:30:00Z", // 02:30 CEST
				"2026-10-25T00:30:00Z", // 02:30 CEST, not again at 02:30 CET
				"2026-10-26T01:30:00Z", // 02:30 CET
			}},
		{name: "Berlin fall, fixed, from inside the repeat", spec: "30 2 * * *", tz: berlin, from: "2026-10-25T01:10:00Z",
			want: []string{"2026-10-26T01:30:00Z"}},
		{name: "Berlin fall, fixed, minutes of the repeated hour", spec: "*/30 2 * * *", tz: berlin, from: "2026-10-24T23:00:00Z",
			want: []string{
				"2026-10-25T00:00:00Z", // 02:00 CEST
				"2026-10-25T00:30:00Z", // 02:30 CEST
				"2026-10-26T01:00:00Z", // 02:00 CET, next day
			}},
		{name: "Berlin fall, fixed, hour after the repeat", spec: "0 3 * * *", tz: berlin, from: "2026-10-24T12:00:00Z",
			want: []string{"2026-10-25T02:00:00Z"}},
		{name: "Berlin fall, wildcard, repeated hour twice", spec: "*/30 * * * *", tz: berlin, from: "2026-10-24T23:30:00Z",
			want: []string{
				"2026-10-25T00:00:00Z", // 02:00 CEST
				"2026-10-25T00:30:00Z", // 02:30 CEST
				"2026-10-25T01:00:00Z", // 02:00 CET
				"2026-10-25T01:30:00Z", // 02:30 CET
				"2026-10-25T02:00:00Z", // 03:00 CET
			}},
		{name: "Berlin fall, @hourly", spec: "@hourly", tz: berlin, from: "2026-10-24T23:30:00Z",
			want: []string{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},

		// New York, spring forward: 02:00-02:59 does not exist.
		{name: "New York spring, fixed, skipped time runs at the jump", spec: "30 2 * * *", tz: newYork, from: "2026-03-07T00:00:00Z",
			want: []string{
				"2026-03-07T07:30:00Z", // 02:30 EST
				"2026-03-08T07:00:00Z", // 03:00 EDT, for 02:30
				"2026-03-09T06:30:00Z", // 02:30 EDT
			}},
		{name: "New York spring, fixed, skipped times collapse", spec: "0,20,40 2 * * *", tz: newYork, from: "2026-03-08T00:00:00Z",
			want: []string{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z", "2026-03-09T06:20:00Z"}},
		{name: "New York spring, wildcard", spec: "*/30 * * * *", tz: newYork, from: "2026-03-08T06:00:00Z",
			want: []string{
				"2026-03-08T06:30:00Z", // 01:30 EST
				"2026-03-08T07:00:00Z", // 03:00 EDT
				"2026-03-08T07:30:00Z", // 03:30 EDT
			}},
		{name: "New York spring, wildcard hour only", spec: "0 * * * *", tz: newYork, from: "2026-03-08T05:30:00Z",
			want: []string{"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},

		// New York, fall back: 01:00-01:59 happens twice.
		{name: "New York fall, fixed, first occurrence only", spec: "30 1 * * *", tz: newYork, from: "2026-10-31T00:00:00Z",
			want: []string{
				"2026-10-31T05:30:00Z", // 01:30 EDT
				"2026-11-01T05:30:00Z", // 01:30 EDT, not again at 01:30 EST
				"2026-11-02T06:30:00Z", // 01:30 EST
			}},
		{name: "New York fall, fixed, hour after the repeat", spec: "0 2 * * *", tz: newYork, from: "2026-10-31T12:00:00Z",
			want: []string{"2026-11-01T07:00:00Z", "2026-11-02T07:00:00Z"}},
		{name: "New York fall, fixed, 6 fields from inside the repeat", spec: "0 0 1 * * *", tz: newYork, from: "2026-11-01T05:00:00Z",
			want: []string{"2026-11-02T06:00:00Z"}},
		{name: "New York fall, wildcard, repeated hour twice", spec: "*/30 * * * *", tz: newYork, from: "2026-11-01T04:00:00Z",
			want: []string{
				"2026-11-01T04:30:00Z", // 00:30 EDT
				"2026-11-01T05:00:00Z", // 01:00 EDT
				"2026-11-01T05:30:00Z", // 01:30 EDT
				"2026-11-01T06:00:00Z", // 01:00 EST
				"2026-11-01T06:30:00Z", // 01:30 EST
				"2026-11-01T07:00:00Z", // 02:00 EST
			}},
		{name: "New York fall, wildcard, from inside the repeat", spec: "*/30 * * * *", tz: newYork, from: "2026-11-01T05:45:00Z",
			want: []string{"2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z"}},
		{name: "New York fall, @hourly", spec: "@hourly", tz: newYork, from: "2026-11-01T04:30:00Z",
			want: []string{"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}},

		// Other shapes of change.
		{name: "Lord Howe spring, 30-minute gap", spec: "15 2 * * *", tz: "Australia/Lord_Howe", from: "2026-10-03T12:00:00Z",
			want: []string{"2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"}}, // 02:30 +11, then 02:15 +11
		{name: "Lord Howe fall, 30-minute repeat, fixed", spec: "45 1 * * *", tz: "Australia/Lord_Howe", from: "2026-04-04T12:00:00Z",
			want: []string{"2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"}}, // 01:45 +11, then 01:45 +1030
		{name: "Lord Howe fall, 30-minute repeat, wildcard", spec: "*/15 * * * *", tz: "Australia/Lord_Howe", from: "2026-04-04T14:20:00Z",
			want: []string{"2026-04-04T14:30:00Z", "2026-04-04T14:45:00Z", "2026-04-04T15:00:00Z", "2026-04-04T15:15:00Z", "2026-04-04T15:30:00Z"}},
		{name: "Santiago spring, midnight does not exist", spec: "@daily", tz: "America/Santiago", from: "2026-09-05T00:00:00Z",
			want: []string{"2026-09-05T04:00:00Z", "2026-09-06T04:00:00Z", "2026-09-07T03:00:00Z"}}, // 00:00 -04, 01:00 -03, 00:00 -03
		{name: "Santiago fall, 23:00 twice", spec: "0 23 * * *", tz: "America/Santiago", from: "2026-04-04T00:00:00Z",
			want: []string{"2026-04-04T02:00:00Z", "2026-04-05T02:00:00Z", "2026-04-06T03:00:00Z"}}, // 23:00 -03, 23:00 -03 (not 23:00 -04), 23:00 -04
		{name: "Havana fall, midnight hour twice, wildcard, from months before", spec: "0 * 2 11 *", tz: "America/Havana", from: "2025-03-01T00:00:00Z",
			want: []string{"2025-11-02T04:00:00Z", "2025-11-02T05:00:00Z", "2025-11-02T06:00:00Z"}}, // 00:00 CDT, 00:00 CST, 01:00 CST
		{name: "Havana fall, midnight hour twice, fixed", spec: "0 0 2 11 *", tz: "America/Havana", from: "2025-03-01T00:00:00Z",
			want: []string{"2025-11-02T04:00:00Z", "2026-11-02T05:00:00Z"}},
		{name: "Havana spring, midnight does not exist", spec: "@daily", tz: "America/Havana", from: "2025-03-08T00:00:00Z",
			want: []string{"2025-03-08T05:00:00Z", "2025-03-09T05:00:00Z", "2025-03-10T04:00:00Z"}}, // 00:00 CST, 01:00 CDT, 00:00 CDT
		{name: "Apia skipped a whole day, fixed", spec: "0 12 * * *", tz: "Pacific/Apia", from: "2011-12-29T12:00:00Z",
			want: []string{"2011-12-29T22:00:00Z", "2011-12-30T10:00:00Z", "2011-12-30T22:00:00Z"}},
		{name: "Apia skipped a whole day, wildcard", spec: "0 */12 * * *", tz: "Pacific/Apia", from: "2011-12-29T12:00:00Z",
			want: []string{"2011-12-29T22:00:00Z", "2011-12-30T10:00:00Z", "2011-12-30T22:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkNext(t, tt) })
	}
}
