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
// Those tests are bound by real time, not CPU: each starts its own
// redis-server (or miniredis, or Redis Cluster) and waits for replicas
// polling every 100–200 ms, leases and retry windows running out; one uses
// a tenth of a core at most. go test's default -parallel, GOMAXPROCS (2 on
// a two-core machine), ran them two at a time. The fake-time (synctest)
// tests, which are CPU-bound, are not marked parallel and still run one at
// a time, before them.
const parallelSleepers = 8

func TestMain(m *testing.M) {
	flag.Parse()
	testkit.RaiseParallel(parallelSleepers)
	os.Exit(m.Run())
}
