package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// scheduler status with a pooled job busy: the table ends with one line per
// pool saying how many of its slots are in use and by which run; one job's
// status says the same on its pool: line; a job in no pool has none.
func TestStatusShowsPoolUse(t *testing.T) {
	srv := redistest.Start(t)
	release := make(chan struct{})
	started := make(chan string, 1)
	busy := jobs.Func(func(ctx context.Context) error {
		select {
		case started <- jobs.RunID(ctx):
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	idle := jobs.Func(func(context.Context) error { return nil })
	table := []scheduler.Job{
		{Name: "export-a", Schedule: "@every 1s", Pool: "exports", PoolSize: 2, Handler: busy},
		{Name: "export-b", Schedule: "@yearly", Pool: "exports", PoolSize: 2, Handler: idle},
		{Name: "plain", Schedule: "@yearly", Handler: idle},
	}
	s, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil), scheduler.WithKeyPrefix("poolcli")), table,
		scheduler.WithSyncInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	runInProcess(t, s)
	t.Cleanup(func() { close(release) }) // first: the run ends, then the replica stops

	path := filepath.Join(t.TempDir(), "solocron.yaml")
	writeFile(t, path, fmt.Sprintf(`
store:
  url: redis://%s/0
  key_prefix: poolcli
pools: {exports: 2}
jobs:
  - {name: export-a, schedule: "@every 1s", pool: exports, command: ["true"]}
  - {name: export-b, schedule: "@yearly", pool: exports, command: ["true"]}
  - {name: plain, schedule: "@yearly", command: ["true"]}
`, srv.Addr()))
	status := func(args ...string) string {
		t.Helper()
		var out, errb syncBuffer
		if code := Main(append(append([]string{"status"}, args...), "--config", path), &out, &errb); code != exitOK {
			t.Fatalf("scheduler status %v exited %d\nstdout:\n%s\nstderr:\n%s", args, code, out.String(), errb.String())
		}
		return out.String()
	}

	var run string
	select {
	case run = <-started:
	case <-time.After(60 * time.Second):
		t.Fatal("export-a never started")
	}
	// The run holds its pool slot from its claim on; status reads it from
	// the store as soon as the claim is written.
	want := "pool exports: 1 of 2 slots in use, by " + run
	var out string
	testkit.WaitFor(t, 30*time.Second, "status showing the pool slot", func() bool {
		out = status()
		return strings.Contains(out, want)
	})
	if n := strings.Count(out, "pool exports"); n != 1 {
		t.Errorf("%d lines for pool exports, want 1 for the two jobs sharing it:\n%s", n, out)
	}
	if !regexp.MustCompile(`(?m)^pool exports: 1 of 2 slots in use, by ` + regexp.QuoteMeta(run) + `$`).MatchString(out) {
		t.Errorf("status table:\n%s\nwant a line %q", out, want)
	}

	for _, job := range []string{"export-a", "export-b"} { // the pool's use, whichever job holds it
		out = status(job)
		if !regexp.MustCompile(`(?m)^pool: +exports: 1 of 2 slots in use, by ` + regexp.QuoteMeta(run) + `$`).MatchString(out) {
			t.Errorf("status %s:\n%s\nwant a line: pool: exports: 1 of 2 slots in use, by %s", job, out, run)
		}
	}
	if out = status("plain"); strings.Contains(out, "pool") {
		t.Errorf("status plain, a job in no pool:\n%s", out)
	}
}
