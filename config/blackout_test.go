package config_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/solocron/solocron/scheduler"
)

func TestBlackoutsParse(t *testing.T) {
	f := mustParse(t, `defaults:
  blackouts:
    - {cron: "0 0 24 12 *", duration: 48h, timezone: Europe/Berlin}
jobs:
  - name: a
    schedule: "@hourly"
    command: [x]
  - name: b
    schedule: "@hourly"
    command: [x]
    blackouts:
      - from: 2026-12-31T22:00:00Z
        to: "2027-01-01T02:00:00Z"
`)
	xmas := []scheduler.Blackout{{Cron: "0 0 24 12 *", Duration: 48 * time.Hour, Timezone: "Europe/Berlin"}}
	if got := f.Jobs[0].Blackouts; !reflect.DeepEqual(got, xmas) {
		t.Errorf("a: %+v, want the defaults' %+v", got, xmas)
	}
	nye := []scheduler.Blackout{{From: time.Date(2026, 12, 31, 22, 0, 0, 0, time.UTC), To: time.Date(2027, 1, 1, 2, 0, 0, 0, time.UTC)}}
	if got := f.Jobs[1].Blackouts; !reflect.DeepEqual(got, nye) {
		t.Errorf("b: %+v, want its own %+v", got, nye)
	}
}

func TestBadBlackouts(t *testing.T) {
	_, err := parse(t, `jobs:
  - name: a
    schedule: "@hourly"
    command: [x]
    blackouts:
      - {cron: "0 25 * * *", duration: 1h}
      - cron: "@daily"
        duration: 0s
      - from: 2026-12-31T22:00:00Z
        to: 2026-12-31T21:00:00Z
      - {from: yesterday, to: 2026-12-31T21:00:00Z}
      - {cron: "@daily", duration: 1h, timezone: Mars/Olympus}
      - {cron: "@daily", duration: 1h, form: x}
      - "@daily"
`)
	wantErrors(t, err,
		`6:16: jobs[0].blackouts[0].cron: `,
		`8:19: jobs[0].blackouts[1].duration: must be positive`,
		`10:13: jobs[0].blackouts[2].to: must be after from`,
		`11:16: jobs[0].blackouts[3].from: expected an RFC 3339 time`,
		`12:50: jobs[0].blackouts[4].timezone: `,
		`13:40: jobs[0].blackouts[5].form: unknown field "form"`,
		`14:9: jobs[0].blackouts[6]: expected a mapping`,
	)
}
