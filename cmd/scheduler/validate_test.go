package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/internal/admin"
)

// validate prints every problem as FILE:LINE:COL: path: message and exits
// 2, or says the file is ok and exits 0, whatever the bytes.
func TestValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		text string
		code int
		// want are patterns for the stderr lines, in order, after "FILE:";
		// for code 0, the stdout line.
		want []string
	}{
		{"good.yaml", "jobs:\n  - {name: a, schedule: \"@every 1m\", command: [\"true\"]}\n  - {name: b, schedule: \"@daily\", command: [\"true\"]}\n",
			0, []string{` ok \(2 jobs\)`}},
		{"empty-table.yaml", "jobs: []\n", 0, []string{` ok \(0 jobs\)`}},
		{"syntax.yaml", "jobs:\n  - name: a\n   schedule: x\n", 2, []string{`3:1: yaml: `}},
		{"unknown-field.yaml", "jobs:\n  - name: a\n    schedule: \"@daily\"\n    comand: [\"true\"]\n", 2,
			[]string{`2:5: jobs\[0\]: .*command`, `4:5: jobs\[0\]\.comand: unknown field "comand" \(did you mean "command"\?\)`}},
		{"bad-schedule.yaml", "jobs:\n  - name: a\n    schedule: \"0 0 * *\"\n    command: [\"true\"]\n", 2,
			[]string{`3:5: jobs\[0\]\.schedule: "0 0 \* \*": expected 5 or 6 fields, found 4$`}},
		{"duplicate.yaml", "jobs:\n  - {name: a, schedule: \"@daily\", command: [\"true\"]}\n  - {name: a, schedule: \"@daily\", command: [\"true\"]}\n", 2,
			[]string{`3:\d+: jobs\[1\]\.name: .*"a"`}},
		{"several.yaml", "store: {mode: galaxy}\njobs:\n  - name: \"a b\"\n    schedule: \"@daily\"\n    command: [\"true\"]\n    timeout: 30\n  - {name: c, schedule: \"@every 1s\", timezone: Mars/Olympus, command: [\"true\"]}\n", 2,
			[]string{`1:\d+: store\.mode: `, `3:5: jobs\[0\]\.name: `, `6:14: jobs\[0\]\.timeout: `, `7:\d+: jobs\[1\]\.timezone: `}},
		{"jitter.yaml", "defaults: {jitter: 2m, timezone: Nowhere/City}\njobs:\n  - {name: a, schedule: \"@every 1m\", timezone: UTC, command: [\"true\"]}\n  - {name: b, schedule: \"@every 1s\", jitter: 1m, timezone: UTC, command: [\"true\"]}\n", 2,
			[]string{`1:\d+: defaults\.jitter: 2m0s is longer than the schedule's interval, 1m0s: .*; at most 1m0s \(inherited by jobs\[0\] "a"\)$`,
				`1:\d+: defaults\.timezone: unknown time zone "Nowhere/City"`,
				`4:\d+: jobs\[1\]\.jitter: 1m0s is longer than the schedule's interval, 1s: `}},
		{"func.yaml", "jobs:\n  - {name: a, schedule: \"@daily\", func: reindex}\n", 2, []string{`2:\d+: jobs\[0\]\.func: `}},
		{"garbage.yaml", "\x00\xff\xfe\x01{[\"\n\x7f", 2, []string{`\d+:\d+: yaml: `}},
		{"no-jobs.yaml", "store: {key_prefix: x}\n", 2, []string{`\d+:\d+: jobs: `}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			writeFile(t, path, tc.text)
			r := runCLI(t, nil, env(), "validate", "--config", path)
			r.want(t, tc.code, "validate", tc.name)
			if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine ") {
				t.Fatalf("validate panicked:\n%s", r.stderr)
			}
			out := r.stderr
			if tc.code == 0 {
				out = r.stdout
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("want %d lines, got:\n%s", len(tc.want), out)
			}
			for i, w := range tc.want {
				if !regexp.MustCompile(`^` + regexp.QuoteMeta(path) + `:` + w).MatchString(lines[i]) {
					t.Errorf("line %d: %q does not match %q", i+1, lines[i], w)
				}
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		r := runCLI(t, nil, env(), "validate", "--config", filepath.Join(dir, "nope.yaml"))
		r.want(t, 2, "validate")
		if !strings.Contains(r.stderr, "nope.yaml: no such file") {
			t.Errorf("stderr %q", r.stderr)
		}
	})
	// A directory or an unreadable file is named once, with what is wrong
	// (not "DIR: read DIR: read DIR: is a directory").
	t.Run("directory", func(t *testing.T) {
		sub := filepath.Join(dir, "conf.d")
		if err := os.Mkdir(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, nil, env(), "validate", "--config", sub)
		r.want(t, 2, "validate")
		if want := sub + ": is a directory, not a job table (name the file with --config FILE)\n"; r.stderr != want {
			t.Errorf("stderr %q, want %q", r.stderr, want)
		}
	})
	t.Run("example", func(t *testing.T) {
		r := runCLI(t, nil, env(), "validate", "--config", "../../config.example.yaml")
		r.want(t, 0, "validate")
		if r.stdout != "../../config.example.yaml: ok (3 jobs)\n" || r.stderr != "" {
			t.Errorf("stdout %q stderr %q", r.stdout, r.stderr)
		}
	})
}

// The example table loads, and is what its comments say: no store URL
// (the embedded store), the lottery at noon in Shanghai, a job every few
// seconds, and only command jobs.
func TestExampleTableLoads(t *testing.T) {
	f, err := config.Load("../../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Store.URL != "" || f.Admin.Token != "" || f.Admin.Listen != "127.0.0.1:9090" {
		t.Errorf("store %v admin %v: want the embedded store and a loopback admin API", f.Store, f.Admin)
	}
	jobs := map[string]bool{}
	for _, j := range f.Jobs {
		jobs[j.Name] = true
		if kind := admin.Kind(j); kind != "command" {
			t.Errorf("job %s is a %s job; the example must run without network", j.Name, kind)
		}
	}
	lottery, ok := findJob(f, "lottery")
	if !ok || lottery.Schedule != "0 0 12 * * *" || lottery.Timezone != "Asia/Shanghai" {
		t.Errorf("lottery: %+v", lottery)
	}
	if hb, ok := findJob(f, "heartbeat"); !ok || hb.Schedule != "@every 5s" {
		t.Errorf("heartbeat: %+v", hb)
	}
}

// A command whose daemon is not up says where it looked once, and what
// went wrong.
func TestAdminAPIDown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	table := filepath.Join(dir, "t.yaml")
	writeFile(t, table, "admin: {listen: \"127.0.0.1:1\"}\njobs:\n  - {name: a, schedule: \"@daily\", command: [\"true\"]}\n")
	r := runCLI(t, nil, env(), "status", "--config", table)
	r.want(t, 1, "status")
	want := "scheduler status: the daemon's admin API at http://127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused (is the daemon running, with admin.listen?)\n"
	if r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
}
