package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/storeconn"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// Cancel and retry of one run across three daemons on a real redis-server:
// a run held by daemon B is cancelled through daemon A's admin API (the
// cancel command with --admin A): B hears it at its next renewal, the job
// sees SIGTERM, the record ends cancelled once, on B, saying who asked, and
// the run never starts again. Its retry through daemon C is a manual run
// linked to it that runs once. The commands' errors (a run in the wrong
// state, no such run, not a run id) have their messages and exit codes.
func TestCancelRetryAcrossDaemons(t *testing.T) {
	tr := &transcript{}
	token := "tok" + randomHex(t)
	srv := redistest.Start(t)
	dir := t.TempDir()
	ledger := filepath.Join(dir, "slow.ledger")
	block := filepath.Join(dir, "block")
	writeFile(t, block, "")
	table := filepath.Join(dir, "solocron.yaml")
	// The job logs its start and, trapping SIGTERM, that it was told to
	// stop; it blocks only while the file block exists.
	writeFile(t, table, fmt.Sprintf(`
store:
  url: redis://%s/0
  key_prefix: ra
admin:
  token: ${TEST_ADMIN_TOKEN}
jobs:
  - name: slow            # runs only when asked
    schedule: "@yearly"
    lease: 6s             # renewed every 1.5s: a cancel is heard within that
    kill_grace: 1s
    command:
      - sh
      - -c
      - |
        echo "start $SOLOCRON_RUN_ID $SOLOCRON_REPLICA_ID" >> %[2]s
        trap 'echo "term $SOLOCRON_RUN_ID" >> %[2]s; exit 143' TERM
        if [ -e %[3]s ]; then sleep 120 & wait; fi
`, srv.Addr(), ledger, block))
	cenv := env("TEST_ADMIN_TOKEN=" + token)
	cli := func(t *testing.T, code int, args ...string) result {
		t.Helper()
		r := runCLI(t, tr, cenv, append(args, "--config", table)...)
		r.want(t, code, args...)
		return r
	}
	reps := byID(startReplicas(t, tr, cenv, table, "r1", "r2", "r3"))
	t.Setenv("TEST_ADMIN_TOKEN", token) // for the test's own reading of the table
	f, err := config.Load(table)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := storeconn.Open(f.Store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctl, err := conn.NewControl()
	if err != nil {
		t.Fatal(err)
	}
	get := func(id string) *scheduler.Run {
		t.Helper()
		r, err := ctl.Get(t.Context(), id)
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		return r
	}
	// lines are the ledger's lines about run id: "start <replica>", "term".
	lines := func(id string) []string {
		b, err := os.ReadFile(ledger)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) >= 2 && f[1] == id {
				out = append(out, strings.Join(append([]string{f[0]}, f[2:]...), " "))
			}
		}
		return out
	}

	id := trigger(t, tr, cenv, table, "slow")
	var run *scheduler.Run
	testkit.WaitFor(t, 30*time.Second, "the run to start", func() bool {
		run = get(id)
		return run != nil && run.Outcome == scheduler.Running && len(lines(id)) == 1
	})
	// B holds it; A and C are the other two.
	b := reps[run.Replica]
	var others []replica
	for _, r := range []string{"r1", "r2", "r3"} {
		if r != b.id {
			others = append(others, reps[r])
		}
	}
	a, c := others[0], others[1]
	if got := lines(id); got[0] != "start "+b.id {
		t.Fatalf("ledger for %s: %q, want it started on %s", id, got, b.id)
	}

	// A running run cannot be retried; a run id must name a job and a run.
	if r := cli(t, 1, "retry", id, "--admin", "http://"+c.addr); !strings.Contains(r.stderr, "has not ended") {
		t.Errorf("retry of a running run:\n%s", r.stderr)
	}
	if r := cli(t, 1, "cancel", "slow@manual-nosuch"); !strings.Contains(r.stderr, "no run slow@manual-nosuch in the store") {
		t.Errorf("cancel of no run:\n%s", r.stderr)
	}
	if r := cli(t, 1, "cancel", "slow@manual-nosuch", "--admin", "http://"+a.addr); !strings.Contains(r.stderr, "no run slow@manual-nosuch in the store") {
		t.Errorf("cancel of no run through the API:\n%s", r.stderr)
	}
	cli(t, 2, "cancel", "slow")
	if r := cli(t, 2, "cancel", "nojob@manual-1"); !strings.Contains(r.stderr, `no job "nojob"`) {
		t.Errorf("cancel of another job's run:\n%s", r.stderr)
	}

	// Cancel through A: the command waits for the end and reports it.
	r := cli(t, 0, "cancel", id, "--admin", "http://"+a.addr, "--wait", "30s")
	want := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + `: cancel recorded; .*\n` +
		regexp.QuoteMeta(id) + `: cancelled on ` + b.id + ` in \S+ \(fencing token \d+, 1 attempt\): cancelled by an operator.*\(cancel asked by cli \S+ via api from 127\.0\.0\.1\)$`)
	if !want.MatchString(r.stdout) {
		t.Errorf("cancel output:\n%s", r.stdout)
	}
	run = get(id)
	if run.Outcome != scheduler.Cancelled || run.Replica != b.id || !strings.HasPrefix(run.CancelledBy, "cli ") ||
		!strings.HasSuffix(run.CancelledBy, " via api from 127.0.0.1") {
		t.Errorf("record after cancel: outcome %s on %s, cancelled by %q", run.Outcome, run.Replica, run.CancelledBy)
	}
	// The job itself heard it (SIGTERM through its context), on B.
	if got := lines(id); len(got) != 2 || got[1] != "term" {
		t.Errorf("ledger for %s: %q, want start then term", id, got)
	}
	if r := cli(t, 1, "cancel", id); !strings.Contains(r.stderr, "is cancelled; only a running run can be cancelled") {
		t.Errorf("cancel of an ended run:\n%s", r.stderr)
	}

	// Retry through C, now that the job no longer blocks: a manual run
	// linked to the cancelled one, which runs once.
	if err := os.Remove(block); err != nil {
		t.Fatal(err)
	}
	r = cli(t, 0, "retry", id, "--admin", "http://"+c.addr, "--wait", "30s")
	out := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(out) != 2 || !strings.HasPrefix(out[0], "slow@manual-") || out[0] == id ||
		!regexp.MustCompile(`^`+regexp.QuoteMeta(out[0])+`: succeeded on r\d in `).MatchString(out[1]) {
		t.Fatalf("retry output:\n%s", r.stdout)
	}
	again := get(out[0])
	if again.Kind != scheduler.KindManual || again.RetryOf != id || !strings.Contains(again.RetriedBy, " via api from 127.0.0.1") {
		t.Errorf("the retry's record: kind %s, retry of %q, by %q", again.Kind, again.RetryOf, again.RetriedBy)
	}
	if old := get(id); old.RetriedAs != again.ID || old.Outcome != scheduler.Cancelled {
		t.Errorf("the cancelled run's record after its retry: %s, retried as %q", old.Outcome, old.RetriedAs)
	}

	// Once each, and the cancelled run never again: after the retry's
	// claims and its close, the ledger and the history still say so.
	if got := lines(id); len(got) != 2 {
		t.Errorf("ledger for the cancelled run: %q", got)
	}
	if got := lines(again.ID); len(got) != 1 {
		t.Errorf("ledger for the retry: %q, want one start", got)
	}
	hist, err := ctl.History(context.WithoutCancel(t.Context()), "slow", 10)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, h := range hist {
		n[h.ID]++
	}
	if len(hist) != 2 || n[id] != 1 || n[again.ID] != 1 {
		t.Errorf("history: %v, want the cancelled run and its retry once each", hist)
	}
}
