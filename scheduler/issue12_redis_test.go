package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/testkit"
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
// counter is below (issue 12, defect 3). A manual request the copy still
// holds pending, which ran already, is not run again (defect 13).
func TestStaleFailoverIsNoticedByFence(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t, nil)
	f := newFleet(t)
	ctl, err := scheduler.NewControl(srv.Client(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	f.ctl = ctl
	table := []scheduler.Job{{Name: "stale", Schedule: "@every 1s", Handler: f.ledger.Job(nil)}}
	// The copy is taken while the request is pending, before any replica
	// picked it up.
	manual, err := ctl.Trigger(context.Background(), "stale")
	if err != nil {
		t.Fatal(err)
	}
	snap := takeSnapshot(t, rdb)
	a, err := scheduler.New(srv.Client(t, nil), table, scheduler.WithReplicaID("a"), scheduler.WithLogger(quiet))
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
