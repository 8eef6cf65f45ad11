package store

import (
	"encoding"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// claimBatchAllocs bounds the allocations of one claim batch's calls, made
// as claimOnly makes them: a handful per batch, none per run. Boxing each
// run's arguments for go-redis made it 4 a run (some 260 for 64 runs).
const claimBatchAllocs = 16

// A claim batch's arguments cost a few allocations per batch, whatever its
// size; each replica sends every run's claim, so one allocation per run is
// ten thousand a second at 10,000 jobs.
func TestClaimBatchAllocations(t *testing.T) {
	s := &Redis{Prefix: "p"}
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	reqs := make([]StoreClaim, MaxBatch)
	for i := range reqs {
		name := fmt.Sprintf("bench-%04d", i)
		j := &JobSpec{Name: name, MetaKey: s.MetaKey(name), Lease: 30 * time.Second, Concurrency: 1,
			StartingDeadline: 10 * time.Second, HistoryLimit: 20}
		suffix := strconv.FormatInt(at.UnixMilli(), 10)
		reqs[i] = StoreClaim{Job: j, ID: name + "@" + suffix, Suffix: suffix, Kind: RunScheduled, Sched: at, Fire: at,
			Owner: NewEpoch() + NewEpoch() + "-" + strconv.Itoa(i), Overlap: OverlapSkip, Retention: time.Hour}
	}
	encode := func() []call {
		calls, _ := s.claimCalls(ClaimHeadArgs("replica-1", 2*time.Second, 3*time.Second, 0, true, false), reqs)
		return calls
	}
	if n := testing.AllocsPerRun(50, func() { _ = encode() }); n > claimBatchAllocs {
		t.Errorf("a claim batch of %d runs allocates %.0f times for its calls, want at most %d", MaxBatch, n, claimBatchAllocs)
	} else {
		t.Logf("a claim batch of %d runs allocates %.0f times for its calls", MaxBatch, n)
	}
	if ab := encode()[0].keyArgs[0].(*ArgRef).buf; len(ab.b) > cap(ab.b) || len(ab.b) > claimArgBytes*len(reqs) {
		t.Errorf("a claim batch's buffer grew: %d bytes for %d runs", len(ab.b), len(reqs))
	} else {
		t.Logf("%d bytes a run", len(ab.b)/len(reqs))
	}

	// go-redis writes each argument's MarshalBinary (encoding.BinaryMarshaler,
	// the first case of its writer an *ArgRef meets): the strings of before.
	c := encode()[0]
	args := c.Args[ClaimHead:]
	for i := range reqs {
		if k := fmt.Sprint(c.keyArgs[i]); k != reqs[i].Job.MetaKey || c.keys[i] != k {
			t.Fatalf("run %d key %q (%q), want %q", i, k, c.keys[i], reqs[i].Job.MetaKey)
		}
		want := []string{reqs[i].Suffix, reqs[i].Owner, string(reqs[i].AppendTerms(nil))}
		for k, w := range want {
			m, ok := args[claimFields*i+k].(encoding.BinaryMarshaler)
			if !ok {
				t.Fatalf("run %d argument %d is a %T", i, k, args[claimFields*i+k])
			}
			if b, _ := m.MarshalBinary(); string(b) != w || fmt.Sprint(m) != w {
				t.Fatalf("run %d argument %d: %q (printed %q), want %q", i, k, b, fmt.Sprint(m), w)
			}
		}
	}
}
