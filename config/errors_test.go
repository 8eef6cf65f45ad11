package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/solocron/solocron/config"
)

// wantErrors checks that err is a *config.Errors whose entries, in order,
// print as "t.yaml:" + each want: "LINE:COL: path: " exactly, then a
// message containing the rest.
func wantErrors(t *testing.T, err error, want ...string) {
	t.Helper()
	var es *config.Errors
	if !errors.As(err, &es) {
		t.Fatalf("error = %v (%T), want a *config.Errors", err, err)
	}
	var got []string
	for _, e := range *es {
		got = append(got, e.Error())
	}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = matches(got[i], "t.yaml:"+want[i])
	}
	if !ok {
		t.Errorf("got errors:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), "t.yaml:"+strings.Join(want, "\n\tt.yaml:"))
	}
	if s := err.Error(); s != strings.Join(got, "\n") {
		t.Errorf("Error() = %q, want the entries joined by newlines", s)
	}
}

// matches reports whether got starts with want's "FILE:LINE:COL: path: "
// and goes on with a message containing want's message.
func matches(got, want string) bool {
	pos := strings.Index(want, ": ") // ends FILE:LINE:COL
	path := strings.Index(want[pos+2:], ": ")
	if pos < 0 || path < 0 {
		return strings.HasPrefix(got, want)
	}
	cut := pos + 2 + path + 2
	return strings.HasPrefix(got, want[:cut]) && strings.Contains(got[cut:], want[cut:])
}

func TestBadFiles(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{{
		name: "several problems at once, in file order",
		text: `store:
  mode: sentinal
jobs:
  - name: backup
    schedule: "@hourly"
    comand: [./backup]
    concurrency: two
    paused: yes
    timeout: 30
  - name: backup
    schedule: "@daily"
    command: [./x]
    lease: -5s
`,
		want: []string{
			`2:9: store.mode: "sentinal" is not one of standalone, sentinel, cluster, redlock (did you mean "sentinel"?)`,
			`4:5: jobs[0]: needs one of command (a program to run), http (a request to send) or func`,
			`6:5: jobs[0].comand: unknown field "comand" (did you mean "command"?)`,
			`7:18: jobs[0].concurrency: expected an integer, got string "two"`,
			`8:13: jobs[0].paused: expected a boolean (true or false), got string "yes"`,
			`9:14: jobs[0].timeout: expected a duration such as 30s or 1h30m, got integer 30 (a duration needs a unit, e.g. 30s)`,
			`10:5: jobs[1].name: "backup" is already the name of jobs[0]`,
			`13:12: jobs[1].lease: must not be negative (got -5s)`,
		},
	}, {
		name: "a bad schedule and a bad zone in one job, both",
		text: `jobs:
  - name: a
    schedule: "bogus"
    timezone: Mars/Base
    command: ["true"]
`,
		want: []string{
			`3:5: jobs[0].schedule: "bogus": expected 5 or 6 fields, found 1`,
			`4:5: jobs[0].timezone: unknown time zone "Mars/Base"; expected an IANA name such as "Europe/Berlin" or "UTC"`,
		},
	}, {
		name: "unknown fields everywhere, with hints",
		text: `replica-id: x
store:
  urls: []
  master: m
admin:
  listen: ":80"
  tokn: x
defaults:
  timeot: 1s
jobs:
  - name: a
    schedule: "@hourly"
    url: https://x
    http: {url: "https://x", header: {}}
    Schedule: x
    schedule_: x
    bogus: 1
`,
		want: []string{
			`1:1: replica-id: unknown field "replica-id" (did you mean "replica_id"?)`,
			`3:3: store.urls: unknown field "urls" (did you mean "url"?)`,
			`4:3: store.master: unknown field "master" (master belongs under store.sentinel:)`,
			`7:3: admin.tokn: unknown field "tokn" (did you mean "token"?)`,
			`9:3: defaults.timeot: unknown field "timeot" (did you mean "timeout"?)`,
			`13:5: jobs[0].url: unknown field "url" (url belongs under http:)`,
			`14:30: jobs[0].http.header: unknown field "header" (did you mean "headers"?)`,
			`15:5: jobs[0].Schedule: unknown field "Schedule" (did you mean "schedule"?)`,
			`16:5: jobs[0].schedule_: unknown field "schedule_" (did you mean "schedule"?)`,
			`17:5: jobs[0].bogus: unknown field "bogus"`,
		},
	}, {
		name: "job fields at the top level",
		text: "name: x\nschedule: \"@hourly\"\njobs: []\n",
		want: []string{
			`1:1: name: unknown field "name" (name is a job field: it goes in an entry of jobs: or under defaults:)`,
			`2:1: schedule: unknown field "schedule" (schedule is a job field`,
		},
	}, {
		name: "duplicate keys",
		text: `jobs:
  - name: a
    schedule: "@hourly"
    command: [x]
    name: b
    env: {A: "1", A: "2"}
jobs: []
`,
		want: []string{
			`5:5: jobs[0].name: duplicate key "name" (first at line 2, column 5)`,
			`6:19: jobs[0].env.A: duplicate key "A" (first at line 6, column 11)`,
			`7:1: jobs: duplicate key "jobs" (first at line 1, column 1)`,
		},
	}, {
		name: "handlers",
		text: `jobs:
  - {name: a, schedule: "@hourly"}
  - {name: b, schedule: "@hourly", command: [x], http: {url: "https://x"}}
  - {name: c, schedule: "@hourly", command: []}
  - {name: d, schedule: "@hourly", http: {method: GET}}
  - {name: e, schedule: "@hourly", http: {url: "ftp://x"}, env: {A: b}, dir: /tmp}
  - {name: f, schedule: "@hourly", func: reindx}
  - {name: g, schedule: "@hourly", command: "./run --x"}
  - {name: h, schedule: "@hourly", command: ["", "${TOKEN}"]}
  - {name: i, schedule: "@hourly", http: {url: "/relative", method: post, headers: {"Bad Name": x, Idempotency-Key: k}}}
  - {name: j, schedule: "@hourly", http: {url: "https://x", expect_status: [200, 99, 1000]}}
  - {name: k, schedule: "@hourly", http: {url: "https://x", expect_status: []}}
  - {name: l, schedule: "@hourly", command: [x], env: {SOLOCRON_RUN_ID: x, "A=B": x}}
  - {name: m, schedule: "@hourly", http: "https://x"}
`,
		want: []string{
			`2:5: jobs[0]: needs one of command (a program to run), http (a request to send) or func`,
			`3:50: jobs[1].http: a job takes exactly one of command, http or func, and this one already has command`,
			`4:45: jobs[2].command: must not be empty: the first entry is the program to run`,
			`5:36: jobs[3].http.url: is required`,
			`6:48: jobs[4].http.url: scheme "ftp" is not http or https`,
			`6:60: jobs[4].env: applies only to command jobs, and this is an http job`,
			`6:73: jobs[4].dir: applies only to command jobs, and this is an http job`,
			`7:42: jobs[5].func: "reindx" is not a registered Go function: func jobs run only in a program that embeds Solocron and registers them with config.WithFuncs (did you mean "reindex"?)`,
			`8:45: jobs[6].command: expected a list of strings (the program and its arguments, run without a shell), got string "./run --x"`,
			`9:46: jobs[7].command[0]: the program to run must not be empty`,
			`10:48: jobs[8].http.url: must be an absolute URL starting with http:// or https://`,
			`10:69: jobs[8].http.method: "post": methods are case-sensitive; write POST`,
			`10:85: jobs[8].http.headers["Bad Name"]: "Bad Name" is not a valid header name`,
			`10:100: jobs[8].http.headers.Idempotency-Key: is set by the scheduler on every request`,
			`11:82: jobs[9].http.expect_status[1]: 99 is not an HTTP status code (100 to 599)`,
			`11:86: jobs[9].http.expect_status[2]: 1000 is not an HTTP status code (100 to 599)`,
			`12:76: jobs[10].http.expect_status: must list at least one status code`,
			`13:56: jobs[11].env.SOLOCRON_RUN_ID: is set by the scheduler for every run`,
			`13:76: jobs[11].env["A=B"]: "A=B" is not an environment variable name`,
			`14:42: jobs[12].http: expected a mapping (url, and optionally method, headers, body, expect_status), got string "https://x"`,
		},
	}, {
		name: "types",
		text: `replica_id: [a]
store: x
admin: {listen: 9090}
jobs:
  - x
  - name: {a: b}
    schedule: "@hourly"
    command: [x, [y], {z: 1}, ~]
    env: {A: [1], B: 2, C: true, D: 1.5, E: ~}
    history_limit: 1.5
    retries: 99999999999999999999
    offset: 1.5
    jitter: "30 seconds"
    paused: "true"
    lease: 0
`,
		want: []string{
			`1:13: replica_id: expected a string, got a list`,
			`2:8: store: expected a mapping, got string "x"`,
			`3:17: admin.listen: "9090" is not host:port`,
			`5:5: jobs[0]: expected a job (a mapping with name, schedule and one of command, http or func), got string "x"`,
			`6:11: jobs[1].name: expected a string, got a mapping`,
			`8:18: jobs[1].command[1]: expected a string, got a list`,
			`8:23: jobs[1].command[2]: expected a string, got a mapping`,
			`8:31: jobs[1].command[3]: expected a string, got null`,
			`9:14: jobs[1].env.A: expected a string, got a list`,
			`9:45: jobs[1].env.E: expected a string, got null`,
			`10:20: jobs[1].history_limit: expected an integer, got number 1.5`,
			`11:14: jobs[1].retries: expected an integer, got number 99999999999999999999`,
			`12:13: jobs[1].offset: expected a duration such as 30s or 1h30m, got number 1.5`,
			`13:13: jobs[1].jitter: expected a duration such as 30s or 1h30m, got string "30 seconds"`,
			`14:13: jobs[1].paused: expected a boolean (true or false), got string "true"`,
		},
	}, {
		// A lost lease's job must be killed before the lease runs out.
		name: "kill grace and history limit",
		text: `jobs:
  - name: a
    schedule: "@hourly"
    command: [x]
    lease: 4s
    kill_grace: 3s
  - name: b
    schedule: "@hourly"
    command: [x]
    lease: 10s              # valid: kill_grace, not written, is then lease/3
    history_limit: 10001
    pause_after_failures: -2
`,
		want: []string{
			`6:5: jobs[0].kill_grace: 3s leaves no room inside the lease (4s): at most half of it, so that the job's processes are killed before its slot can be given away; lower kill_grace or raise lease`,
			`11:5: jobs[1].history_limit: must be at most 10000: the history is kept in Redis' memory (got 10001)`,
			`12:5: jobs[1].pause_after_failures: must not be negative (got -2); 0 never pauses`,
		},
	}, {
		name: "jobs not a list",
		text: "jobs:\n  name: a\n",
		want: []string{`2:3: jobs: expected a list of jobs (each entry starting with -), got a mapping`},
	}, {
		name: "top level not a mapping",
		text: "- name: a\n",
		want: []string{`1:1: yaml: expected a mapping (replica_id, store, admin, defaults, jobs) at the top of the file, got a list`},
	}, {
		name: "empty file",
		text: "",
		want: []string{`1:1: jobs: is required, and the file is empty (write jobs: [] for a replica that runs no jobs)`},
	}, {
		name: "comments only",
		text: "# nothing yet\n",
		want: []string{`1:1: jobs: is required, and the file is empty`},
	}, {
		name: "no jobs key",
		text: "store: {}\n",
		want: []string{`1:1: jobs: is required (write jobs: [] for a replica that runs no jobs)`},
	}, {
		name: "syntax error",
		text: "jobs:\n  - name: a\n    schedule: \"@hourly\n",
		want: []string{`3:1: yaml: found unexpected end of stream`},
	}, {
		name: "bad indentation",
		text: "jobs:\n  - name: a\n   schedule: x\n",
		want: []string{`3:1: yaml: did not find expected '-' indicator`},
	}, {
		name: "two documents",
		text: "jobs: []\n---\njobs: []\n",
		want: []string{`2:1: yaml: the file holds more than one YAML document`},
	}, {
		name: "invalid UTF-8",
		text: "jobs:\n  - name: ab\xffc\n",
		want: []string{`2:13: yaml: invalid UTF-8 (byte 0xff); a job table must be UTF-8 text`},
	}, {
		name: "control character",
		text: "jobs: []\n# \x01\n",
		want: []string{`2:3: yaml: control character U+0001 is not allowed in YAML`},
	}, {
		name: "unknown alias",
		text: "jobs:\n  - name: a\n    command: *nope\n",
		want: []string{`3:1: yaml: unknown anchor 'nope' referenced`},
	}, {
		name: "missing fields are reported at the job",
		text: "jobs:\n  - command: [x]\n  - name: \"no spaces\"\n    func: reindex\n  - name: \"..\"\n    func: reindex\n",
		want: []string{
			`2:5: jobs[0].name: is required`,
			`2:5: jobs[0].schedule: is required`,
			`3:5: jobs[1].name: "no spaces" may contain only letters, digits`,
			`3:5: jobs[1].schedule: is required`,
			`5:5: jobs[2].name: ".." cannot be a job's name: no address can name it`,
			`5:5: jobs[2].schedule: is required`,
		},
	}, {
		name: "defaults",
		text: `defaults:
  name: x
  schedule: "@hourly"
  command: [x]
  func: reindex
  max_wait: 5s
jobs:
  - {name: a, schedule: "@hourly", command: [y]}
  - {name: b, schedule: "@hourly", command: [y]}
  - {name: c, schedule: "@hourly", command: [y], overlap: wait}
  - {name: d, schedule: "@hourly", command: [y]}
  - {name: e, schedule: "@hourly", command: [y]}
  - {name: f, schedule: "@hourly", overlap: wait}
`,
		want: []string{
			`2:3: defaults.name: cannot have a default: every job sets its own name`,
			`3:3: defaults.schedule: cannot have a default: every job sets its own schedule`,
			`6:3: defaults.max_wait: applies only to overlap: wait (inherited by jobs[0] "a", jobs[1] "b", jobs[3] "d" and 1 more)`,
			`13:5: jobs[5]: needs one of command, http or func of its own: defaults: names several`,
		},
	}, {
		name: "the scheduler's checks, at the field's key",
		text: `defaults:
  timezone: Mars/Olympus
jobs:
  - {name: a, schedule: "0 0 * *", command: [x]}
  - {name: b, schedule: "@hourly", command: [x]}
  - {name: c, schedule: "@hourly", command: [x], offset: 5s, timezone: UTC}
  - {name: d, schedule: "@every 1m", command: [x]}
  - {name: e, schedule: "@every 1m", command: [x], timezone: UTC, lease: 50ms, concurrency: -1}
`,
		want: []string{
			`2:3: defaults.timezone: (inherited by jobs[0] "a", jobs[1] "b", jobs[3] "d")`,
			`4:15: jobs[0].schedule: 0 0 * *`,
			`6:50: jobs[2].offset: `,
			`8:67: jobs[4].lease: must be at least 100ms`,
			`8:80: jobs[4].concurrency: must be at least 1`,
		},
	}, {
		// Every job sets its own zone: the default is refused all the
		// same (it was taken, and the next job added would inherit it).
		name: "a bad default time zone no job inherits",
		text: `defaults:
  timezone: Mars/Olympus
jobs:
  - {name: a, schedule: "@hourly", command: [x], timezone: UTC}
`,
		want: []string{
			`2:3: defaults.timezone: unknown time zone "Mars/Olympus"; expected an IANA name such as "Europe/Berlin" or "UTC"`,
		},
	}, {
		name: "a bad default time zone and no jobs",
		text: `defaults:
  timezone: Local
jobs: []
`,
		want: []string{
			`2:3: defaults.timezone: time zone "Local" differs from machine to machine`,
		},
	}, {
		name: "a jitter longer than the interval, own or inherited",
		text: `defaults:
  jitter: 90s
  command: [x]
jobs:
  - {name: a, schedule: "@every 1m"}
  - {name: b, schedule: "@hourly"}
  - {name: c, schedule: "@every 10s", jitter: 11s}
  - {name: d, schedule: "*/30 * * * * *", jitter: 30s}
  - {name: e, schedule: "0 9,17 * * 1-5", jitter: 9h}
`,
		want: []string{
			`2:3: defaults.jitter: 1m30s is longer than the schedule's interval, 1m0s: runs would fire out of order and instants would be skipped, neither run nor recorded missed; at most 1m0s (inherited by jobs[0] "a")`,
			`7:39: jobs[2].jitter: 11s is longer than the schedule's interval, 10s`,
			`9:43: jobs[4].jitter: 9h0m0s is longer than the schedule's shortest interval, 8h0m0s (from `,
		},
	}, {
		name: "a bad default is reported once",
		text: `defaults:
  timeout: 30
  command: ["${NOPE}"]
jobs:
  - {name: a, schedule: "@hourly"}
  - {name: b, schedule: "@hourly"}
`,
		want: []string{
			`2:12: defaults.timeout: expected a duration such as 30s or 1h30m, got integer 30`,
			`3:13: defaults.command[0]: ${NOPE}: environment variable NOPE is not set`,
		},
	}, {
		name: "store",
		text: `store:
  url: http://user:hunter2@host:6379
  mode: cluster
  sentinel: {master: m, addrs: ["h:1"], password: hunter2}
  key_prefix: "my{app}"
  max_clock_skew: 0
jobs: []
`,
		want: []string{
			`2:8: store.url: scheme "http" is not redis or rediss`,
			`3:3: store.cluster: is required with mode: cluster (addrs: at least one host:port)`,
			`4:3: store.sentinel: is used only with mode: sentinel (the mode is cluster)`,
			`5:15: store.key_prefix: "my{app}" must not contain '{', '}' or whitespace`,
			`6:19: store.max_clock_skew: must be greater than 0`,
		},
	}, {
		name: "store urls",
		text: `store:
  url: "redis://user:hunter2@host:port/x"
jobs: []
---
`,
		want: []string{`2:8: store.url: is not a valid URL`},
	}, {
		name: "store url without host, bad database",
		text: "store: {url: \"redis:///0\"}\njobs: []\n",
		want: []string{`1:14: store.url: has no host (expected redis://[user:password@]host:port[/db])`},
	}, {
		name: "sentinel",
		text: `store:
  url: redis://:pw@/1
  mode: sentinel
  sentinel: {addrs: ["h:26379", nohost, ":1"], password: "${TOKEN}"}
jobs: []
`,
		want: []string{
			`4:3: store.sentinel.master: is required with mode: sentinel`,
			`4:33: store.sentinel.addrs[1]: "nohost" is not host:port`,
			`4:41: store.sentinel.addrs[2]: ":1" has no host`,
		},
	}, {
		name: "cluster without addrs",
		text: "store: {mode: cluster, cluster: {addrs: []}}\njobs: []\n",
		want: []string{`1:24: store.cluster.addrs: needs at least one host:port`},
	}, {
		name: "redlock",
		text: `store:
  url: redis://h:6379
  mode: redlock
  redlock:
    urls: [redis://a:6379, redis://a:6379, "rediss://b:6379/x"]
defaults:
  concurrency: 3
jobs:
  - {name: a, schedule: "@hourly", command: [x], concurrency: 2}
  - {name: b, schedule: "@hourly", command: [x]}
  - {name: c, schedule: "@hourly", command: [x], concurrency: 1}
  - {name: d, schedule: "@hourly", command: [x]}
`,
		want: []string{
			`2:3: store.url: is not used with mode: redlock; list every server under redlock.urls`,
			`5:28: store.redlock.urls[1]: is the same server as store.redlock.urls[0]: redlock needs independent servers`,
			`5:44: store.redlock.urls[2]: database "x" is not a number`,
			`7:3: defaults.concurrency: must be 1 with a Redlock store (got 3): Redlock coordinates mutexes only (inherited by jobs[1] "b", jobs[3] "d")`,
			`9:50: jobs[0].concurrency: must be 1 with a Redlock store (got 2): Redlock coordinates mutexes only`,
		},
	}, {
		// The scheduler's own check (ValidateRedlockTable), at each pool:
		// line, once whatever the pool's name; pools: itself too.
		name: "redlock refuses pools",
		text: `store:
  mode: redlock
  redlock: {urls: ["redis://a:1", "redis://b:1", "redis://c:1"]}
pools: {exports: 2}
defaults:
  pool: exports
jobs:
  - {name: a, schedule: "@hourly", command: [x], pool: mail}
  - {name: b, schedule: "@hourly", command: [x], pool: "bad name"}
  - {name: c, schedule: "@hourly", command: [x]}
  - {name: d, schedule: "@hourly", command: [x]}
`,
		want: []string{
			`4:1: pools: need one Redis deployment: in redlock mode each master would count a pool's slots apart`,
			`6:3: defaults.pool: a Redlock store cannot hold pool "exports": each master would count its slots apart (inherited by jobs[2] "c", jobs[3] "d")`,
			`8:50: jobs[0].pool: a Redlock store cannot hold pool "mail": each master would count its slots apart`,
			`9:50: jobs[1].pool: a Redlock store cannot hold pool "bad name": each master would count its slots apart`,
		},
	}, {
		name: "redlock needs three servers",
		text: "store:\n  mode: redlock\n  redlock: {urls: [\"redis://a:1\", \"redis://b:1\"]}\njobs: []\n",
		want: []string{`3:3: store.redlock.urls: needs at least 3 independent servers (has 2)`},
	}, {
		name: "redlock section missing",
		text: "store:\n  mode: redlock\njobs: []\n",
		want: []string{`2:3: store.redlock: is required with mode: redlock (urls: at least 3 independent servers)`},
	}, {
		name: "admin",
		text: "admin:\n  listen: \"localhost:http\"\n  token: \"abc def\"\njobs: []\n",
		want: []string{
			`2:11: admin.listen: port "http" is not a number from 0 to 65535`,
			`3:10: admin.token: must not contain whitespace or control characters`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parse(t, tc.text)
			if f != nil {
				t.Errorf("Parse returned a File along with errors")
			}
			wantErrors(t, err, tc.want...)
		})
	}
}

// Secrets must not reach error messages, which end up in logs.
func TestErrorsDoNotLeakSecrets(t *testing.T) {
	_, err := parse(t, `store:
  url: "redis://user:hunter2@host:port/x"
  redlock: {urls: ["http://u:hunter2@a"]}
  sentinel: {password: !!binary hunter2}
admin:
  token: "hunter2${"
jobs:
  - name: a
    schedule: "@hourly"
    http: {url: "ftp://u:hunter2@x/?token=hunter2", headers: {Authorization: "Bearer ${TOKEN}\n"}}
`)
	if err == nil {
		t.Fatal("no error")
	}
	if s := err.Error(); strings.Contains(s, "hunter2") || strings.Contains(s, env["TOKEN"]) {
		t.Errorf("errors show a secret:\n%s", s)
	}
}

func TestErrorsUnwrap(t *testing.T) {
	_, err := parse(t, "jobs: [{name: a, schedule: \"@hourly\", command: [x], max_wait: 1s}]\n")
	var es *config.Errors
	if !errors.As(err, &es) || len(*es) != 1 {
		t.Fatalf("err = %v; want one problem", err)
	}
	e := (*es)[0]
	if e.File != "t.yaml" || e.Line != 1 || e.Column != 53 || e.Path != "jobs[0].max_wait" {
		t.Errorf("entry = %+v; want t.yaml:1:53 jobs[0].max_wait", e)
	}
	var one *config.Error
	if !errors.As(err, &one) || one != e || !errors.Is(err, e.Err) {
		t.Errorf("errors.As/Is do not reach the entry and its cause")
	}
}
