package config_test

import "testing"

// The handlers' and blackouts' rules live in jobs and scheduler, which name
// Go fields; config reports each problem at the YAML value it is about.
func TestValidatorsReportAtYAMLPositions(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{{
		name: "a problem written under defaults: is told once, at its line, used or not",
		text: `defaults:
  env: {SOLOCRON_SLOT: "1", OK: x}
  http: {url: "ftp://x", headers: {idempotency-key: k}, follow_redirects: never}
  blackouts:
    - {cron: "@daily"}
jobs:
  - {name: a, schedule: "@hourly", command: [x]}
  - {name: b, schedule: "@hourly", command: [x], env: {"A=B": x}}
`,
		want: []string{
			`2:9: defaults.env.SOLOCRON_SLOT: is set by the scheduler for every run`,
			`3:15: defaults.http.url: scheme "ftp" is not http or https`,
			`3:36: defaults.http.headers.idempotency-key: is set by the scheduler on every request`,
			`3:75: defaults.http.follow_redirects: "never" is not one of same_host, all, none`,
			`5:7: defaults.blackouts[0].duration: must be positive`,
			`8:56: jobs[1].env["A=B"]: "A=B" is not an environment variable name`,
		},
	}, {
		name: "a job's own values",
		text: `jobs:
  - name: a
    schedule: "@hourly"
    http:
      url: "https://x.example/"
      headers: {X-A: "a\nb", Solocron-Fencing-Slot: "1"}
      expect_status: [200, 600]
    blackouts:
      - {cron: "@every 1h", duration: 1m}
      - {from: "2026-01-02T00:00:00Z", to: "2026-01-01T00:00:00Z"}
  - {name: b, schedule: "@hourly", command: ["./x", "--a"], env: {SOLOCRON_JOB: x}, lease: 1s, kill_grace: 600ms}
  - name: c
    schedule: "@hourly"
    command: [x]
    env: {SOLOCRON_JOB_SUPERVISOR: "1", SOLOCRON_JOB_SUPERVISOR_GORACE: "1"}
`,
		want: []string{
			`6:17: jobs[0].http.headers.X-A: must not contain a line break or NUL byte`,
			`6:30: jobs[0].http.headers.Solocron-Fencing-Slot: is set by the scheduler on every request`,
			`7:28: jobs[0].http.expect_status[1]: 600 is not an HTTP status code`,
			`9:16: jobs[0].blackouts[0].cron: must be a cron spec or descriptor, not @every`,
			`10:44: jobs[0].blackouts[1].to: must be after from`,
			`11:67: jobs[1].env.SOLOCRON_JOB: is set by the scheduler for every run`,
			`11:96: jobs[1].kill_grace: 600ms leaves no room inside the lease (1s)`,
			`15:11: jobs[2].env.SOLOCRON_JOB_SUPERVISOR: is the scheduler's own: it marks the job supervisor's process, and no program is given it`,
			`15:41: jobs[2].env.SOLOCRON_JOB_SUPERVISOR_GORACE: is the scheduler's own: it marks the job supervisor's process, and no program is given it`,
		},
	}, {
		name: "an inherited value the validator refuses only in some jobs",
		text: `defaults:
  kill_grace: 20s
jobs:
  - {name: a, schedule: "@hourly", command: [x]}
  - {name: b, schedule: "@hourly", command: [x], lease: 1m}
  - {name: c, schedule: "@hourly", command: [x], lease: 10s}
`,
		want: []string{
			`2:3: defaults.kill_grace: 20s leaves no room inside the lease (30s): at most half of it, so that the job's processes are killed before its slot can be given away; lower kill_grace or raise lease (inherited by jobs[0] "a")`,
			`2:3: defaults.kill_grace: 20s leaves no room inside the lease (10s): at most half of it, so that the job's processes are killed before its slot can be given away; lower kill_grace or raise lease (inherited by jobs[2] "c")`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.text)
			wantErrors(t, err, tc.want...)
		})
	}
}
