package storeconn_test

import (
	"flag"
	"os"
	"testing"

	"github.com/solocron/solocron/internal/testkit"
)

// parallelServers is how many of the package's t.Parallel tests run at once
// unless -parallel says otherwise. Each starts its own TLS redis-server,
// Sentinel or Cluster and waits on it more than it computes: two at a time,
// go test's default on two cores, took 23 s; four, 19 s.
const parallelServers = 4

func TestMain(m *testing.M) {
	flag.Parse()
	testkit.RaiseParallel(parallelServers)
	os.Exit(m.Run())
}
