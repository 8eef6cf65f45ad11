package scheduler_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/notify"
	"github.com/solocron/solocron/scheduler"
)

// Two replicas on one real redis-server run two tables at once, as during a
// rolling deploy: in one, job px is in no pool with concurrency 1; in the
// other it sits in pool p (size 1) with concurrency 2. They swap tables by
// reload while runs are in flight, then the job is paused and one replica
// restarts with the other table. Each run id starts once, never more runs
// in flight than the largest limit in force, the pause holds through the
// reload and the restart, the history keeps every run, and every run's
// failed event (those in flight across a reload too) is delivered once.
func TestTableChangesKeepTheJobsState(t *testing.T) {
	srv := redistest.Start(t)
	rcv := newReceiver(t)
	f := newFleet(t)
	body := func(ctx context.Context) error {
		select {
		case <-time.After(1200 * time.Millisecond):
		case <-ctx.Done():
		}
		return errors.New("boom")
	}
	v1 := []scheduler.Job{{Name: "px", Schedule: "@every 1s", Handler: f.ledger.Job(body), Notify: []string{"ops"}}}
	v2 := []scheduler.Job{{Name: "px", Schedule: "@every 1s", Handler: f.ledger.Job(body), Notify: []string{"ops"},
		Concurrency: 2, Pool: "p", PoolSize: 1}}
	tg := rcv.target(notify.Failed)
	replica := func(id string, table []scheduler.Job) (*scheduler.Scheduler, func()) {
		s, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil)), table, scheduler.WithReplicaID(id),
			scheduler.WithLogger(quiet), scheduler.WithSyncInterval(200*time.Millisecond), scheduler.WithNotifications(tg))
		if err != nil {
			t.Fatal(err)
		}
		return s, f.run(s)
	}
	a, _ := replica("a", v1)
	b, stopB := replica("b", v2)
	started := func() int { return len(f.ledger.Starts()) }
	testkit.WaitFor(t, 30*time.Second, "4 runs started under two tables", func() bool { return started() >= 4 })
	// Swapped while runs are in flight.
	if err := a.Reload(v2); err != nil {
		t.Fatal(err)
	}
	if err := b.Reload(v1); err != nil {
		t.Fatal(err)
	}
	n := started()
	testkit.WaitFor(t, 30*time.Second, "4 more runs after the reloads", func() bool { return started() >= n+4 })

	ctl := schedtest.RedisStore(t, srv.Client(t, nil)).Control()
	ctx := context.Background()
	if err := ctl.Pause(ctx, "px"); err != nil {
		t.Fatal(err)
	}
	if err := a.Reload(v1); err != nil {
		t.Fatal(err)
	}
	stopB()
	replica("b", v2)
	time.Sleep(1500 * time.Millisecond) // runs started before the pause end
	paused := started()
	time.Sleep(3 * time.Second)
	if n := started(); n != paused {
		t.Errorf("%d runs started after the job was paused, reloaded and a replica restarted with another table", n-paused)
	}
	if st, err := ctl.Status(ctx, "px", 1); err != nil || !st.Paused {
		t.Errorf("status after the moves: %+v, %v; want paused", st, err)
	}
	testkit.WaitFor(t, 30*time.Second, "a failed event for every run", func() bool { return len(rcv.posts()) >= paused })
	time.Sleep(time.Second) // time for a duplicate
	f.stop()

	for _, d := range f.ledger.Duplicates() {
		t.Errorf("started more than once: %s", d)
	}
	if m := f.ledger.MaxInFlight("px"); m > 2 {
		t.Errorf("%d runs in flight at once; the largest limit in force is 2", m)
	}
	hist, err := ctl.History(ctx, "px", 100)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, r := range hist {
		kept = append(kept, r.ID)
	}
	for id := range f.ledger.Starts() {
		if !slices.Contains(kept, id) {
			t.Errorf("run %s started but is not in the history", id)
		}
	}
	events := rcv.byDelivery()
	for id := range f.ledger.Starts() {
		if n := events[id+":failed"]; n != 1 {
			t.Errorf("run %s: its failed event delivered %d times, want 1", id, n)
		}
	}
}
