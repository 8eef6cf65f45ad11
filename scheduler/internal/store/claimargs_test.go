package store

import (
	"encoding"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
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

// A claim call builds its EVALSHA itself: after SCRIPT FLUSH it still runs,
// alone (EVAL, as Script.Run) or in a pipeline (loaded, sent again), and
// the store sees each run's key and arguments as before.
func TestClaimAfterScriptFlush(t *testing.T) {
	c := redistest.Start(t).Client(t, nil)
	s, err := NewRedis(c, BackendConfig{Prefix: "flush", Pools: &PoolPlace{}, Skew: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	at := time.Now().Add(-time.Second).Truncate(time.Second)
	claimOf := func(name string) StoreClaim {
		j := &JobSpec{Name: name, MetaKey: s.MetaKey(name), Lease: 10 * time.Second, Concurrency: 1,
			StartingDeadline: 10 * time.Second, HistoryLimit: 20}
		id := name + "@" + at.UTC().Format(time.RFC3339)
		return StoreClaim{Job: j, ID: id, Suffix: id[len(name)+1:], Kind: RunScheduled, Sched: at, Fire: at,
			Owner: "owner-" + name, Overlap: OverlapSkip, Retention: time.Hour}
	}
	for _, n := range []int{1, 2} {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		var reqs []StoreClaim
		for i := range n {
			reqs = append(reqs, claimOf(fmt.Sprintf("job-%d-%d", n, i)))
		}
		res, err := s.Claim(ctx, "r1", 100*time.Millisecond, 3*time.Second, reqs)
		if err != nil || len(res) != n {
			t.Fatalf("%d claims after SCRIPT FLUSH: %v, %v", n, res, err)
		}
		for i, r := range res {
			// Due before the job's state existed: refused, which claim.lua
			// says only once it has read the run's key and terms.
			if r.Status != AnswerRefused || r.Reason != ReasonBeforeState {
				t.Errorf("claim %d of %d after SCRIPT FLUSH: %+v, want refused (%s)", i, n, r, ReasonBeforeState)
			}
		}
		if ok, _ := c.Exists(ctx, s.MetaKey(reqs[0].Job.Name)).Result(); ok != 1 {
			t.Errorf("claim %d of %d: no job state at its key %s", 0, n, s.MetaKey(reqs[0].Job.Name))
		}
	}
}
