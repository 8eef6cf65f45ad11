package schedule

import (
	"testing"
	"time"
)

// mustTime parses an RFC 3339 time.
func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// nextTest is a spec, a start time and the instants that follow it, in UTC.
type nextTest struct {
	name string
	spec string
	tz   string
	from string
	want []string
}

// checkNext calls Next repeatedly from tt.from and compares with tt.want.
func checkNext(t *testing.T, tt nextTest) {
	t.Helper()
	s, err := Parse(tt.spec, tt.tz, 0)
	if err != nil {
		t.Fatalf("Parse(%q, %q): %v", tt.spec, tt.tz, err)
	}
	at := mustTime(t, tt.from)
	for i, w := range tt.want {
		next := s.Next(at)
		if w == "" {
			if !next.IsZero() {
				t.Fatalf("Next #%d after %v = %v, want the zero Time", i+1, at, next)
			}
			return
		}
		want := mustTime(t, w)
		if !next.Equal(want) {
			t.Fatalf("Next #%d after %v = %v (%v), want %v (%v)",
				i+1, at.UTC(), next.UTC(), next, want, want.In(s.Location()))
		}
		if next.Location() != s.Location() {
			t.Errorf("Next #%d is in %v, want the schedule's zone %v", i+1, next.Location(), s.Location())
		}
		at = next
	}
}

func TestNext(t *testing.T) {
	tests := []nextTest{
		{name: "6 fields, from an instant itself", spec: "0 0 12 * * *", from: "2026-05-01T12:00:00Z",
			want: []string{"2026-05-02T12:00:00Z", "2026-05-03T12:00:00Z"}},
		{name: "5 fields step", spec: "*/15 * * * *", from: "2026-05-01T10:07:30Z",
			want: []string{"2026-05-01T10:15:00Z", "2026-05-01T10:30:00Z", "2026-05-01T10:45:00Z", "2026-05-01T11:00:00Z"}},
		{name: "sub-second start", spec: "*/15 * * * *", from: "2026-05-01T10:14:59.999Z",
			want: []string{"2026-05-01T10:15:00Z"}},
		{name: "just after an instant", spec: "*/15 * * * *", from: "2026-05-01T10:15:00.001Z",
			want: []string{"2026-05-01T10:30:00Z"}},
		{name: "every second", spec: "* * * * * *", from: "2026-12-31T23:59:58.5Z",
			want: []string{"2026-12-31T23:59:59Z", "2027-01-01T00:00:00Z", "2027-01-01T00:00:01Z"}},
		{name: "seconds a/n", spec: "5/20 * * * * *", from: "2026-05-01T00:00:00Z",
			want: []string{"2026-05-01T00:00:05Z", "2026-05-01T00:00:25Z", "2026-05-01T00:00:45Z", "2026-05-01T00:01:05Z"}},
		{name: "seconds list and minute range", spec: "0,30 58-59 * * * *", from: "2026-05-01T10:30:00Z",
			want: []string{"2026-05-01T10:58:00Z", "2026-05-01T10:58:30Z", "2026-05-01T10:59:00Z", "2026-05-01T10:59:30Z", "2026-05-01T11:58:00Z"}},
		{name: "hour range with step", spec: "0 9-17/4 * * *", from: "2026-05-01T10:00:00Z",
			want: []string{"2026-05-01T13:00:00Z", "2026-05-01T17:00:00Z", "2026-05-02T09:00:00Z"}},
		{name: "weekdays", spec: "30 8 * * MON-FRI", from: "2026-05-01T09:00:00Z", // a Friday
			want: []string{"2026-05-04T08:30:00Z", "2026-05-05T08:30:00Z"}},
		{name: "names are case-insensitive", spec: "0 12 * jul sun", from: "2026-06-01T00:00:00Z",
			want: []string{"2026-07-05T12:00:00Z", "2026-07-12T12:00:00Z", "2026-07-19T12:00:00Z", "2026-07-26T12:00:00Z", "2027-07-04T12:00:00Z"}},
		{name: "month list", spec: "0 12 * JAN,JUL SUN", from: "2026-07-20T00:00:00Z",
			want: []string{"2026-07-26T12:00:00Z", "2027-01-03T12:00:00Z", "2027-01-10T12:00:00Z"}},
		{name: "dom or dow when both restricted", spec: "0 0 1 * MON", from: "2026-05-25T00:00:00Z",
			want: []string{"2026-06-01T00:00:00Z", "2026-06-08T00:00:00Z", "2026-06-15T00:00:00Z", "2026-06-22T00:00:00Z", "2026-06-29T00:00:00Z", "2026-07-01T00:00:00Z", "2026-07-06T00:00:00Z"}},
		{name: "dom range or dow", spec: "0 0 1-3 * FRI", from: "2026-06-25T00:00:00Z",
			want: []string{"2026-06-26T00:00:00Z", "2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z", "2026-07-03T00:00:00Z", "2026-07-10T00:00:00Z"}},
		{name: "dom and dow when dow is *", spec: "0 0 */10 * *", from: "2026-01-21T00:00:00Z",
			want: []string{"2026-01-31T00:00:00Z", "2026-02-01T00:00:00Z", "2026-02-11T00:00:00Z", "2026-02-21T00:00:00Z", "2026-03-01T00:00:00Z"}},
		{name: "dom and dow when dom is ?", spec: "0 0 ? * 3", from: "2026-05-01T00:00:00Z",
			want: []string{"2026-05-06T00:00:00Z", "2026-05-13T00:00:00Z"}},
		{name: "dow range 0-6 with dom *", spec: "0 0 * * 0-6", from: "2026-05-01T00:00:00Z",
			want: []string{"2026-05-02T00:00:00Z", "2026-05-03T00:00:00Z"}},
		{name: "31st", spec: "0 0 31 * *", from: "2026-01-31T00:00:00Z",
			want: []string{"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z"}},
		{name: "February 29th", spec: "0 0 29 2 *", from: "2026-01-01T00:00:00Z",
			want: []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{name: "February 29th across 2100", spec: "0 0 29 2 *", from: "2096-03-01T00:00:00Z",
			want: []string{"2104-02-29T00:00:00Z"}},
		{name: "year end", spec: "59 23 31 12 *", from: "2026-12-31T23:59:00Z",
			want: []string{"2027-12-31T23:59:00Z"}},
		{name: "@yearly", spec: "@yearly", from: "2026-06-15T00:00:00Z",
			want: []string{"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"}},
		{name: "@annually", spec: "@annually", from: "2027-01-01T00:00:00Z",
			want: []string{"2028-01-01T00:00:00Z"}},
		{name: "@monthly", spec: "@monthly", from: "2026-01-15T00:00:00Z",
			want: []string{"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"}},
		{name: "@weekly is Sunday", spec: "@weekly", from: "2026-05-01T00:00:00Z",
			want: []string{"2026-05-03T00:00:00Z", "2026-05-10T00:00:00Z"}},
		{name: "@daily", spec: "@daily", from: "2026-05-01T00:00:00Z",
			want: []string{"2026-05-02T00:00:00Z", "2026-05-03T00:00:00Z"}},
		{name: "@midnight", spec: "@midnight", from: "2026-05-01T23:59:59Z",
			want: []string{"2026-05-02T00:00:00Z"}},
		{name: "@hourly", spec: "@hourly", from: "2026-05-01T23:00:00Z",
			want: []string{"2026-05-02T00:00:00Z", "2026-05-02T01:00:00Z"}},
		{name: "zone from tz", spec: "0 9 * * *", tz: "Europe/Berlin", from: "2026-05-01T00:00:00Z",
			want: []string{"2026-05-01T07:00:00Z", "2026-05-02T07:00:00Z"}},
		{name: "CRON_TZ prefix", spec: "CRON_TZ=Asia/Tokyo 0 30 9 * * MON-FRI", from: "2026-05-01T00:00:00Z",
			want: []string{"2026-05-01T00:30:00Z", "2026-05-04T00:30:00Z"}},
		{name: "TZ prefix wins over tz", spec: "TZ=America/New_York 0 9 * * *", tz: "Asia/Tokyo", from: "2026-05-01T00:00:00Z",
			want: []string{"2026-05-01T13:00:00Z", "2026-05-02T13:00:00Z"}},
		{name: "CRON_TZ prefix with descriptor", spec: "CRON_TZ=Asia/Kolkata @daily", from: "2026-05-01T00:00:00Z",
			want: []string{"2026-05-01T18:30:00Z", "2026-05-02T18:30:00Z"}},
		{name: "half-hour zone, wildcard hour", spec: "0 * * * *", tz: "Asia/Kathmandu", from: "2026-05-01T00:00:00Z",
			want: []string{"2026-05-01T00:15:00Z", "2026-05-01T01:15:00Z"}},
		{name: "from the zero Time", spec: "@daily", from: "0001-01-01T00:00:00Z",
			want: []string{"0001-01-02T00:00:00Z"}},
		{name: "last second", spec: "* * * * * *", from: "9999-12-31T23:59:58Z",
			want: []string{"9999-12-31T23:59:59Z", ""}},
		{name: "nothing before year 10000", spec: "@daily", from: "9999-12-31T00:00:00Z",
			want: []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkNext(t, tt) })
	}
}

// Next works from any time.Time, however far out of range.
func TestNextOutOfRange(t *testing.T) {
	tests := []struct {
		spec string
		from time.Time
		want time.Time
	}{
		{"@daily", time.Date(-5, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"@every 1h", time.Date(-5, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"@daily", time.Unix(-1<<62, 0), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"@daily", time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}},
		{"@every 1s", time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}},
		{"@every 1s", time.Unix(1<<62, 0), time.Time{}},
		{"@every 1h", time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC), time.Time{}},
		{"CRON_TZ=Pacific/Kiritimati @hourly", time.Date(9999, 12, 31, 9, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 10, 0, 0, 0, time.UTC)},
		{"CRON_TZ=Pacific/Kiritimati @daily", time.Date(9999, 12, 31, 9, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 10, 0, 0, 0, time.UTC)},
		{"CRON_TZ=Pacific/Pago_Pago @daily", time.Date(9999, 12, 31, 9, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 11, 0, 0, 0, time.UTC)},
		{"CRON_TZ=Pacific/Pago_Pago @hourly", time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC), time.Time{}},
	}
	for _, tt := range tests {
		s, err := Parse(tt.spec, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Next(tt.from); !got.Equal(tt.want) || got.IsZero() != tt.want.IsZero() {
			t.Errorf("%q: Next(%v) = %v, want %v", tt.spec, tt.from, got, tt.want)
		}
	}
}

// A Schedule that did not come from Parse never fires, rather than panic.
func TestNextZeroSchedule(t *testing.T) {
	var s Schedule
	if got := s.Next(mustTime(t, "2026-05-01T00:00:00Z")); !got.IsZero() {
		t.Errorf("zero Schedule: Next = %v, want the zero Time", got)
	}
}
