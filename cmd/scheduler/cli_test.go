package main

import (
	"encoding/json"
	"go/build"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/solocron/solocron/config"
)

func TestNext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	table := filepath.Join(dir, "solocron.yaml")
	writeFile(t, table, `jobs:
  - {name: lottery, schedule: "0 0 12 * * *", timezone: Asia/Shanghai, command: ["true"]}
  - {name: quarter, schedule: "@every 1h", offset: 15m, command: ["true"], paused: true}
  - {name: dst, schedule: "30 2 * * *", timezone: Europe/Berlin, command: ["true"]}
`)
	r := runCLI(t, nil, env(), "next", "--config", table, "--count", "2", "--from", "2026-03-28T23:00:00Z")
	r.want(t, 0, "next")
	want := `JOB      SCHEDULE                     UTC                   JOB'S ZONE
lottery  0 0 12 * * *                 2026-03-29T04:00:00Z  Sun 2026-03-29 12:00:00 CST (Asia/Shanghai)
lottery  0 0 12 * * *                 2026-03-30T04:00:00Z  Mon 2026-03-30 12:00:00 CST (Asia/Shanghai)
quarter  @every 1h (paused in table)  2026-03-28T23:15:00Z  Sat 2026-03-28 23:15:00 UTC (UTC)
quarter  @every 1h (paused in table)  2026-03-29T00:15:00Z  Sun 2026-03-29 00:15:00 UTC (UTC)
dst      30 2 * * *                   2026-03-29T01:00:00Z  Sun 2026-03-29 03:00:00 CEST (Europe/Berlin)
dst      30 2 * * *                   2026-03-30T00:30:00Z  Mon 2026-03-30 02:30:00 CEST (Europe/Berlin)
`
	if r.stdout != want {
		t.Errorf("next:\n%s\nwant:\n%s", r.stdout, want)
	}

	// Without --from: from now, the default count, one job.
	r = runCLI(t, nil, env(), "next", "lottery", "--config", table)
	r.want(t, 0, "next", "lottery")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 6 {
		t.Fatalf("want a header and 5 instants:\n%s", r.stdout)
	}
	for _, l := range lines[1:] {
		if !regexp.MustCompile(`^lottery +0 0 12 \* \* \* +\d{4}-\d\d-\d\dT04:00:00Z +\w{3} \d{4}-\d\d-\d\d 12:00:00 CST \(Asia/Shanghai\)$`).MatchString(l) {
			t.Errorf("line %q", l)
		}
	}

	for _, args := range [][]string{{"nope"}, {"--count", "0"}, {"--from", "yesterday"}, {"a", "b"}} {
		runCLI(t, nil, env(), append([]string{"next", "--config", table}, args...)...).want(t, 2, args...)
	}
}

// next marks the instants inside a blackout window.
func TestNextMarksBlackouts(t *testing.T) {
	t.Parallel()
	table := filepath.Join(t.TempDir(), "solocron.yaml")
	writeFile(t, table, `jobs:
  - name: daily
    schedule: "0 12 * * *"
    command: ["true"]
    blackouts:
      - {cron: "0 0 24 12 *", duration: 48h, timezone: Europe/Berlin}
      - {from: 2026-12-31T00:00:00Z, to: 2027-01-01T00:00:00Z}
`)
	r := runCLI(t, nil, env(), "next", "--config", table, "--count", "9", "--from", "2026-12-23T00:00:00Z")
	r.want(t, 0, "next")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")[1:]
	if len(lines) != 9 {
		t.Fatalf("want 9 instants:\n%s", r.stdout)
	}
	for i, l := range lines {
		// The 24th and 25th (Berlin's Christmas window) and the 31st.
		want := i == 1 || i == 2 || i == 8
		if got := strings.Contains(l, "[blackout ") && strings.Contains(l, "skipped_blackout"); got != want {
			t.Errorf("line %d marked %v, want %v: %q", i, got, want, l)
		}
	}
}

// version, --version and -v print the version, commit and build date the
// binary was stamped with, and need no table.
func TestVersion(t *testing.T) {
	t.Parallel()
	var first string
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}, {"version", "--log-level", "debug"}} {
		r := runCLI(t, nil, env(), args...)
		r.want(t, 0, args...)
		for _, want := range []string{`\Asolocron ` + regexp.QuoteMeta(testVersion) + "\n",
			`(?m)^commit: +` + testCommit + `$`,
			`(?m)^built: +` + regexp.QuoteMeta(testDate) + `$`,
			`(?m)^go: +` + regexp.QuoteMeta(runtime.Version()) + ` ` + runtime.GOOS + `/` + runtime.GOARCH + `$`,
			`(?m)^module: +github\.com/solocron/solocron `} {
			if !regexp.MustCompile(want).MatchString(r.stdout) {
				t.Errorf("scheduler %q output does not match %s:\n%s", args, want, r.stdout)
			}
		}
		if first == "" {
			first = r.stdout
		} else if r.stdout != first {
			t.Errorf("scheduler %q printed\n%s\nscheduler version printed\n%s", args, r.stdout, first)
		}
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string // a substring; "" when stdout must be empty
		stderr string
	}{
		{nil, 2, "", "Usage:"},
		{[]string{"help"}, 0, "Commands:", ""},
		{[]string{"-h"}, 0, "Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error", ""},
		{[]string{"help", "history"}, 0, "Usage: scheduler history [flags] JOB", ""},
		{[]string{"history", "-h"}, 0, "-limit", ""},
		{[]string{"run", "--help"}, 0, "-shutdown-grace", ""},
		{[]string{"help", "nope"}, 2, "", `unknown command "nope"`},
		{[]string{"frobnicate"}, 2, "", "unknown command \"frobnicate\"\n"},
		// A newcomer's word for a command, or a typo of one, is named.
		{[]string{"check", "--config", "x.yaml"}, 2, "", `unknown command "check" (did you mean "validate"?)`},
		{[]string{"statuss"}, 2, "", `unknown command "statuss" (did you mean "status"?)`},
		{[]string{"valdate"}, 2, "", `unknown command "valdate" (did you mean "validate"?)`},
		{[]string{"Pause"}, 2, "", `unknown command "Pause" (did you mean "pause"?)`},
		{[]string{"help", "runs"}, 2, "", `unknown command "runs" (did you mean "history"?)`},
		{[]string{"validate", "--bogus"}, 2, "", "flag provided but not defined: -bogus"},
		{[]string{"validate", "--log-format", "xml"}, 2, "", "--log-format"},
		{[]string{"validate", "--log-level", "loud"}, 2, "", "--log-level"},
		{[]string{"validate", "extra"}, 2, "", "unexpected arguments"},
		{[]string{"run", "--shutdown-grace", "-1s"}, 2, "", "must not be negative"},
		{[]string{"history", "--limit", "0", "x"}, 2, "", "--limit"},
		{[]string{"trigger", "--wait", "-1s", "x"}, 2, "", "--wait"},
		{[]string{"help", "cancel"}, 0, "Usage: scheduler cancel [flags] RUN_ID", ""},
		{[]string{"help", "retry"}, 0, "Usage: scheduler retry [flags] RUN_ID", ""},
		{[]string{"cancel", "--wait", "-1s", "x@y"}, 2, "", "--wait"},
		{[]string{"cancel"}, 2, "", "want exactly one RUN_ID, got 0"},
		{[]string{"retry", "a@b", "c@d"}, 2, "", "want exactly one RUN_ID, got 2"},
		{[]string{"retry", "nojobid"}, 2, "", `"nojobid" is not a run id`},
		{[]string{"version", "extra"}, 2, "", "unexpected arguments"},
		{[]string{"--version", "extra"}, 2, "", "unexpected arguments"},
		// Every command takes --config (SPEC section 4); schema and version
		// read no table and ignore it, even one that does not exist.
		{[]string{"version", "--config", "no-such-table.yaml"}, 0, "solocron", ""},
		{[]string{"schema", "--config", "no-such-table.yaml"}, 0, "json-schema.org", ""},
		{[]string{"help", "version"}, 0, "-log-format", ""},
		// The flags every command takes may come before the command too.
		{[]string{"--config", "../../config.example.yaml", "validate"}, 0, "config.example.yaml: ok (3 jobs)", ""},
		{[]string{"--log-level=warn", "-config", "../../config.example.yaml", "next", "--count", "1", "lottery"}, 0, "Asia/Shanghai", ""},
		{[]string{"--config", "../../config.example.yaml", "frobnicate"}, 2, "", `unknown command "--config"`},
		{[]string{"--json", "status"}, 2, "", `unknown command "--json"`},
	} {
		r := runCLI(t, nil, env(), tc.args...)
		if r.code != tc.code || (tc.stdout == "") != (r.stdout == "") || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("scheduler %q: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d, stdout with %q, stderr with %q",
				tc.args, r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
	// The usage of schema and version does not list --config with its
	// default, which read as if they loaded solocron.yaml: it says the
	// flag is ignored. The commands that read the table list it.
	for _, tc := range []struct {
		args          []string
		want, without string
	}{
		{[]string{"help", "version"}, "--config is accepted, and ignored", "-config string"},
		{[]string{"help", "schema"}, "--config is accepted, and ignored", "solocron.yaml"},
		{[]string{"schema", "-h"}, "-log-level", "-config string"},
		{[]string{"version", "--log-level=warn", "--help"}, `(default "info")`, "-config string"},
		{[]string{"help", "status"}, "-config FILE", "ignored"},
	} {
		r := runCLI(t, nil, env(), tc.args...)
		if r.code != 0 || !strings.Contains(r.stdout, tc.want) || strings.Contains(r.stdout, tc.without) {
			t.Errorf("scheduler %q: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 0, stdout with %q and without %q",
				tc.args, r.code, r.stdout, r.stderr, tc.want, tc.without)
		}
	}
}

// scheduler schema prints the JSON Schema of the job table: the loader's,
// byte for byte, needing no table.
func TestSchema(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, env(), "schema")
	r.want(t, 0, "schema")
	if r.stdout != string(config.JSONSchema()) {
		t.Errorf("scheduler schema printed something else than config.JSONSchema():\n%.300s", r.stdout)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("not a 2020-12 JSON Schema (%v): %.200s", err, r.stdout)
	}
	r = runCLI(t, nil, env(), "schema", "extra")
	r.want(t, 2, "schema extra")
}

// The time-zone database is compiled in, so that a table's timezone: works
// in an image or on a host without one (the container build checks it for
// real, in a root file system without /usr/share/zoneinfo).
func TestTimeZoneDatabaseEmbedded(t *testing.T) {
	t.Parallel()
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pkg.Imports, "time/tzdata") {
		t.Errorf("cmd/scheduler does not import time/tzdata (imports: %v)", pkg.Imports)
	}
}
