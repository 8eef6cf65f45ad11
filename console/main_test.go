package console_test

import (
	"flag"
	"os"
	"testing"

	"github.com/solocron/solocron/internal/testkit"
)

// parallelPages is how many of the package's t.Parallel tests run at once
// unless -parallel says otherwise. Each serves a console over a miniredis
// of its own (replicas polling every 100 ms, runs taking real time): they
// wait more than they compute, and share nothing but the process. The
// browser tests are not parallel: each drives a headless Chromium, heavy
// on two cores, and side by side they missed their waits on a loaded
// machine; they run one at a time, before the others.
const parallelPages = 4

func TestMain(m *testing.M) {
	flag.Parse()
	testkit.RaiseParallel(parallelPages)
	os.Exit(m.Run())
}
