package scheduler_test

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// trips counts a client's round trips and commands.
type trips struct{ calls, cmds atomic.Int64 }

func (c *trips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.calls.Add(1)
		c.cmds.Add(1)
		return next(ctx, cmd)
	}
}
func (c *trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.calls.Add(1)
		c.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// statusTable has a job in each state: running (blocked), paused, with a
// history, never seen.
func statusTable() []scheduler.Job {
	ok := jobs.Func(func(context.Context) error { return nil })
	return []scheduler.Job{
		{Name: "busy", Schedule: "@every 1s", Handler: jobs.Func(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })},
		{Name: "done", Schedule: "@every 1s", Handler: ok},
		{Name: "fails", Schedule: "@every 1s", Handler: jobs.Func(func(context.Context) error { return errors.New("boom") })},
		{Name: "later", Schedule: "@yearly", Handler: ok},
	}
}

var statusJobs = []string{"busy", "done", "fails", "later", "unknown"}

// checkStatuses: Statuses answers what Status answers, job by job.
func checkStatuses(t *testing.T, ctl *scheduler.Control) {
	t.Helper()
	ctx := context.Background()
	if err := ctl.Pause(ctx, "later"); err != nil {
		t.Fatal(err)
	}
	// The replica goes on running jobs every second: compare reads made
	// close together, and try again if a run ended in between.
	var got, want []*scheduler.Status
	for range 5 {
		var err error
		if got, err = ctl.Statuses(ctx, statusJobs, 3); err != nil {
			t.Fatal(err)
		}
		want = nil
		for _, j := range statusJobs {
			st, err := ctl.Status(ctx, j, 3)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, st)
		}
		if reflect.DeepEqual(got, want) {
			break
		}
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("Statuses[%d] (%s) =\n%+v\nStatus =\n%+v", i, statusJobs[i], got[i], want[i])
		}
	}
	if len(got[0].Running) == 0 || len(got[1].History) == 0 || got[2].History[0].Error == "" || !got[3].Paused {
		t.Errorf("the fixture did not reach the states tested: %+v %+v %+v %+v", got[0], got[1], got[2], got[3])
	}
	if _, err := ctl.Statuses(ctx, make([]string, scheduler.MaxStatuses+1), 1); err == nil {
		t.Error("Statuses read more than MaxStatuses jobs")
	}
}

// On one server, Statuses is one command, one round trip, however many jobs.
func TestStatusesOneRoundTrip(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		_, c := redistest.MiniPipe(t)
		s, err := scheduler.New(schedtest.RedisStore(t, c), statusTable(), scheduler.WithReplicaID("r1"), scheduler.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		time.Sleep(3500 * time.Millisecond)

		checkStatuses(t, s.Control())
		var n trips
		c.AddHook(&n)
		ctl := schedtest.RedisStore(t, c).Control()
		many := make([]string, scheduler.MaxStatuses)
		for i := range many {
			many[i] = statusJobs[i%len(statusJobs)]
		}
		if _, err := ctl.Statuses(context.Background(), many, 1); err != nil {
			t.Fatal(err)
		}
		// The script is loaded already; a first call after a flush may add
		// a SCRIPT LOAD and a retry.
		if calls, cmds := n.calls.Load(), n.cmds.Load(); calls != 1 || cmds != 1 {
			t.Errorf("Statuses of %d jobs: %d round trips, %d commands; want 1 and 1", len(many), calls, cmds)
		}
	})
}

// On Redis Cluster, one script call per job (keys of different jobs live on
// different nodes), pipelined; in redlock mode the masters' answers merge as
// Status's do.
func TestStatusesClusterAndRedlock(t *testing.T) {
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		cl := redistest.StartCluster(t, 3, nil)
		c := cl.Client(t, nil)
		s, err := scheduler.New(schedtest.RedisStore(t, c), statusTable(), scheduler.WithReplicaID("r1"), scheduler.WithLogger(quiet),
			scheduler.WithShutdownGrace(time.Second)) // busy blocks until cancelled: not the default 30 s at cleanup
		if err != nil {
			t.Fatal(err)
		}
		runUntilBusy(t, s)
		checkStatuses(t, s.Control())
	})
	t.Run("redlock", func(t *testing.T) {
		t.Parallel()
		var clients []redis.UniversalClient
		for range 3 {
			_, c := redistest.Mini(t)
			clients = append(clients, c)
		}
		s, err := scheduler.New(schedtest.RedlockStore(t, clients), statusTable(), scheduler.WithReplicaID("r1"), scheduler.WithLogger(quiet),
			scheduler.WithShutdownGrace(time.Second)) // as above
		if err != nil {
			t.Fatal(err)
		}
		runUntilBusy(t, s)
		checkStatuses(t, s.Control())
	})
}

// runUntilBusy runs s in the background until the test ends, and returns
// once statusTable's "busy" job is running and "done" and "fails" have
// ended a run each: a fresh store runs no instant under its floor (~2.5 s),
// and a loaded machine takes longer still, so a fixed wait is not enough.
func runUntilBusy(t *testing.T, s *scheduler.Scheduler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := s.Control().Status(ctx, "busy", 1)
		if err == nil && len(st.Running) > 0 {
			ended := 0
			for _, j := range []string{"done", "fails"} {
				if h, err := s.Control().History(ctx, j, 1); err == nil && len(h) > 0 {
					ended++
				}
			}
			if ended == 2 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("busy never ran within 30s: %+v, %v", st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
