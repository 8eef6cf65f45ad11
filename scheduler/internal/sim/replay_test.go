package sim

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/solocron/solocron/internal/testkit"
)

// A seed replays exactly (docs/reliability.md, "Replay"): the same seed
// gives the same trace — every store call in the order the store ran it,
// with its answer, every attempt the jobs started and every record — and
// so the same verdict. TestSimulationReplays plays a few seeds several times
// each and compares their traces line by line.
//
//	SOLOCRON_SIM_REPLAYS=N          plays per seed (default 2 with SOLOCRON_FULL=1, as CI
//	                                sets; else 0, and with -short: skipped)
//	SOLOCRON_SIM_REPLAY_SEEDS=a,b   the seeds (default 3)
//
// .ci/run plays three seeds ten times each, without -race.
func TestSimulationReplays(t *testing.T) {
	n := 0
	if testkit.Full() && !testing.Short() {
		n = 2
	}
	if v := os.Getenv("SOLOCRON_SIM_REPLAYS"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 0 {
			t.Fatalf("SOLOCRON_SIM_REPLAYS=%q: not a non-negative integer", v)
		}
		n = k
	}
	seeds := []uint64{3}
	if v := os.Getenv("SOLOCRON_SIM_REPLAY_SEEDS"); v != "" {
		seeds = nil
		for _, f := range strings.Split(v, ",") {
			s, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("SOLOCRON_SIM_REPLAY_SEEDS=%q: %v", v, err)
			}
			seeds = append(seeds, s)
		}
	}
	if n < 2 || len(seeds) == 0 {
		t.Skip("nothing to compare (SOLOCRON_FULL=1, as CI sets, plays seed 3 twice)")
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			var first []string
			var verdict0 int
			for i := range n {
				vs, _, trace := simPlay(t, newSimPlan(seed), false)
				if i == 0 {
					first, verdict0 = trace, len(vs)
					continue
				}
				if d := simTraceDiff(first, trace); d != "" || len(vs) != verdict0 {
					t.Fatalf("seed %d, replay %d of %d: %d violation(s), first play %d; traces of %d and %d lines differ:\n%s\nreplay: SOLOCRON_SIM_SEED=%d go test -run TestSimulation ./scheduler/internal/sim/",
						seed, i+1, n, len(vs), verdict0, len(first), len(trace), d, seed)
				}
			}
		})
	}
}
