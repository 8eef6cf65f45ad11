package scheduler_test

import (
	"flag"
	"os"
	"testing"

	"github.com/solocron/solocron/internal/testkit"
)

// parallelSleepers is how many of the package's t.Parallel tests run at
// once unless -parallel says otherwise.
//
// Nearly every test here is marked parallel. Those bound by real time
// (their own redis-server, miniredis or Redis Cluster; replicas polling
// every 100–200 ms, leases and retry windows running out) use a tenth of a
// core at most; go test's default -parallel, GOMAXPROCS (2 on a two-core
// machine), ran them two at a time. The fake-time (synctest) tests are
// CPU-bound: side by side they fill both cores where one at a time left
// one idle, and the real-time ones run among them. A test stays sequential
// (no t.Parallel, so it runs alone, before the parallel ones) when it
// reads or sets state of the whole process: testing.AllocsPerRun, the
// held-batch minimum (SetHeldBatchMin), the interval gauge's walk counter,
// otel's global propagator.
const parallelSleepers = 8

func TestMain(m *testing.M) {
	flag.Parse()
	testkit.RaiseParallel(parallelSleepers)
	os.Exit(m.Run())
}
