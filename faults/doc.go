// Package faults is Solocron's fault-injection suite: it proves the
// guarantee — at most one start per run, every run decided once, fencing
// tokens that make a stale holder harmless — on a bad day, with figures.
//
// The tests sit behind the build tag faults, so that the ordinary
// go test ./... stays fast:
//
//	go test -tags faults -count=1 ./faults/...
//	go test -tags faults -count=1 -v -run 'Scenario03' ./faults/...   # one scenario, with its log
//
// They need redis-server on the PATH (Debian: apt-get install redis-server),
// use loopback and free ports only, and never touch port 6379. TestMain
// builds the scheduler daemon (cmd/scheduler) and the job it runs
// (faults/internal/faultjob) once; each scenario then starts its own
// redis-server and real scheduler processes (or, for clock faults,
// in-process replicas with injected clocks), with a TCP fault proxy between
// replicas and Redis when the scenario needs one (pass, black hole that keeps
// sockets open, reset, latency, hold the reply to the next claim, renewal or
// release).
//
// Every run reports to an in-test ledger over a connection it keeps open, so
// the ledger knows when each job process really starts and ends, whichever
// way it ends (a job may also ignore SIGTERM and leave a child in its
// process group that reports on a connection of its own, so the ledger
// knows when the whole group is gone); each run also writes to an in-test sink that refuses a write
// whose fencing token is below the highest it accepted (for a concurrency
// limit N: below the highest its slot, SOLOCRON_SLOT, accepted). A watcher reads the job's
// concurrency slots straight from Redis every 10ms: the ground truth of who
// held a lease when, against which stale writes are judged.
//
// Besides faults of the network, of Redis and of the clocks, scenarios
// stop replicas (SIGTERM, SIGKILL, SIGSTOP) and start them again with the
// same id, ask for manual runs (through the scheduler trigger command or
// the Control API) while the job is busy, check that a bad table is
// refused with the file, line, column and field, and roll a new table
// through three replicas (restarts and a SIGHUP) while a test HTTP server
// receives their notifications (scenario 17).
//
// At the end the suite prints one row per scenario: runs, duplicate starts,
// missed runs, stale writes the sink accepted, recovery time, and what each
// scenario measured. With FAULTS_TABLE=path it also writes the table there as
// Markdown. docs/reliability.md explains each scenario and holds the figures
// of a reference run.
package faults
