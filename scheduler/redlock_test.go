package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// rlCluster is replicas coordinating through three in-process Redlock
// masters, inside a testing/synctest bubble (fake time).
type rlCluster struct {
	*fleet
	masters []*miniredis.Miniredis
}

func newRLCluster(t *testing.T) *rlCluster {
	t.Helper()
	c := &rlCluster{fleet: newFleet(t)}
	for range 3 {
		m, _ := redistest.MiniPipe(t)
		c.masters = append(c.masters, m)
	}
	ctl := schedtest.RedlockStore(t, c.clients()).Control()
	c.ctl = ctl
	return c
}

// clients returns a client per master, as a new replica would have.
func (c *rlCluster) clients() []redis.UniversalClient {
	var out []redis.UniversalClient
	for _, m := range c.masters {
		cl := redistest.PipeClient(c.t, m)
		// No retries. Not -1: NewClient maps -1 to 0, but set after
		// construction the raw -1 makes go-redis skip every pipeline
		// (its attempt loop runs 0..MaxRetries), silently.
		cl.Options().MaxRetries = 0
		out = append(out, cl)
	}
	return out
}

func (c *rlCluster) replicas(n int, table []scheduler.Job, opts ...scheduler.Option) {
	c.t.Helper()
	for i := range n {
		o := append([]scheduler.Option{scheduler.WithReplicaID(fmt.Sprintf("r%d", i)), scheduler.WithLogger(quiet)}, opts...)
		clients := c.clients()
		if !c.fresh {
			for _, cl := range clients {
				establish(c.t, cl, table)
			}
		}
		s, err := scheduler.New(schedtest.RedlockStore(c.t, clients), table, o...)
		if err != nil {
			c.t.Fatal(err)
		}
		c.run(s)
	}
}

// Five replicas firing at the very same instants over three masters: the
// masters' votes sometimes split, the losers take back their minority and
// retry, and every run still starts exactly once, with rising tokens.
func TestRedlockExactlyOnceUnderContention(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newRLCluster(t)
		table := []scheduler.Job{
			{Name: "a", Schedule: "* * * * * *", Handler: c.ledger.Job(nil)},
			{Name: "b", Schedule: "@every 2s", Handler: c.ledger.Job(sleepJob(1500 * time.Millisecond))},
		}
		start := time.Now()
		c.replicas(5, table)
		secs := 12 // 30 with SOLOCRON_FULL=1; 12 s are 12 instants of a, 6 of b, contended by 5
		if testkit.Full() {
			secs = 30
		}
		time.Sleep(time.Duration(secs) * time.Second)
		c.stop()
		if d := c.ledger.Duplicates(); len(d) > 0 {
			t.Errorf("runs started more than once: %v", d)
		}
		for at := start.Add(time.Second); at.Before(start.Add(time.Duration(secs-1) * time.Second)); at = at.Add(time.Second) {
			if n := c.ledger.Starts()[id("a", at)]; n != 1 {
				t.Errorf("%s started %d times", id("a", at), n)
			}
		}
		for _, job := range []string{"a", "b"} {
			var last int64
			for _, e := range c.ledger.Runs(job) {
				if e.Token <= last {
					t.Errorf("%s: token %d after %d", e.RunID, e.Token, last)
				}
				last = e.Token
			}
			if c.ledger.MaxInFlight(job) > 1 {
				t.Errorf("%s: %d runs at once", job, c.ledger.MaxInFlight(job))
			}
		}
		seen := map[string]bool{}
		for _, r := range c.history("a") {
			if seen[r.ID] {
				t.Errorf("merged history lists %s twice", r.ID)
			}
			seen[r.ID] = true
		}
		if len(seen) < secs-5 {
			t.Errorf("merged history has %d runs of a", len(seen))
		}
	})
}

// plant writes, on one master, a record of run id held by an intruder, as a
// claim this replica set never saw would have left.
func plant(t *testing.T, m *miniredis.Miniredis, job string, at time.Time) {
	t.Helper()
	base := "solocron:{" + job + "}:"
	suffix := at.UTC().Format(time.RFC3339)
	m.HSet(base+"run:"+suffix, "id", job+"@"+suffix, "job", job, "kind", "s", "owner", "intruder", "replica", "intruder",
		"decision", "started", "outcome", "running", "ret", "60000", "hl", "100", "started", "1", "fence", "1")
	if _, err := m.ZAdd(base+"slots", float64(at.Add(time.Hour).UnixMilli()), job+"@"+suffix); err != nil {
		t.Fatal(err)
	}
}

// A run one master believes someone else holds still starts once, on the
// other two; a run two masters believe held does not start at all.
func TestRedlockMajorityDecides(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newRLCluster(t)
		table := []scheduler.Job{
			{Name: "one", Schedule: "@every 10s", Handler: c.ledger.Job(nil)},
			{Name: "two", Schedule: "@every 10s", Handler: c.ledger.Job(nil)},
		}
		at := time.Now().Truncate(10 * time.Second).Add(10 * time.Second)
		plant(t, c.masters[0], "one", at)
		plant(t, c.masters[0], "two", at)
		plant(t, c.masters[1], "two", at)
		c.replicas(3, table)
		time.Sleep(15 * time.Second)
		c.stop()
		if n := c.ledger.Starts()[id("one", at)]; n != 1 {
			t.Errorf("%s, held by an intruder on one master of three: started %d times, want once", id("one", at), n)
		}
		if n := c.ledger.Starts()[id("two", at)]; n != 0 {
			t.Errorf("%s, held by an intruder on two masters of three: started %d times, want never", id("two", at), n)
		}
		if d := c.ledger.Duplicates(); len(d) > 0 {
			t.Errorf("duplicates: %v", d)
		}
	})
}

// One master gone: runs go on. Two gone: nothing starts, and the controls
// say so instead of acting on a minority.
func TestRedlockNeedsAMajority(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newRLCluster(t)
		table := []scheduler.Job{{Name: "a", Schedule: "* * * * * *", StartingDeadline: time.Second, Handler: c.ledger.Job(nil)}}
		c.replicas(3, table)
		time.Sleep(3500 * time.Millisecond)
		c.masters[2].SetError("LOADING injected: master down")
		oneDown := time.Now()
		time.Sleep(4 * time.Second)
		c.masters[1].SetError("LOADING injected: master down")
		twoDown := time.Now()
		time.Sleep(4 * time.Second)
		if err := c.ctl.Pause(context.Background(), "a"); err == nil || !strings.Contains(err.Error(), "1 of 3 masters") {
			t.Errorf("Pause with one master of three: %v", err)
		}
		c.stop()
		starts := c.ledger.Starts()
		for at := oneDown.Truncate(time.Second).Add(time.Second); at.Before(twoDown); at = at.Add(time.Second) {
			if starts[id("a", at)] != 1 {
				t.Errorf("one master down: %s started %d times", id("a", at), starts[id("a", at)])
			}
		}
		for at := twoDown.Truncate(time.Second).Add(time.Second); at.Before(time.Now()); at = at.Add(time.Second) {
			if starts[id("a", at)] != 0 {
				t.Errorf("two masters down: %s started", id("a", at))
			}
		}
	})
}

// overlap: wait across masters: a manual run asked for while the job runs
// waits, is admitted once the slot frees on a quorum, and runs once.
func TestRedlockQueuedRunIsAdmittedOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newRLCluster(t)
		table := []scheduler.Job{{Name: "long", Schedule: "@every 10s", Handler: c.ledger.Job(sleepJob(4 * time.Second))}}
		c.replicas(3, table)
		time.Sleep(time.Until(time.Now().Truncate(10 * time.Second).Add(11 * time.Second)))
		manual, err := c.ctl.Trigger(context.Background(), "long")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(8 * time.Second)
		c.stop()
		if n := c.ledger.Starts()[manual]; n != 1 {
			t.Errorf("manual run started %d times", n)
			rec, err := c.ctl.Get(context.Background(), manual)
			t.Logf("its record: %+v (%v)", rec, err)
			h, _ := c.ctl.History(context.Background(), "long", 20)
			for _, r := range h {
				t.Logf("history: %s %s %s %q", r.ID, r.Outcome, r.Replica, r.Error)
			}
			for i, m := range c.masters {
				t.Logf("master %d keys: %v", i, m.Keys())
			}
		}
		if n := c.ledger.MaxInFlight("long"); n != 1 {
			t.Errorf("%d runs of long at once", n)
		}
		if d := c.ledger.Duplicates(); len(d) > 0 {
			t.Errorf("duplicates: %v", d)
		}
	})
}

// A master that loses its data is noticed per master; runs go on once, and
// fencing tokens keep rising.
func TestRedlockMasterLosesData(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newRLCluster(t)
		table := []scheduler.Job{{Name: "a", Schedule: "* * * * * *", Handler: c.ledger.Job(nil)}}
		c.replicas(3, table)
		time.Sleep(4 * time.Second)
		c.masters[0].FlushAll()
		time.Sleep(4 * time.Second)
		c.masters[1].FlushAll()
		time.Sleep(4 * time.Second)
		c.stop()
		if d := c.ledger.Duplicates(); len(d) > 0 {
			t.Errorf("duplicates: %v", d)
		}
		var last int64
		for _, e := range c.ledger.Runs("a") {
			if e.Token <= last {
				t.Errorf("%s: token %d after %d", e.RunID, e.Token, last)
			}
			last = e.Token
		}
		if n := len(c.ledger.Runs("a")); n < 9 {
			t.Errorf("%d runs in 12s", n)
		}
	})
}

func TestRedlockRefusesWhatItCannotDo(t *testing.T) {
	_, c := redistest.Mini(t)
	three := []redis.UniversalClient{c, c, c}
	job := scheduler.Job{Name: "a", Schedule: "@hourly", Handler: testkit.NewLedger().Job(nil)}
	if _, err := scheduler.NewRedlockStore(three[:2]); err == nil {
		t.Error("two masters accepted")
	}
	if _, err := scheduler.NewRedlockStore(three, scheduler.WithMinReplicasAck(1, 0)); err == nil {
		t.Error("WithMinReplicasAck accepted")
	}
	wide := job
	wide.Concurrency = 2
	if _, err := scheduler.New(schedtest.RedlockStore(t, three), []scheduler.Job{wide}); err == nil || !strings.Contains(err.Error(), "mutexes only") {
		t.Errorf("concurrency 2: %v", err)
	}
	s, err := scheduler.New(schedtest.RedlockStore(t, three), []scheduler.Job{job})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload([]scheduler.Job{wide}); err == nil {
		t.Error("Reload accepted concurrency 2")
	}
	// One rule, the config package's too: each problem a *FieldError
	// naming the job's index and Go field, which config maps to YAML.
	wide.Name = "w"
	pooled := job
	pooled.Name, pooled.Pool, pooled.PoolSize = "p", "exports", 2
	err = s.Reload([]scheduler.Job{job, wide, pooled})
	var got []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			var fe *scheduler.FieldError
			if !errors.As(e, &fe) {
				t.Fatalf("%T %v, want a *FieldError", e, e)
			}
			got = append(got, fe.Error())
		}
	}
	want := []string{
		"jobs[1].Concurrency: must be 1 with a Redlock store (got 2): Redlock coordinates mutexes only",
		`jobs[2].Pool: a Redlock store cannot hold pool "exports": each master would count its slots apart`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("Reload: %v, want %q", err, want)
	}
	if e := scheduler.ValidateRedlockTable([]scheduler.Job{job, wide, pooled}); e == nil || err == nil || e.Error() != err.Error() {
		t.Errorf("ValidateRedlockTable: %v, want what Reload says", e)
	}
	if _, err := scheduler.NewRedisStore(c, scheduler.WithRedlockTimeout(time.Second)); err == nil {
		t.Error("NewRedisStore accepted WithRedlockTimeout")
	}
}

// slowGrants holds every call that match picks (every claim call if nil)
// for d before it reaches the master, while on: each master grants it d
// after it was sent.
type slowGrants struct {
	on    *atomic.Bool
	d     time.Duration
	match func(redis.Cmder) bool
}

func (h slowGrants) is(cmd redis.Cmder) bool {
	if h.match != nil {
		return h.match(cmd)
	}
	return isClaim(cmd)
}

func (h slowGrants) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h slowGrants) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.on.Load() && h.is(cmd) {
			time.Sleep(h.d)
		}
		return next(ctx, cmd)
	}
}
func (h slowGrants) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.on.Load() && slices.ContainsFunc(cmds, h.is) {
			time.Sleep(h.d)
		}
		return next(ctx, cmds)
	}
}

// heldBy lists, per master, the runs of job holding a slot there.
func (c *rlCluster) heldBy(t *testing.T, job string) (n int, who []string) {
	t.Helper()
	key := "solocron:{" + job + "}:slots"
	for i, m := range c.masters {
		if !m.Exists(key) {
			continue
		}
		ids, err := m.ZMembers(key)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) > 0 {
			n++
			who = append(who, fmt.Sprintf("master %d: %v", i, ids))
		}
	}
	return n, who
}

// The expired path: a quorum of masters (here all three) that grants a
// claim only after the lease's validity (lease − the time the claim took −
// drift) has run out is no lease. The run must not start, and what the
// masters granted must be taken back at once, not left to hold the job's
// slot for a whole lease. Every master grants the claims 2.99 s after they
// are sent, with a 3 s lease, until an instant's starting deadline has
// passed: no run starts, no master holds one between claims, and the
// instant is recorded missed. Then the claims are prompt again and the next run starts
// and holds the slot on the masters — the key the check reads is the one a
// holder is in.
func TestRedlockQuorumPastValidityIsNotAcquired(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newRLCluster(t)
		const lease, late = 3 * time.Second, 2990 * time.Millisecond
		var slow atomic.Bool
		slow.Store(true)
		table := []scheduler.Job{{Name: "x", Schedule: "@every 20s", Lease: lease, StartingDeadline: 8 * time.Second,
			Handler: c.ledger.Job(sleepJob(2 * time.Second))}}
		clients := c.clients()
		for _, cl := range clients {
			establish(t, cl, table)
			cl.(*redis.Client).AddHook(slowGrants{on: &slow, d: late})
		}
		s, err := scheduler.New(schedtest.RedlockStore(t, clients, scheduler.WithRedlockTimeout(10*time.Second)), table,
			scheduler.WithReplicaID("r0"), scheduler.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		// The instant checked: the first after the replica's start (an
		// instant at the very start, if any, is claimed late too).
		at := time.Now().Truncate(20 * time.Second).Add(20 * time.Second)
		c.run(s)
		held := func() (int, []string) { return c.heldBy(t, "x") }
		// Every 100 ms until well past the starting deadline: a claim is
		// either still on its way to the masters or decided and taken back.
		reported := false
		for time.Now().Before(at.Add(12 * time.Second)) {
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			if n, who := held(); n > 0 && !reported {
				t.Errorf("at %s: the masters hold a claim granted past its validity: %v", time.Now().UTC().Format("15:04:05.0"), who)
				reported = true
			}
		}
		for _, e := range c.ledger.Entries() {
			t.Errorf("%s, granted by every master only past its lease's validity, started (token %d)", e.RunID, e.Token)
		}
		rec, err := c.ctl.Get(context.Background(), id("x", at))
		if err != nil || rec == nil || rec.Decision != scheduler.Missed {
			t.Errorf("%s: record %+v (%v), want decided missed", id("x", at), rec, err)
		}

		// Prompt claims: the next run starts, and holds the slot on every
		// master while it runs.
		slow.Store(false)
		next := at.Add(20 * time.Second)
		time.Sleep(time.Until(next.Add(time.Second)))
		synctest.Wait()
		if n := c.ledger.Starts()[id("x", next)]; n != 1 {
			t.Errorf("%s, claimed promptly, started %d times", id("x", next), n)
		}
		if n, who := held(); n != len(c.masters) {
			t.Errorf("%s runs; %d masters hold it in the key checked above (%v)", id("x", next), n, who)
		}
		c.stop()
	})
}

// The same for an admission (overlap: wait): a queued run that a quorum of
// masters admits only past its lease's validity is not started, and is put
// back in the queue on every master, not left holding the slot. The first
// run holds the job's slot for 11 s; the next queues (max_wait 6 s), and every
// admission poll reaches the masters 1.99 s after it is sent, lease 2 s:
// once the first has ended the masters admit it, always too late. It never
// starts, no master holds it in the slot between polls, and once its wait is
// over it is recorded as not started (skipped_overlap: no slot within
// max_wait).
func TestRedlockAdmissionPastValidityIsNotAcquired(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newRLCluster(t)
		// A poll arriving more than the waiter's TTL (3 s) after the last
		// would drop the waiter: 2 s leases, polls 1.99 s late.
		const lease, late = 2 * time.Second, 1990 * time.Millisecond
		var slow atomic.Bool
		slow.Store(true)
		table := []scheduler.Job{{Name: "w", Schedule: "@every 10s", Lease: lease, Overlap: scheduler.OverlapWait,
			MaxWait: 6 * time.Second, Handler: c.ledger.Job(sleepJob(11 * time.Second))}}
		clients := c.clients()
		for _, cl := range clients {
			establish(t, cl, table)
			// admit.lua with one run: EVALSHA sha 1 key + 7 + 3 args (a
			// claim of one run has as many).
			admit := func(cmd redis.Cmder) bool { return scriptWithArgs(3+1+7+3)(cmd) && !isClaim(cmd) }
			cl.(*redis.Client).AddHook(slowGrants{on: &slow, d: late, match: admit})
		}
		s, err := scheduler.New(schedtest.RedlockStore(t, clients, scheduler.WithRedlockTimeout(10*time.Second)), table,
			scheduler.WithReplicaID("r0"), scheduler.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		// The first instant: the replica's start, or the next on the grid.
		first := time.Now().Truncate(10 * time.Second)
		if first.Before(time.Now()) {
			first = first.Add(10 * time.Second)
		}
		queued := first.Add(10 * time.Second)
		c.run(s)
		time.Sleep(time.Until(first.Add(time.Second)))
		synctest.Wait()
		if n, who := c.heldBy(t, "w"); n != len(c.masters) || c.ledger.Starts()[id("w", first)] != 1 {
			t.Fatalf("%s should run and hold the slot on every master: %d started, held on %d (%v)", id("w", first),
				c.ledger.Starts()[id("w", first)], n, who)
		}
		// From when the first run ends until past the queued run's wait and
		// a lease more, before the next instant's claim.
		time.Sleep(time.Until(first.Add(11*time.Second + 100*time.Millisecond)))
		reported := false
		for time.Now().Before(queued.Add(6*time.Second + lease)) {
			synctest.Wait()
			if n, who := c.heldBy(t, "w"); n > 0 && !reported {
				t.Errorf("at %s: the masters hold an admission granted past its validity: %v", time.Now().UTC().Format("15:04:05.0"), who)
				reported = true
			}
			time.Sleep(100 * time.Millisecond)
		}
		if n := c.ledger.Starts()[id("w", queued)]; n != 0 {
			t.Errorf("%s, admitted by every master only past its lease's validity, started %d times", id("w", queued), n)
		}
		rec, err := c.ctl.Get(context.Background(), id("w", queued))
		if err != nil || rec == nil || rec.Decision == scheduler.Started || rec.FinishedAt.IsZero() {
			t.Errorf("%s: record %+v (%v), want decided not started (its wait over)", id("w", queued), rec, err)
		}
		c.stop()
	})
}
