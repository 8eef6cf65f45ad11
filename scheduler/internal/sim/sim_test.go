package sim

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSimulation is the seeded fault search (docs/reliability.md): for each
// seed, 3 to 6 replicas — real Schedulers, in one process, on fake time —
// run a job table against one store while the seed's plan injects faults
// (plan.go, store.go); then the invariants are checked on
// everything that happened (check.go). A failing seed prints its
// violations, the trace of the runs concerned, its plan and the command that
// replays it.
//
//	SOLOCRON_SIM_SEED=N    run seed N only (and print its plan)
//	SOLOCRON_SIM_SEEDS=K   run K seeds (default 1; 2 with SOLOCRON_FULL=1, as CI
//	                       sets; 0 skips)
//	SOLOCRON_SIM_FIRST=F   starting at seed F (default 1)
//	SOLOCRON_SIM_TRACE=1   also print every fault injected on a call
//	SOLOCRON_SIM_RUN=s     also print the trace of every run whose id contains s
//	SOLOCRON_SIM_LOG=path  append the replicas' logs (debug) to path
//	SOLOCRON_SIM_KNOWN=0   fail on known defects too (see simKnownDefects)
func TestSimulation(t *testing.T) {
	seeds, err := simSeeds(testing.Short())
	if err != nil {
		t.Fatal(err)
	}
	if len(seeds) == 0 {
		t.Skip("SOLOCRON_SIM_SEEDS=0")
	}
	single := os.Getenv("SOLOCRON_SIM_SEED") != ""
	if d, err := time.ParseDuration(os.Getenv("SOLOCRON_SIM_WATCHDOG")); err == nil && d > 0 {
		simWatchdog = d
	}
	var failed []string
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			plan := newSimPlan(seed)
			if single {
				t.Logf("plan of %s", plan)
			}
			violations, report, _ := simPlay(t, plan, single)
			if len(violations) == 0 {
				if single {
					t.Log(report)
				}
				return
			}
			if keys := simKnownFor(plan); len(keys) > 0 && !single && os.Getenv("SOLOCRON_SIM_KNOWN") != "0" {
				if names, ok := simKnownOnly(violations, keys); ok {
					t.Skipf("known scheduler defect(s) %s: %d violation(s); replay: SOLOCRON_SIM_SEED=%d SOLOCRON_SIM_TRACE=1 go test -run TestSimulation ./scheduler/internal/sim/",
						strings.Join(names, ", "), len(violations), seed)
				}
			}
			failed = append(failed, strconv.FormatUint(seed, 10))
			t.Errorf("%s", report)
		})
	}
	if len(failed) > 0 {
		t.Logf("failing seeds: %s", strings.Join(failed, " "))
	}
}
