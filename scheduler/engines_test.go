package scheduler_test

// Real engines: Redis Cluster, Sentinel failover, replica acknowledgement
// and Redlock, on redis-server processes the tests start (internal/redistest).
// They run in real time, in parallel with each other, each bounded to a few
// seconds of scheduling.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/lockprovider"
	"github.com/solocron/solocron/scheduler"
)

// opts are every replica's options: a name, quiet logs, a short shutdown.
func replicaOpts(i int, more ...scheduler.Option) []scheduler.Option {
	return append([]scheduler.Option{scheduler.WithReplicaID(fmt.Sprintf("r%d", i)), scheduler.WithLogger(quiet),
		scheduler.WithMaxClockSkew(300 * time.Millisecond), scheduler.WithShutdownGrace(2 * time.Second)}, more...)
}

// instants lists the whole seconds in [from, to].
func instants(from, to time.Time) []time.Time {
	var out []time.Time
	for at := from.Truncate(time.Second); !at.After(to); at = at.Add(time.Second) {
		if !at.Before(from) {
			out = append(out, at)
		}
	}
	return out
}

// startedOnce checks that each of job's runs at the given instants started
// exactly once.
func startedOnce(t *testing.T, l *testkit.Ledger, job string, at []time.Time) {
	t.Helper()
	starts := l.Starts()
	for _, a := range at {
		if n := starts[id(job, a)]; n != 1 {
			t.Errorf("%s started %d times, want once", id(job, a), n)
		}
	}
}

// startedNever checks that none of job's runs at the given instants started.
func startedNever(t *testing.T, l *testkit.Ledger, job string, at []time.Time) {
	t.Helper()
	starts := l.Starts()
	for _, a := range at {
		if n := starts[id(job, a)]; n != 0 {
			t.Errorf("%s started %d times, want never", id(job, a), n)
		}
	}
}

func noDuplicates(t *testing.T, l *testkit.Ledger, jobs ...string) {
	t.Helper()
	if d := l.Duplicates(); len(d) > 0 {
		t.Errorf("runs started more than once: %v", d)
	}
	for _, j := range jobs {
		if n := l.MaxInFlight(j); n > 1 {
			t.Errorf("%d runs of %s (concurrency 1) in flight at once", n, j)
		}
	}
}

// blockJob runs until cancelled, at most limit.
func blockJob(limit time.Duration) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		select {
		case <-time.After(limit):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Many jobs, with odd names, on a 3-master Redis Cluster: their keys spread
// over every master, each job's keys share one slot, and every run starts
// exactly once across three replicas — also after one master's script
// cache is flushed (NOSCRIPT, recovered per node).
func TestClusterRunsEachRunOnce(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3, nil)
	f := newFleet(t)
	var table []scheduler.Job
	var names []string
	for i := range 24 {
		name := []string{"job-%d", ".%d", "_%d.x", "%d", "A-%d-", "x.%d.y"}[i%6]
		name = fmt.Sprintf(name, i)
		names = append(names, name)
		table = append(table, scheduler.Job{Name: name, Schedule: "* * * * * *", Handler: f.ledger.Job(nil)})
	}
	ctx := t.Context()
	probe := cl.Client(t, nil)
	masters := map[string]int{}
	for _, n := range names {
		meta := "solocron:{" + n + "}:meta"
		m, err := probe.MasterForKey(ctx, meta)
		if err != nil {
			t.Fatal(err)
		}
		masters[m.Options().Addr]++
		slot := probe.ClusterKeySlot(ctx, meta).Val()
		for _, k := range []string{"history", "slots", "queue", "waiting", "manual", "run:2026-11-22T04:00:00Z", "run:manual-x"} {
			if s := probe.ClusterKeySlot(ctx, "solocron:{"+n+"}:"+k).Val(); s != slot {
				t.Errorf("job %q: key %s in slot %d, meta in %d", n, k, s, slot)
			}
		}
	}
	if len(masters) != 3 {
		t.Fatalf("the jobs' keys live on %d masters (%v), want all 3", len(masters), masters)
	}

	start := time.Now()
	for i := range 3 {
		s, err := scheduler.New(schedtest.RedisStore(t, cl.Client(t, nil)), table, replicaOpts(i)...)
		if err != nil {
			t.Fatal(err)
		}
		f.run(s)
	}
	time.Sleep(2500 * time.Millisecond)
	if err := cl.Masters[1].Client(t, nil).ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	f.stop()
	end := time.Now()

	noDuplicates(t, f.ledger, names...)
	for _, n := range names {
		startedOnce(t, f.ledger, n, instants(start.Add(time.Second), end.Add(-time.Second)))
	}
	ctl := schedtest.RedisStore(t, probe).Control()
	h, err := ctl.History(ctx, names[5], 100)
	if err != nil || len(h) < 3 {
		t.Fatalf("history of %s: %d records, %v", names[5], len(h), err)
	}
	// Every key lives on the master of its job's slot.
	for _, m := range cl.Masters {
		c := m.Client(t, nil)
		keys, err := c.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			i, j := strings.IndexByte(k, '{'), strings.IndexByte(k, '}')
			if i < 0 || j < i {
				t.Errorf("key %q has no hash tag", k)
				continue
			}
			owner, err := probe.MasterForKey(ctx, "solocron:{"+k[i+1:j]+"}:meta")
			if err != nil || owner.Options().Addr != m.Addr() {
				t.Errorf("key %q is on %s, its job's meta on %v (%v)", k, m.Addr(), owner, err)
			}
		}
	}
}

// A graceful Sentinel failover in the middle of a run: every run starts at
// most once, never two at a time; the long run keeps its lease (its
// renewals succeed on the new primary) or loses it cleanly (cancelled,
// record closed); runs decided before the switch are on the new primary.
// Claims and renewals need both replicas' acknowledgement, so that none the
// old primary accepted during the switch can count — and so, after the
// switch, nothing starts until Sentinel has made the old primary a replica
// of the new one: the price of that safety.
func TestSentinelFailoverKeepsRunsOnce(t *testing.T) {
	testkit.Long(t) // a real failover and its 10 s of re-replication
	t.Parallel()
	sn := redistest.StartSentinel(t, 2, 3, nil)
	f := newFleet(t)
	table := []scheduler.Job{
		{Name: "tick", Schedule: "* * * * * *", StartingDeadline: 2 * time.Second, Handler: f.ledger.Job(nil)},
		{Name: "long", Schedule: "*/3 * * * * *", Lease: 1500 * time.Millisecond, Handler: f.ledger.Job(blockJob(2500 * time.Millisecond))},
	}
	for i := range 3 {
		c := sn.Client(t, &redis.FailoverOptions{ReadTimeout: 2 * time.Second})
		s, err := scheduler.New(schedtest.RedisStore(t, c, scheduler.WithMinReplicasAck(2, 500*time.Millisecond)), table, replicaOpts(i)...)
		if err != nil {
			t.Fatal(err)
		}
		f.run(s)
	}
	ctl := schedtest.RedisStore(t, sn.Client(t, nil)).Control()
	start := time.Now()
	time.Sleep(3500 * time.Millisecond)
	before := time.Now()
	old := sn.Primary(t)
	primary := sn.Failover(t)
	after := time.Now()
	t.Logf("failover %s -> %s took %s", old.Addr(), primary.Addr(), after.Sub(before).Round(time.Millisecond))
	sn.WaitDemoted(t, old)
	rejoined := time.Now()
	t.Logf("old primary replicates the new one %s later", rejoined.Sub(after).Round(time.Millisecond))
	time.Sleep(5 * time.Second)
	f.stop()
	end := time.Now()

	noDuplicates(t, f.ledger, "tick", "long")
	// Outside the switch, every run starts exactly once; during it, runs may
	// be missed (fail closed) but never doubled. A claim that needs both
	// replicas' acknowledgement may be taken back and retried until its
	// starting deadline (2s), so a run counts as due only if that deadline
	// passed before the replicas stopped; and once the old primary rejoins,
	// the first claims can still be waiting on its resync.
	const deadline = 2 * time.Second
	startedOnce(t, f.ledger, "tick", instants(start.Add(time.Second), before.Add(-deadline)))
	startedOnce(t, f.ledger, "tick", instants(rejoined.Add(deadline), end.Add(-deadline)))
	hist := map[string]scheduler.Run{}
	for _, r := range mustHistory(t, ctl, "tick") {
		hist[r.ID] = r
	}
	for _, e := range f.ledger.Entries() {
		if e.End.IsZero() {
			t.Errorf("run %s never ended", e.RunID)
		}
		// Decided before the switch: its record is on the new primary.
		if r, ok := hist[e.RunID]; e.Job == "tick" && e.End.Before(before) && (!ok || r.Outcome != scheduler.Succeeded) {
			t.Errorf("run %s, ended before the failover: history has %+v", e.RunID, r)
		}
	}
	for _, r := range mustHistory(t, ctl, "long") {
		switch {
		case r.Outcome == scheduler.Succeeded || r.Decision == scheduler.SkippedOverlap || r.Decision == scheduler.Missed:
		case r.Outcome == scheduler.Missed && strings.HasPrefix(r.Error, "never started"):
			// Its claim was answered after its lease, during the switch,
			// and the lease could not be taken back: it never ran.
			t.Logf("%s never started: %s", r.ID, r.Error)
		case r.Outcome == scheduler.LeaseLost && r.Error != "":
			t.Logf("%s lost its lease cleanly across the failover: %s", r.ID, r.Error)
		case r.Outcome == scheduler.Interrupted && r.StartedAt.After(end.Add(-3*time.Second)):
			// Cut short by this test's own shutdown: a 2.5s run, a 2s grace.
		default:
			t.Errorf("long run %s: outcome %s %q", r.ID, r.Outcome, r.Error)
		}
	}
}

func mustHistory(t *testing.T, ctl *scheduler.Control, job string) []scheduler.Run {
	t.Helper()
	h, err := ctl.History(t.Context(), job, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// waitSynced waits until replica follows its primary.
func waitSynced(t *testing.T, replica *redistest.Server) {
	t.Helper()
	c := replica.Client(t, nil)
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := c.Info(t.Context(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not in sync: %v %s", replica.Addr(), err, info)
		}
		time.Sleep(20 * time.Millisecond) // polling a process we do not control
	}
}

// With min_replicas_ack, a primary whose replica stops acknowledging starts
// nothing: claims are taken back, their runs missed after the starting
// deadline, and the run in flight loses its lease (its renewals no longer
// count). When the replica is back, runs start again.
func TestMinReplicasAckRefusesWhenReplicasStop(t *testing.T) {
	t.Parallel()
	primary := redistest.Start(t, "--repl-diskless-sync-delay", "0")
	replica := redistest.Start(t, "--replicaof", "127.0.0.1", fmt.Sprint(primary.Port))
	waitSynced(t, replica)
	f := newFleet(t)
	table := []scheduler.Job{
		{Name: "tick", Schedule: "* * * * * *", StartingDeadline: time.Second, Handler: f.ledger.Job(nil)},
		{Name: "long", Schedule: "@yearly", Lease: 1500 * time.Millisecond, Handler: f.ledger.Job(blockJob(time.Minute))},
	}
	for i := range 2 {
		s, err := scheduler.New(schedtest.RedisStore(t, primary.Client(t, nil), scheduler.WithMinReplicasAck(1, 300*time.Millisecond)), table, replicaOpts(i)...)
		if err != nil {
			t.Fatal(err)
		}
		f.run(s)
	}
	ctl := schedtest.RedisStore(t, primary.Client(t, nil)).Control()
	start := time.Now()
	long, err := ctl.Trigger(t.Context(), "long")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if f.ledger.Starts()[long] != 1 {
		t.Fatalf("the manual run %s did not start while the replica acknowledged", long)
	}
	paused := time.Now()
	replica.Pause()
	time.Sleep(4 * time.Second)
	resumed := time.Now()
	replica.Resume()
	time.Sleep(3 * time.Second)
	f.stop()
	end := time.Now()

	// A run due before the resume may still start after it: its claims go
	// on, each taken back, until its starting deadline (1s) and the skew
	// (300ms) pass, and the last one's WAIT (up to 300ms) may see the
	// replica back. Those starts were acknowledged; the window of runs that
	// must not start ends that long before the resume, with some margin.
	lastTaken := resumed.Add(-(time.Second + 300*time.Millisecond + 300*time.Millisecond + 400*time.Millisecond))
	noDuplicates(t, f.ledger, "tick", "long")
	startedOnce(t, f.ledger, "tick", instants(start.Add(time.Second), paused.Add(-time.Second)))
	startedNever(t, f.ledger, "tick", instants(paused.Add(time.Second), lastTaken))
	startedOnce(t, f.ledger, "tick", instants(resumed.Add(1500*time.Millisecond), end.Add(-time.Second)))

	for _, e := range f.ledger.Entries() {
		if e.RunID != long {
			continue
		}
		if !errors.Is(e.Err, lockprovider.ErrLeaseLost) || e.End.Before(paused) || e.End.After(paused.Add(3*time.Second)) {
			t.Errorf("the run in flight ended at +%s with %v; want its lease lost within 3s of the pause", e.End.Sub(paused), e.Err)
		}
	}
	missed := 0
	for _, r := range mustHistory(t, ctl, "tick") {
		if r.ScheduledAt.After(paused.Add(time.Second)) && r.ScheduledAt.Before(lastTaken) {
			// Missed, or skipped: a claim being taken back holds the job's
			// slot until it is, and a run claimed meanwhile finds it busy.
			if r.Outcome != scheduler.Missed && r.Outcome != scheduler.SkippedOverlap {
				t.Errorf("%s, scheduled while the replica was stopped: %s", r.ID, r.Outcome)
			}
			missed++
		}
	}
	if missed == 0 {
		t.Error("no run was recorded missed while the replica was stopped")
	}
}

// Redlock over three independent masters: every run starts exactly once
// with all three up and with one down; with two down, nothing starts and
// the run in flight loses its lease.
func TestRedlockSurvivesOneMasterNotTwo(t *testing.T) {
	testkit.Long(t) // three redis-servers, ~14 s; TestRedlockNeedsAMajority runs by default
	t.Parallel()
	masters := redistest.StartMasters(t, 3, nil)
	f := newFleet(t)
	warns := newWarnLog(t)
	table := []scheduler.Job{
		{Name: "tick", Schedule: "* * * * * *", StartingDeadline: time.Second, Lease: 2 * time.Second, Handler: f.ledger.Job(nil)},
		{Name: "long", Schedule: "@yearly", Lease: 1500 * time.Millisecond, Handler: f.ledger.Job(blockJob(time.Minute))},
	}
	clients := func() []redis.UniversalClient {
		var out []redis.UniversalClient
		for _, m := range masters {
			out = append(out, m.Client(t, &redis.Options{MaxRetries: -1}))
		}
		return out
	}
	// Only "tick" has an established state: "long", run only when
	// triggered, is new to every master (its request times differ from
	// master to master by their clocks).
	for _, c := range clients() {
		establish(t, c, table[:1])
	}
	// The replicas start 30ms before a whole second: the run due then
	// still has 30ms of its starting deadline, less than their first
	// Preload and heartbeat take, so the judgment of the runs due while
	// they start (below) is put to work on every run of the test, not on
	// one in ten.
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(2*time.Second - 30*time.Millisecond).Sub(now))
	for i := range 3 {
		// Only r0 runs "long": uncontended, its claim wins all three
		// masters, and it can keep its lease while any two renew it. (A run
		// that won just two keeps it only while both of those are up.)
		tab := table
		if i > 0 {
			tab = table[:1]
		}
		s, err := scheduler.New(schedtest.RedlockStore(t, clients(), scheduler.WithRedlockTimeout(300*time.Millisecond)), tab, replicaOpts(i, scheduler.WithLogger(warns.logger()))...)
		if err != nil {
			t.Fatal(err)
		}
		f.run(s)
	}
	// The test's own Control waits longer for each master than the
	// replicas do: under -race on a loaded machine, 300ms can pass before
	// a master answers, and the trigger below has no retry.
	ctl := schedtest.RedlockStore(t, clients(), scheduler.WithRedlockTimeout(2*time.Second)).Control()
	start := time.Now()
	long, err := ctl.Trigger(t.Context(), "long")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	oneDown := time.Now()
	masters[0].Kill()
	time.Sleep(3 * time.Second)
	// With one master down, the history (merged from the other two) has
	// each run once. The runs due from start+1s on succeeded, as the
	// ledger has them start once below. The earlier ones were due while the
	// replicas started (their first Preload and heartbeat take a few
	// hundred ms under -race on a loaded machine), and their claims may
	// come late, by design: one whose starting deadline ends first is
	// recorded missed, "not claimed before its starting deadline"
	// (missedStarting); one claimed near the end of its deadline starts
	// late and may still hold the job's slot at the next instant, which is
	// then skipped (overlap). Those may be missed or skipped, but never
	// started: not twice, and not at all when recorded so.
	seen := map[string]int{}
	starts := f.ledger.Starts()
	for _, r := range mustHistory(t, ctl, "tick") {
		seen[r.ID]++
		early := r.ScheduledAt.Before(start.Add(time.Second)) && starts[r.ID] == 0
		switch {
		case r.Outcome == scheduler.Succeeded && r.FencingToken != 0:
		case early && r.Outcome == scheduler.Missed,
			early && r.Outcome == scheduler.SkippedOverlap && starts[id("tick", r.ScheduledAt.Add(-time.Second))] == 1:
			t.Logf("%s, due while the replicas started (at %s): %s, %s", r.ID, start.Format("15:04:05.000"), r.Outcome, r.Error)
		default:
			t.Errorf("history (replicas started at %s): %+v", start.Format("15:04:05.000"), r)
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("history lists %s %d times", id, n)
		}
	}
	twoDown := time.Now()
	masters[1].Kill()
	time.Sleep(3 * time.Second)
	f.stop()

	noDuplicates(t, f.ledger, "tick", "long")
	startedOnce(t, f.ledger, "tick", instants(start.Add(time.Second), twoDown.Add(-time.Second)))
	startedNever(t, f.ledger, "tick", instants(twoDown.Add(time.Second), time.Now()))
	if len(seen) < 3 {
		t.Errorf("history with one master down: %d runs", len(seen))
	}
	for _, e := range f.ledger.Entries() {
		if e.RunID != long {
			continue
		}
		if !errors.Is(e.Err, lockprovider.ErrLeaseLost) || e.End.Before(twoDown) {
			t.Errorf("the run in flight ended at +%s (one master down at +%s, two at +%s) with %v; want its lease lost after the second",
				e.End.Sub(start), oneDown.Sub(start), twoDown.Sub(start), e.Err)
		}
	}
	if f.ledger.Starts()[long] != 1 {
		t.Errorf("manual run %s started %d times", long, f.ledger.Starts()[long])
	}
}

// min_replicas_ack on Redis Cluster: the WAIT goes to the master that ran
// each claim. With one master's replica stopped, the jobs of that master's
// slots start nothing, while the jobs on the other masters go on; a WAIT
// sent to the wrong node would acknowledge them all.
func TestClusterMinReplicasAckPerShard(t *testing.T) {
	testkit.Long(t) // six redis-servers; TestMinReplicasAckRefusesWhenReplicasStop runs by default
	t.Parallel()
	cl := redistest.StartClusterReplicas(t, 3, 1, nil)
	f := newFleet(t)
	var table []scheduler.Job
	for i := range 12 {
		table = append(table, scheduler.Job{Name: fmt.Sprintf("j%d", i), Schedule: "* * * * * *", StartingDeadline: time.Second, Handler: f.ledger.Job(nil)})
	}
	ctx := t.Context()
	probe := cl.Client(t, nil)
	stopped := cl.Masters[0]
	onStopped := map[string]bool{}
	for _, j := range table {
		m, err := probe.MasterForKey(ctx, "solocron:{"+j.Name+"}:meta")
		if err != nil {
			t.Fatal(err)
		}
		onStopped[j.Name] = m.Options().Addr == stopped.Addr()
	}
	if n := len(slices.DeleteFunc(slices.Collect(maps.Values(onStopped)), func(b bool) bool { return !b })); n == 0 || n == len(table) {
		t.Fatalf("jobs on the stopped master: %v; want some, not all", onStopped)
	}
	for i := range 2 {
		s, err := scheduler.New(schedtest.RedisStore(t, cl.Client(t, nil), scheduler.WithMinReplicasAck(1, 300*time.Millisecond)), table, replicaOpts(i)...)
		if err != nil {
			t.Fatal(err)
		}
		f.run(s)
	}
	start := time.Now()
	time.Sleep(2500 * time.Millisecond)
	paused := time.Now()
	cl.Replicas[stopped][0].Pause()
	time.Sleep(4 * time.Second)
	resumed := time.Now()
	cl.Replicas[stopped][0].Resume()
	time.Sleep(3 * time.Second)
	f.stop()
	end := time.Now()

	noDuplicates(t, f.ledger)
	for _, j := range table {
		if onStopped[j.Name] {
			startedOnce(t, f.ledger, j.Name, instants(start.Add(time.Second), paused.Add(-time.Second)))
			startedNever(t, f.ledger, j.Name, instants(paused.Add(time.Second), resumed.Add(-1500*time.Millisecond)))
			startedOnce(t, f.ledger, j.Name, instants(resumed.Add(1500*time.Millisecond), end.Add(-time.Second)))
		} else {
			startedOnce(t, f.ledger, j.Name, instants(start.Add(time.Second), end.Add(-time.Second)))
		}
	}
}
