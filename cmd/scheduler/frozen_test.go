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

// A daemon running a job is frozen (SIGSTOP) for longer than the job's
// lease, then resumed (SIGCONT). Meanwhile another replica takes the job's
// next run, and no run starts twice. Once resumed, the frozen replica says
// it was frozen past its lease, not that Redis lost its run's record.
func TestFrozenReplicaSaysItWasFrozen(t *testing.T) {
	t.Parallel()
	tr := &transcript{}
	srv := redistest.Start(t)
	dir := t.TempDir()
	ledger := filepath.Join(dir, "slow.ledger")
	table := writeTable(t, dir, srv.Addr(), fmt.Sprintf(`
jobs:
  - name: slow
    schedule: "*/2 * * * * *"
    lease: 2s                # the freeze below lasts longer
    kill_grace: 500ms
    history_limit: 1000
    command: %s
`, ledgerCommand(ledger, "; sleep 30")))
	defer func() {
		if t.Failed() {
			t.Logf("transcript:\n%s", tr)
		}
	}()
	reps := byID(startReplicas(t, tr, env(), table, "a", "b"))

	var first ledgerLine
	testkit.WaitFor(t, 30*time.Second, "a first run", func() bool {
		l := readLedger(t, ledger)
		if len(l) > 0 {
			first = l[0]
		}
		return len(l) > 0
	})
	frozen := reps[first.replica]
	other := reps["a"]
	if frozen.id == "a" {
		other = reps["b"]
	}
	frozen.signal(syscall.SIGSTOP)
	stopped := time.Now()
	var next ledgerLine
	testkit.WaitFor(t, 20*time.Second, other.id+" takes a run while "+frozen.id+" is frozen", func() bool {
		for _, l := range readLedger(t, ledger) {
			if l.replica == other.id {
				next = l
				return true
			}
		}
		return false
	})
	// Frozen for at least twice the lease in all, so that its deadline is
	// well behind it when it runs again.
	time.Sleep(time.Until(stopped.Add(4 * time.Second)))
	frozen.signal(syscall.SIGCONT)

	said := frozen.waitLog(20*time.Second, "frozen past its lease", 1)
	if got, _ := said[0]["run_id"].(string); got != first.runID {
		t.Errorf("%s said it was frozen for run %q, want %q: %v", frozen.id, got, first.runID, said[0])
	}
	for _, rec := range frozen.records() {
		msg, _ := rec["msg"].(string)
		if strings.Contains(msg, "Redis lost") {
			t.Errorf("%s blames Redis after a freeze: %v", frozen.id, rec)
		}
	}
	lost := frozen.findLogs("lease lost: cancelling the job")
	if len(lost) == 0 {
		t.Errorf("%s did not cancel its job once resumed", frozen.id)
	} else if cause, _ := lost[0]["cause"].(string); !strings.Contains(cause, "frozen") {
		t.Errorf("%s cancelled its job with cause %q, want one that says it was frozen", frozen.id, cause)
	}

	if next.token <= first.token {
		t.Errorf("%s's run has token %d, not above the frozen run's %d", other.id, next.token, first.token)
	}
	seen := map[string]string{}
	for _, l := range readLedger(t, ledger) {
		if on, dup := seen[l.runID]; dup {
			t.Errorf("%s started twice, on %s and %s", l.runID, on, l.replica)
		}
		seen[l.runID] = l.replica
	}
}
