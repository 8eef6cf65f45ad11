package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the tests need zones even where the system has none
)

func TestParse(t *testing.T) {
	tests := []struct {
		spec   string
		tz     string
		offset time.Duration
		zone   string        // Location().String()
		every  time.Duration // Every()
		fixed  bool          // fixed-hour DST policy (cron specs only)
	}{
		{spec: "0 0 * * *", zone: "UTC", fixed: true},
		{spec: "0 0 12 * * *", tz: "Asia/Shanghai", zone: "Asia/Shanghai", fixed: true},
		{spec: "*/5 * * * *", zone: "UTC"},
		{spec: "0 */2 * * *", zone: "UTC"},
		{spec: "0 ? * * *", zone: "UTC"},
		{spec: "0 0-23 * * *", zone: "UTC", fixed: true},
		{spec: "30 8 * JAN-MAR mon-fri", zone: "UTC", fixed: true},
		{spec: "  0 0 * * *\t", zone: "UTC", fixed: true},
		{spec: "0 0 29 2 *", zone: "UTC", fixed: true},
		{spec: "0 0 31 1-3 *", zone: "UTC", fixed: true},
		{spec: "0 0 30 2 MON", zone: "UTC", fixed: true}, // Mondays in February: day fields are OR-ed
		{spec: "@yearly", zone: "UTC", fixed: true},
		{spec: "@annually", zone: "UTC", fixed: true},
		{spec: "@monthly", zone: "UTC", fixed: true},
		{spec: "@weekly", zone: "UTC", fixed: true},
		{spec: "@daily", tz: "Europe/Berlin", zone: "Europe/Berlin", fixed: true},
		{spec: "@midnight", zone: "UTC", fixed: true},
		{spec: "@hourly", zone: "UTC"},
		{spec: "@every 10s", zone: "UTC", every: 10 * time.Second},
		{spec: "@every 1h30m", offset: 15 * time.Minute, zone: "UTC", every: 90 * time.Minute},
		{spec: "@every   1s", zone: "UTC", every: time.Second},
		{spec: "@every 24h", tz: "America/New_York", offset: 24*time.Hour - time.Second, zone: "America/New_York", every: 24 * time.Hour},
		{spec: "CRON_TZ=Asia/Tokyo 0 9 * * *", tz: "Europe/Berlin", zone: "Asia/Tokyo", fixed: true},
		{spec: "TZ=America/New_York @daily", zone: "America/New_York", fixed: true},
		{spec: "CRON_TZ=UTC\t*/10 * * * * *", tz: "Asia/Tokyo", zone: "UTC"},
		{spec: "0 0 * * *", tz: "UTC", zone: "UTC", fixed: true},
		{spec: "0 0 * * *", tz: "Etc/GMT+5", zone: "Etc/GMT+5", fixed: true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			s, err := Parse(tt.spec, tt.tz, tt.offset)
			if err != nil {
				t.Fatalf("Parse(%q, %q, %v): %v", tt.spec, tt.tz, tt.offset, err)
			}
			if got := s.String(); got != tt.spec {
				t.Errorf("String() = %q, want %q", got, tt.spec)
			}
			if got := s.Location().String(); got != tt.zone {
				t.Errorf("Location() = %q, want %q", got, tt.zone)
			}
			if got := s.Every(); got != tt.every {
				t.Errorf("Every() = %v, want %v", got, tt.every)
			}
			if tt.every == 0 && s.cron.fixedHour != tt.fixed {
				t.Errorf("fixed-hour policy = %v, want %v", s.cron.fixedHour, tt.fixed)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		spec   string
		tz     string
		offset time.Duration
		field  string
		msg    string // a part of the message
	}{
		{spec: "", field: "Schedule", msg: "empty schedule"},
		{spec: "   ", field: "Schedule", msg: "empty schedule"},
		{spec: "0 0 25 * * * *", field: "Schedule", msg: `"0 0 25 * * * *": expected 5 or 6 fields, found 7`},
		{spec: "* * * *", field: "Schedule", msg: "expected 5 or 6 fields, found 4"},
		{spec: "hello", field: "Schedule", msg: "expected 5 or 6 fields, found 1"},
		{spec: "60 * * * *", field: "Schedule", msg: `minute field "60": end of range (60) above maximum (59)`},
		{spec: "0 24 * * *", field: "Schedule", msg: `hour field "24"`},
		{spec: "0 0 0 * *", field: "Schedule", msg: `day-of-month field "0"`},
		{spec: "0 0 * 13 *", field: "Schedule", msg: `month field "13"`},
		{spec: "0 0 * * 7", field: "Schedule", msg: `day-of-week field "7"`},
		{spec: "0 0 * * FUN", field: "Schedule", msg: `day-of-week field "FUN"`},
		{spec: "61 0 0 * * *", field: "Schedule", msg: `second field "61"`},
		{spec: "*/0 * * * *", field: "Schedule", msg: "step of range should be a positive number"},
		{spec: "5-1 * * * *", field: "Schedule", msg: "beginning of range (5) beyond end of range (1)"},
		{spec: "1-2-3 * * * *", field: "Schedule", msg: "too many hyphens"},
		{spec: "-1 * * * *", field: "Schedule", msg: `minute field "-1"`},
		{spec: "0 , * * *", field: "Schedule", msg: `hour field "," lists no values`},
		{spec: "0 TZ=UTC * * *", field: "Schedule", msg: `hour field "TZ=UTC": unexpected`},
		{spec: "0 @daily * * *", field: "Schedule", msg: `hour field "@daily": unexpected`},
		{spec: "0 0 30 2 *", field: "Schedule", msg: `"0 0 30 2 *": never fires: no month matching "2" has a day matching "30"`},
		{spec: "0 0 31 4,6,9,11 *", field: "Schedule", msg: "never fires"},
		{spec: "0 0 0 31 FEB ?", field: "Schedule", msg: "never fires"},
		{spec: "@daly", field: "Schedule", msg: `"@daly": unknown descriptor; expected 5 or 6 cron fields, a descriptor such as @daily, or "@every <duration>"`},
		{spec: "@daily 0", field: "Schedule", msg: "unknown descriptor"},
		{spec: "@every", field: "Schedule", msg: `"@every" takes one duration`},
		{spec: "@every 1m 2m", field: "Schedule", msg: `"@every" takes one duration`},
		{spec: "@every10s", field: "Schedule", msg: "unknown descriptor"},
		{spec: "@every ten", field: "Schedule", msg: `invalid duration "ten"`},
		{spec: "@every 500ms", field: "Schedule", msg: "period 500ms is shorter than 1s"},
		{spec: "@every 0s", field: "Schedule", msg: "shorter than 1s"},
		{spec: "@every -1m", field: "Schedule", msg: "shorter than 1s"},
		{spec: "@every 1.5s", field: "Schedule", msg: "period 1.5s is not a whole number of seconds"},
		{spec: "CRON_TZ=Mars/Olympus 0 0 * * *", field: "Schedule", msg: `unknown time zone "Mars/Olympus"`},
		{spec: "TZ=Local 0 0 * * *", field: "Schedule", msg: `"Local" differs from machine to machine`},
		{spec: "CRON_TZ=", field: "Schedule", msg: "CRON_TZ= must be followed by a zone name"},
		{spec: "TZ=UTC", field: "Schedule", msg: "TZ= must be followed"},
		{spec: "CRON_TZ= 0 0 * * *", field: "Schedule", msg: "CRON_TZ= needs a zone name"},
		{spec: "TZ=UTC CRON_TZ=UTC 0 0 * * *", field: "Schedule", msg: "more than one time zone prefix"},
		{spec: "0 0 * * *", tz: "Mars/Olympus", field: "Timezone", msg: `unknown time zone "Mars/Olympus"`},
		{spec: "0 0 * * *", tz: "Local", field: "Timezone", msg: `"Local" differs`},
		{spec: "0 0 * * *", tz: "../../etc/passwd", field: "Timezone", msg: "time zone"},
		{spec: "CRON_TZ=UTC 0 0 * * *", tz: "Nowhere/Land", field: "Timezone", msg: "unknown time zone"},
		{spec: "0 0 * * *", offset: time.Second, field: "Offset", msg: `offset 1s applies only to "@every" schedules`},
		{spec: "@daily", offset: time.Minute, field: "Offset", msg: "only to \"@every\""},
		{spec: "@every 1m", offset: time.Minute, field: "Offset", msg: "offset 1m0s is not less than the period 1m0s"},
		{spec: "@every 1m", offset: -time.Second, field: "Offset", msg: "offset -1s is negative"},
		{spec: "@every 1m", offset: 1500 * time.Millisecond, field: "Offset", msg: "offset 1.5s is not a whole number of seconds"},
		// The schedule is checked first, then the zone, then the offset.
		{spec: "bad", tz: "Mars/Olympus", offset: time.Hour, field: "Schedule", msg: "expected 5 or 6 fields"},
		{spec: "@daily", tz: "Mars/Olympus", offset: time.Hour, field: "Timezone", msg: "unknown time zone"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			s, err := Parse(tt.spec, tt.tz, tt.offset)
			if err == nil {
				t.Fatalf("Parse(%q, %q, %v) = %v, want an error", tt.spec, tt.tz, tt.offset, s)
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("error %v is a %T, want *Error", err, err)
			}
			if perr.Field != tt.field {
				t.Errorf("Field = %q, want %q (error: %v)", perr.Field, tt.field, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
			if errors.Unwrap(err) == nil {
				t.Errorf("error %q unwraps to nil", err)
			}
		})
	}
}
