package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// startLog records which replica started which run, and how each ended.
type startLog struct {
	mu     sync.Mutex
	starts map[string][]string // run id -> replicas that started it
	causes map[string]error    // run id -> its context's cause when it stopped
}

// job blocks the first run until its context ends; every other run ends at
// once.
func (l *startLog) job(replica string) jobs.Job {
	return jobs.Func(func(ctx context.Context) error {
		info, _ := jobs.FromContext(ctx)
		l.mu.Lock()
		l.starts[info.RunID] = append(l.starts[info.RunID], replica)
		first := len(l.starts) == 1
		l.mu.Unlock()
		if !first {
			return nil
		}
		<-ctx.Done()
		l.mu.Lock()
		l.causes[info.RunID] = context.Cause(ctx)
		l.mu.Unlock()
		return ctx.Err()
	})
}

func (l *startLog) startsOf(id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.starts[id]...)
}

// Cancel and retry across three schedulers on one real redis-server: the
// cancel is asked through a Control that is none of them; the replica
// running the run learns it at its next renewal, cancels the job's context
// (cause ErrCancelled) and closes the record as cancelled, saying who
// asked. The run started once and never starts again. Retry runs it again
// as a manual run linked both ways; a running run cannot be retried, an
// ended one cannot be cancelled.
func TestCancelAndRetryAcrossReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctl := schedtest.RedisStore(t, srv.Client(t, nil)).Control()
	log := &startLog{starts: map[string][]string{}, causes: map[string]error{}}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("r%d", i)
		tab := []scheduler.Job{{Name: "long", Schedule: "@every 1h", Lease: 3 * time.Second, Handler: log.job(id)}}
		s, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil)), tab, scheduler.WithReplicaID(id),
			scheduler.WithLogger(quiet), scheduler.WithSyncInterval(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = s.Run(ctx) })
	}

	id, err := ctl.Trigger(t.Context(), "long")
	if err != nil {
		t.Fatal(err)
	}
	var run *scheduler.Run
	testkit.WaitFor(t, 20*time.Second, "the run to start", func() bool {
		run, _ = ctl.Get(t.Context(), id)
		return run != nil && run.Outcome == scheduler.Running && len(log.startsOf(id)) == 1
	})
	holder := log.startsOf(id)[0]
	if run.Replica != holder {
		t.Fatalf("the record says %s runs it, the job ran on %s", run.Replica, holder)
	}
	if _, err := ctl.Retry(t.Context(), id, "test"); !errors.Is(err, scheduler.ErrStillRunning) {
		t.Errorf("retry of a running run: %v, want ErrStillRunning", err)
	}

	asked := time.Now()
	if err := ctl.Cancel(t.Context(), id, "console 127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	// A second request changes nothing: the first asker is kept.
	if err := ctl.Cancel(t.Context(), id, "someone else"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the run to end cancelled", func() bool {
		run, _ = ctl.Get(t.Context(), id)
		return run != nil && run.Outcome != scheduler.Running
	})
	// Within a renewal (a third of the 3s lease), and some slack.
	if took := time.Since(asked); took > 2500*time.Millisecond {
		t.Errorf("the cancel took %s to reach the holder", took)
	}
	if run.Outcome != scheduler.Cancelled || run.Replica != holder || run.CancelledBy != "console 127.0.0.1" {
		t.Errorf("cancelled run's record: outcome %s on %s, cancelled by %q; want cancelled on %s by console 127.0.0.1",
			run.Outcome, run.Replica, run.CancelledBy, holder)
	}
	log.mu.Lock()
	cause := log.causes[id]
	log.mu.Unlock()
	if !errors.Is(cause, scheduler.ErrCancelled) {
		t.Errorf("the job's context ended with cause %v, want ErrCancelled", cause)
	}
	hist, err := ctl.History(t.Context(), "long", 10)
	if err != nil || len(hist) != 1 || hist[0].ID != id || hist[0].Outcome != scheduler.Cancelled || hist[0].CancelledBy != "console 127.0.0.1" {
		t.Errorf("history after the cancel: %v %+v", err, hist)
	}
	if err := ctl.Cancel(t.Context(), id, "test"); !errors.Is(err, scheduler.ErrNotRunning) {
		t.Errorf("cancel of an ended run: %v, want ErrNotRunning", err)
	}
	if err := ctl.Cancel(t.Context(), "long@manual-nosuch", "test"); !errors.Is(err, scheduler.ErrNoRun) {
		t.Errorf("cancel of no run: %v, want ErrNoRun", err)
	}

	again, err := ctl.Retry(t.Context(), id, "api 10.0.0.7")
	if err != nil {
		t.Fatal(err)
	}
	var retried *scheduler.Run
	testkit.WaitFor(t, 20*time.Second, "the retry to end", func() bool {
		retried, _ = ctl.Get(t.Context(), again)
		return retried != nil && retried.Outcome == scheduler.Succeeded
	})
	if retried.RetryOf != id || retried.RetriedBy != "api 10.0.0.7" {
		t.Errorf("the retry's record: retry of %q by %q", retried.RetryOf, retried.RetriedBy)
	}
	if old, _ := ctl.Get(t.Context(), id); old == nil || old.RetriedAs != again || old.Outcome != scheduler.Cancelled {
		t.Errorf("the cancelled run's record after the retry: %+v", old)
	}
	// The job's history (the API's run list, scheduler history) links them too.
	hist, err = ctl.History(t.Context(), "long", 10)
	links := map[string][2]string{}
	for _, h := range hist {
		links[h.ID] = [2]string{h.RetryOf, h.RetriedAs}
	}
	if err != nil || links[id] != [2]string{"", again} || links[again] != [2]string{id, ""} {
		t.Errorf("history after the retry: %v; links (retry of, retried as) %v, want %s retried as %s", err, links, id, again)
	}
	// Several heartbeats later, the cancelled run has still started once.
	time.Sleep(500 * time.Millisecond) // five heartbeats in which nothing may start
	if s := log.startsOf(id); len(s) != 1 {
		t.Errorf("the cancelled run started %d times: %v", len(s), s)
	}
	if s := log.startsOf(again); len(s) != 1 {
		t.Errorf("the retry started %d times: %v", len(s), s)
	}
}
