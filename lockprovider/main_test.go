package lockprovider_test

import (
	"flag"
	"os"
	"testing"

	"github.com/solocron/solocron/internal/testkit"
)

// parallelBackends is how many of the package's t.Parallel tests run at
// once unless -parallel says otherwise. The conformance backends and the
// Redlock cases each have servers of their own and spend most of their time
// waiting (keep-alives renewing past a TTL, a master down for a while): two
// at a time, go test's default on two cores, left the cores half idle and
// the miniredis backend waiting behind the real servers.
const parallelBackends = 4

func TestMain(m *testing.M) {
	flag.Parse()
	testkit.RaiseParallel(parallelBackends)
	os.Exit(m.Run())
}
