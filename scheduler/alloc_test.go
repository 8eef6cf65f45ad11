package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// The claim path allocates little per run: every replica claims every run,
// so at ten thousand jobs a second each allocation is ten thousand — and
// garbage collection was a third of a replica's CPU. These bounds hold the
// gains; raise one only with a reason.
func TestClaimPathAllocations(t *testing.T) {
	spec := Job{Name: "bench-0001", Schedule: "* * * * * *", Handler: jobs.Func(func(context.Context) error { return nil })}.withDefaults()
	j, err := newJobState(spec, "solocron:{bench-0001}:meta", &memo{}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	o := owners{prefix: store.NewEpoch() + store.NewEpoch()}
	r := newClaimReq(j, store.StoreClaim{ID: runID(j.Name, at), Kind: 's', Sched: at, Fire: at, Owner: o.next(), Overlap: j.Overlap})
	r.Suffix = r.ID[len(j.Name)+1:]
	buf := make([]byte, 0, 256)
	jobAttrs(j, "result", claimTaken)
	for _, c := range []struct {
		name string
		max  float64
		f    func()
	}{
		{"run id", 1, func() { _ = runID(j.Name, at) }},
		{"owner token", 1, func() { _ = o.next() }},
		{"fire without jitter", 0, func() { _ = j.fire(at) }},
		{"claim terms", 0, func() { buf = r.AppendTerms(buf[:0]) }},
		{"metric attributes", 0, func() { _ = jobAttrs(j, "result", claimTaken) }},
	} {
		if n := testing.AllocsPerRun(100, c.f); n > c.max {
			t.Errorf("%s: %.0f allocations, want at most %.0f", c.name, n, c.max)
		}
	}
}

// A lost claim — two of every three a replica makes — allocates a bounded
// amount on the client, all of it included: arguments, the pipeline, the
// reply and its parsing, handling the answer.
func TestLostClaimAllocations(t *testing.T) {
	s, _ := benchStore(t)
	js := benchJobs(t, s, 64)
	ctx := context.Background()
	var allocs float64
	n := 0
	for range 5 {
		at := nextInstant()
		if _, err := s.Claim(ctx, "other", 2*time.Second, 3*time.Second, storeClaims(benchClaims(js, at)...)); err != nil {
			t.Fatal(err)
		}
		reqs := benchClaims(js, at)
		allocs += testing.AllocsPerRun(1, func() {
			res, err := s.Claim(ctx, "me", 2*time.Second, 3*time.Second, storeClaims(reqs...))
			if err != nil || res[0].Status != "decided" {
				t.Fatalf("claim: %v %v", res, err)
			}
		})
		n++
	}
	if per := allocs / float64(n) / 64; per > 10 {
		t.Errorf("a lost claim allocates %.1f times per run on the client, want at most 10", per)
	} else {
		t.Logf("a lost claim allocates %.1f times per run on the client", per)
	}
}
