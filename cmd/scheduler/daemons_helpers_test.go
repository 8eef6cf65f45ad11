package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// What the tests that run a cluster of daemons share: starting the
// replicas, asking for a manual run, reading who ran what, and running an
// in-process replica beside them.

// replica is one daemon ("scheduler run") with its replica id and the
// address of its admin API.
type replica struct {
	*proc
	id, addr string
}

func (r replica) url(path string) string { return "http://" + r.addr + path }

// launchReplica starts one daemon on table with replica id id, its own
// admin port and JSON logs, without waiting for it to be ready.
func launchReplica(t *testing.T, tr *transcript, environ []string, table, id string) replica {
	t.Helper()
	addr := freeAddr(t)
	p := start(t, tr, id, environ, "run", "--config", table, "--replica-id", id, "--admin-listen", addr, "--log-format", "json")
	return replica{p, id, addr}
}

// waitReady waits until r answers /readyz with 200.
func waitReady(t *testing.T, r replica) {
	t.Helper()
	testkit.WaitFor(t, 60*time.Second, r.id+" ready", func() bool { return testkit.HTTPStatus(r.url("/readyz")) == 200 })
}

// startReplicas starts one daemon per id on table, all at once, and waits
// until each is ready. The replicas are in the order of ids.
func startReplicas(t *testing.T, tr *transcript, environ []string, table string, ids ...string) []replica {
	t.Helper()
	reps := make([]replica, 0, len(ids))
	for _, id := range ids {
		reps = append(reps, launchReplica(t, tr, environ, table, id))
	}
	for _, r := range reps {
		waitReady(t, r)
	}
	return reps
}

// startReplica starts one daemon on table and waits until it is ready.
func startReplica(t *testing.T, tr *transcript, environ []string, table, id string) replica {
	t.Helper()
	return startReplicas(t, tr, environ, table, id)[0]
}

// byID indexes replicas by their replica id.
func byID(reps []replica) map[string]replica {
	m := make(map[string]replica, len(reps))
	for _, r := range reps {
		m[r.id] = r
	}
	return m
}

// trigger asks for a manual run of job ("scheduler trigger --wait 0"),
// which must be accepted, and returns its run id.
func trigger(t *testing.T, tr *transcript, environ []string, table, job string) string {
	t.Helper()
	r := runCLI(t, tr, environ, "trigger", job, "--wait", "0", "--config", table)
	r.want(t, 0, "trigger", job)
	return strings.TrimSpace(r.stdout)
}

// runsOf reads the ledger at path (see ledgerCommand): each run id with
// the replicas that started it, in the order they did.
func runsOf(t *testing.T, path string) map[string][]string {
	t.Helper()
	m := map[string][]string{}
	for _, l := range readLedger(t, path) {
		m[l.runID] = append(m[l.runID], l.replica)
	}
	return m
}

// runInProcess runs s until the test ends; it has stopped when the
// test's cleanups registered after this call have run.
func runInProcess(t *testing.T, s *scheduler.Scheduler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// writeTable writes dir/solocron.yaml: a store section naming the
// redis-server at addr (database 0), then rest (the other sections). It
// returns the file's path.
func writeTable(t *testing.T, dir, addr, rest string) string {
	t.Helper()
	path := filepath.Join(dir, "solocron.yaml")
	writeFile(t, path, "store:\n  url: redis://"+addr+"/0\n"+strings.TrimPrefix(rest, "\n"))
	return path
}
