package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// Manual runs queued behind a run that lasts longer than the lease, on a
// replica that then stops (SIGTERM) or dies (kill -9), with the daemon:
// each runs once, on a replica that stays up.
// By default only the replica that dies (kill -9) is played; SOLOCRON_FULL=1
// plays the one that stops (SIGTERM) too.
//
// The doomed replica must die while the queued run still waits behind the
// first: every run holds until the test creates the release file, after the
// signal and once the first run has outlived its lease, so however slow
// the machine, the queued run cannot start on the doomed replica.
func TestQueuedManualRunsOutliveTheirReplica(t *testing.T) {
	t.Parallel()
	tr := &transcript{}
	srv := redistest.Start(t)
	dir := t.TempDir()
	ledger := filepath.Join(dir, "busy.ledger")
	release := filepath.Join(dir, "release")
	const lease = 3 * time.Second
	table := writeTable(t, dir, srv.Addr(), fmt.Sprintf(`
jobs:
  - name: busy
    schedule: "@yearly"
    lease: %s               # shorter than a run: a queued run waits longer than a lease
    kill_grace: 1s
    command: %s
`, lease, ledgerCommand(ledger, "; until [ -e "+release+" ]; do sleep 0.1; done")))
	ranOn := func(id string) []string { return runsOf(t, ledger)[id] }
	defer func() {
		if t.Failed() {
			t.Logf("transcript:\n%s", tr)
		}
	}()

	hows := []string{"kill -9"}
	if testkit.Full() {
		hows = []string{"SIGTERM", "kill -9"}
	}
	for _, how := range hows {
		if err := os.Remove(release); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		doomed := startReplica(t, tr, env(), table, "doomed-"+strings.Fields(how)[0])
		first := trigger(t, tr, env(), table, "busy")
		testkit.WaitFor(t, 30*time.Second, first+" started", func() bool { return len(ranOn(first)) == 1 })
		firstSeen := time.Now()
		queued := trigger(t, tr, env(), table, "busy")
		time.Sleep(2 * time.Second) // the doomed replica claims it and queues it behind the first
		heir := startReplica(t, tr, env(), table, "heir-"+strings.Fields(how)[0])
		if how == "SIGTERM" {
			doomed.signal(syscall.SIGTERM)
		} else {
			doomed.signal(syscall.SIGKILL)
		}
		time.Sleep(time.Until(firstSeen.Add(lease + time.Second))) // the first run outlives its lease
		writeFile(t, release, "")
		testkit.WaitFor(t, 60*time.Second, queued+" run by another replica", func() bool { return len(ranOn(queued)) > 0 })
		time.Sleep(2 * time.Second) // a second start would show by now
		if on := ranOn(queued); len(on) != 1 || on[0] != heir.id {
			t.Errorf("%s: the queued run %s ran on %v, want once on %s", how, queued, on, heir.id)
		}
		if on := ranOn(first); len(on) != 1 {
			t.Errorf("%s: the first run %s ran on %v, want once", how, first, on)
		}
		heir.signal(syscall.SIGTERM)
		heir.wait(60 * time.Second)
		if how == "SIGTERM" {
			doomed.wait(60 * time.Second)
		}
	}
}

// Daemons against a redis-server that loses its data while every replica is
// down, then stalls for longer
// than the lease: no run starts twice, no record has an empty field, and a
// record that says a run started either ran or says it never ran (defect
// 12's invariant; TestLateClaimAnswer in package scheduler reproduces that
// defect deterministically).
func TestDataLossAndStallWithDaemons(t *testing.T) {
	testkit.Long(t) // ~22 s; TestFreshStateAfterLossDoesNotRerun and TestLateClaimAnswer (package scheduler) run by default
	tr := &transcript{}
	srv := redistest.Start(t)
	rdb := srv.Client(t, nil)
	dir := t.TempDir()
	ledger := filepath.Join(dir, "tick.ledger")
	table := writeTable(t, dir, srv.Addr(), fmt.Sprintf(`
jobs:
  - name: tick
    schedule: "*/2 * * * * *"
    lease: 3s
    kill_grace: 1s
    history_limit: 1000
    command: %s
`, ledgerCommand(ledger, "")))
	defer func() {
		if t.Failed() {
			t.Logf("transcript:\n%s", tr)
		}
	}()
	count := func() map[string][]string { return runsOf(t, ledger) }

	// Defect 2: the store loses its data while the only replica is down; a
	// replica started at once, inside the last run's starting deadline,
	// remembers nothing of it.
	a := startReplica(t, tr, env(), table, "a")
	testkit.WaitFor(t, 30*time.Second, "two runs", func() bool { return len(count()) >= 2 })
	a.signal(syscall.SIGTERM)
	a.wait(60 * time.Second)
	if err := rdb.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	before := len(count())
	b := startReplica(t, tr, env(), table, "b")
	testkit.WaitFor(t, 30*time.Second, "runs after the loss", func() bool { return len(count()) >= before+2 })

	// Defect 12: Redis stalls longer than the lease; the claims queued
	// meanwhile are answered late.
	srv.Pause()
	time.Sleep(4 * time.Second)
	srv.Resume()
	time.Sleep(6 * time.Second)
	b.signal(syscall.SIGTERM)
	b.wait(60 * time.Second)

	ran := count()
	for id, on := range ran {
		if len(on) > 1 {
			t.Errorf("%s ran %d times, on %v", id, len(on), on)
		}
	}
	hist, err := rdb.LRange(t.Context(), "solocron:{tick}:history", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hist {
		var rec struct{ ID, Decision, Outcome, Error string }
		if err := json.Unmarshal([]byte(h), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Decision == "" || rec.Outcome == "" {
			t.Errorf("record with an empty field: %s", h)
		}
		if rec.Decision == "started" && len(ran[rec.ID]) == 0 && rec.Outcome != "missed" {
			t.Errorf("%s recorded started, %s (%s), but it never ran", rec.ID, rec.Outcome, rec.Error)
		}
	}
}

// A job's pending manual runs are bounded; the CLI says so clearly when
// they are at their bound.
func TestTriggerQueueFullMessage(t *testing.T) {
	tr := &transcript{}
	srv := redistest.Start(t)
	rdb := srv.Client(t, nil)
	dir := t.TempDir()
	table := writeTable(t, dir, srv.Addr(), `
jobs:
  - name: full
    schedule: "@yearly"
    command: [true]
`)
	for i := range scheduler.MaxPendingManual {
		if err := rdb.ZAdd(t.Context(), "solocron:{full}:manual", redis.Z{Score: float64(i), Member: fmt.Sprintf("full@manual-%d", i)}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	r := runCLI(t, tr, env(), "trigger", "full", "--wait", "0", "--config", table)
	r.want(t, 1, "trigger")
	if !strings.Contains(r.stderr, "100 manual runs of \"full\" are already waiting") || r.stdout != "" {
		t.Errorf("stdout %q, stderr %q: want a clear message that the queue is full", r.stdout, r.stderr)
	}
}
