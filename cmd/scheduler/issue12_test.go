package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/testkit"
)

// Manual runs queued behind a run that lasts longer than the lease, on a
// replica that then stops (SIGTERM) or dies (kill -9), with the daemon:
// each runs once, on a replica that stays up (issue 12, defects 1 and 5).
func TestQueuedManualRunsOutliveTheirReplica(t *testing.T) {
	tr := &transcript{}
	srv := redistest.Start(t)
	dir := t.TempDir()
	ledger := filepath.Join(dir, "busy.ledger")
	table := filepath.Join(dir, "solocron.yaml")
	writeFile(t, table, fmt.Sprintf(`
store:
  url: redis://%s/0
jobs:
  - name: busy
    schedule: "@yearly"
    lease: 3s               # shorter than a run: a queued run waits longer than a lease
    kill_grace: 1s
    command: %s
`, srv.Addr(), ledgerCommand(ledger, "; sleep 5")))
	up := func(id string) replica {
		addr := freeAddr(t)
		p := start(t, tr, id, env(), "run", "--config", table, "--replica-id", id, "--admin-listen", addr, "--log-format", "json")
		r := replica{p, id, addr}
		testkit.WaitFor(t, 60*time.Second, id+" ready", func() bool { return testkit.HTTPStatus(r.url("/readyz")) == 200 })
		return r
	}
	trigger := func() string {
		r := runCLI(t, tr, env(), "trigger", "busy", "--wait", "0", "--config", table)
		r.want(t, 0, "trigger")
		return strings.TrimSpace(r.stdout)
	}
	ranOn := func(id string) []string {
		var on []string
		for _, l := range readLedger(t, ledger) {
			if l.runID == id {
				on = append(on, l.replica)
			}
		}
		return on
	}
	defer func() {
		if t.Failed() {
			t.Logf("transcript:\n%s", tr)
		}
	}()

	for _, how := range []string{"SIGTERM", "kill -9"} {
		doomed := up("doomed-" + strings.Fields(how)[0])
		first := trigger()
		testkit.WaitFor(t, 30*time.Second, first+" started", func() bool { return len(ranOn(first)) == 1 })
		queued := trigger()
		time.Sleep(2 * time.Second) // the doomed replica claims it and queues it behind the first
		heir := up("heir-" + strings.Fields(how)[0])
		if how == "SIGTERM" {
			doomed.signal(syscall.SIGTERM)
		} else {
			doomed.signal(syscall.SIGKILL)
		}
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
