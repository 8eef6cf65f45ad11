package scheduler_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// snapshot is every key of a store with its TTL, as a replica of it holds
// them at one moment.
type snapshot map[string]struct {
	dump string
	ttl  time.Duration
}

func takeSnapshot(t *testing.T, rdb *redis.Client) snapshot {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	s := snapshot{}
	for _, k := range keys {
		d, err := rdb.Dump(ctx, k).Result()
		if err != nil {
			continue // expired meanwhile
		}
		ttl, _ := rdb.PTTL(ctx, k).Result()
		s[k] = struct {
			dump string
			ttl  time.Duration
		}{d, max(ttl, 0)}
	}
	return s
}

// failOverTo replaces the store's data with s: a failover to a replica that
// missed every write made since s was taken.
func failOverTo(t *testing.T, rdb *redis.Client, s snapshot) {
	t.Helper()
	ctx := context.Background()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for k, v := range s {
		if err := rdb.RestoreReplace(ctx, k, v.ttl, v.dump).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// A failover to a copy that missed writes keeps the job's epoch: the
// replicas notice it by the fencing token they saw, which the copy's
// counter is below. A manual request the copy still
// holds pending, which ran already, is not run again.
func TestStaleFailoverIsNoticedByFence(t *testing.T) {
	t.Parallel() // real time, little CPU, its own redis-server: it sleeps alongside the other parallel tests
	srv := redistest.Start(t)
	rdb := srv.Client(t, nil)
	f := newFleet(t)
	ctl := schedtest.RedisStore(t, srv.Client(t, nil)).Control()
	f.ctl = ctl
	table := []scheduler.Job{{Name: "stale", Schedule: "@every 1s", Handler: f.ledger.Job(nil)}}
	// The copy is taken while the request is pending, before any replica
	// picked it up.
	manual, err := ctl.Trigger(context.Background(), "stale")
	if err != nil {
		t.Fatal(err)
	}
	snap := takeSnapshot(t, rdb)
	a, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil)), table, scheduler.WithReplicaID("a"), scheduler.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	f.run(a)
	testkit.WaitFor(t, 30*time.Second, "the manual run and two scheduled ones", func() bool {
		return f.ledger.Starts()[manual] == 1 && len(f.ledger.Runs("stale")) >= 3
	})
	failOverTo(t, rdb, snap)
	time.Sleep(6 * time.Second)
	f.stop()
	if d := f.ledger.Duplicates(); len(d) > 0 {
		t.Errorf("runs started again after a failover to a stale copy: %v", d)
	}
	var found bool
	for _, r := range f.history("stale") {
		if r.ID == manual {
			found = true
			if r.Outcome != scheduler.Missed {
				t.Errorf("the stale manual request was recorded %s (%s), want missed", r.Outcome, r.Error)
			}
		}
	}
	if !found {
		t.Errorf("the stale manual request was not decided")
	}
}

// failedRenewals fails every renewal before it reaches Redis: the replica's
// network to Redis is cut for renewals, as under a partition.
type failedRenewals struct{}

func (failedRenewals) DialHook(next redis.DialHook) redis.DialHook { return next }
func (failedRenewals) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isRenewal(cmd) {
			cmd.SetErr(errors.New("i/o timeout (renewal black-holed)"))
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}
func (failedRenewals) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func isRenewal(cmd redis.Cmder) bool {
	if n := cmd.Name(); n != "evalsha" && n != "eval" {
		return false
	}
	args := cmd.Args()
	keys, _ := args[2].(int)
	if keys <= 0 || len(args) != 3+keys+3*keys {
		return false
	}
	_, lease := args[len(args)-1].(int64)
	return lease
}

// A command that ignores SIGTERM is killed (kill_grace later) before Redis
// can give its slot away when its lease is lost: the lease is declared lost
// kill_grace plus a margin before it runs out.
func TestLostLeaseKillsTheProcessGroupBeforeExpiry(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	srv := redistest.Start(t)
	rdb := srv.Client(t, nil)
	marks := filepath.Join(t.TempDir(), "marks")
	table := []scheduler.Job{{Name: "stubborn", Schedule: "@every 1h", Lease: 3 * time.Second,
		Handler: &jobs.Command{Args: []string{"sh", "-c", `trap "" TERM; while :; do date +%s%N >> "$0"; sleep 0.05; done`, marks},
			KillGrace: time.Second}}}
	establish(t, rdb, table)
	f := newFleet(t)
	ctl := schedtest.RedisStore(t, rdb).Control()
	f.ctl = ctl
	c := srv.Client(t, nil)
	c.AddHook(failedRenewals{})
	s, err := scheduler.New(schedtest.RedisStore(t, c), table, scheduler.WithReplicaID("a"), scheduler.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	f.run(s)
	if _, err := ctl.Trigger(context.Background(), "stubborn"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the run's end", func() bool { return len(f.history("stubborn")) > 0 })
	f.stop()
	run := f.history("stubborn")[0]
	if run.Outcome != scheduler.LeaseLost || run.StartedAt.IsZero() {
		t.Fatalf("run %+v, want lease_lost", run)
	}
	data, err := os.ReadFile(marks)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(data))
	if len(lines) == 0 {
		t.Fatal("the job never ran")
	}
	ns, _ := strconv.ParseInt(lines[len(lines)-1], 10, 64)
	last := time.Unix(0, ns)
	// Redis gives the slot away at the claim's time + lease at the latest.
	expiry := run.StartedAt.Add(3 * time.Second)
	if !last.Before(expiry) {
		t.Errorf("the job still ran %s after Redis could give its slot away", last.Sub(expiry))
	}
}
