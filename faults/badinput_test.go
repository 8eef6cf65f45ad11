//go:build faults

package faults_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// badTables lists, for each file in testdata/bad, every problem the
// daemon must report, as "LINE:COL path" (checked by hand against the file).
var badTables = map[string][]string{
	"aliases-bomb.yaml": {"8:6 jobs[0].schedule"}, // a billion laughs; the position is the anchored value's
	"bad-values.yaml": {"3:5 jobs[0].schedule", "7:5 jobs[1].timezone", "11:5 jobs[2].lease",
		"12:5 jobs[2].concurrency", "13:5 jobs[2].overlap"},
	"empty.yaml":         {"1:1 jobs"},
	"env.yaml":           {"2:8 store.url", "6:23 jobs[0].command[1]"},
	"handlers.yaml":      {"5:5 jobs[0].http", "6:5 jobs[1]", "11:5 jobs[2].env", "14:14 jobs[3].command"},
	"junk.yaml":          {"1:7 jobs"},
	"modes.yaml":         {"3:3 store.url", "4:3 store.redlock.urls", "10:5 jobs[0].concurrency"},
	"names.yaml":         {"2:5 jobs[0].name", "8:5 jobs[2].name", "11:5 jobs[3].name"},
	"no-jobs.yaml":       {"1:1 jobs"},
	"syntax-flow.yaml":   {"2:1 yaml"},
	"syntax-tab.yaml":    {"3:1 yaml"},
	"two-documents.yaml": {"2:1 yaml"},
	"types.yaml": {"4:18 jobs[0].concurrency", "5:12 jobs[0].lease", "6:14 jobs[0].retries",
		"7:13 jobs[0].paused", "8:14 jobs[0].command"},
	"unknown-fields.yaml": {"3:3 store.max_clok_skew", "5:5 jobs[0]", "7:5 jobs[0].comand", "8:5 jobs[0].concurency"},
}

// 12. Bad job tables: the daemon reports every problem at once, each as
// FILE:LINE:COL: field: message, exits 2, never panics, and refuses to run
// them. (The YAML loader and the schedule parser are also fuzzed in CI:
// config.FuzzParse and internal/schedule.FuzzParse, seed corpora committed.)
func TestScenario12BadInput(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "12", "bad job tables (+ fuzzing of the loader and schedule parser in CI)")
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/bad/*.yaml: %v", err)
	}
	var slowest time.Duration
	problems := 0
	for _, f := range files {
		want, ok := badTables[filepath.Base(f)]
		if !ok {
			t.Errorf("%s: no expected problems listed in badTables", f)
			continue
		}
		out, code, took := runCLI(t, "validate", "--config", f)
		slowest = max(slowest, took)
		if code != 2 {
			t.Errorf("validate %s exited %d, want 2\n%s", f, code, out)
		}
		if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
			t.Errorf("validate %s panicked:\n%s", f, out)
		}
		line := regexp.MustCompile(`^` + regexp.QuoteMeta(f) + `:(\d+):(\d+): (\S+): (.+)$`)
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			m := line.FindStringSubmatch(l)
			if m == nil {
				t.Errorf("validate %s: %q is not FILE:LINE:COL: field: message", f, l)
				continue
			}
			got = append(got, m[1]+":"+m[2]+" "+strings.TrimSuffix(m[3], ":"))
		}
		problems += len(got)
		if !slices.Equal(got, want) {
			t.Errorf("validate %s reported\n  %s\nwant\n  %s", f, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		// run refuses the same file, with the same report.
		out, code, _ = runCLI(t, "run", "--config", f, "--admin-listen=")
		if code != 2 || strings.Contains(out, "panic") {
			t.Errorf("run %s exited %d, want 2:\n%s", f, code, out)
		}
	}
	row.Runs = -1
	row.Duplicates = -1
	row.figure("%d files, %d problems, each reported as FILE:LINE:COL: field: message, exit 2; slowest validate %s (the billion-laughs file included)",
		len(files), problems, ms(slowest))
	row.figure("fuzzing in CI: config.FuzzParse and internal/schedule.FuzzParse, bounded")
}

// runCLI runs the scheduler binary to completion (at most 20 s) and returns
// its combined output, exit code and duration.
func runCLI(t *testing.T, args ...string) (string, int, time.Duration) {
	t.Helper()
	return runCLIWithin(t, 20*time.Second, args...)
}

// runCLIWithin is runCLI with a limit of its own.
func runCLIWithin(t *testing.T, limit time.Duration, args ...string) (string, int, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, schedulerBin, args...)
	cmd.Env = cleanEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("scheduler %v did not finish in %s", args, limit)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("scheduler %v: %v", args, err)
	}
	return out.String(), code, took
}
