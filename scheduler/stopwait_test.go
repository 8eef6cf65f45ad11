package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// loseAdmission loses the answer of the first admission that started a run
// (the script ran; the connection reset before its answer came), stops the
// replica then, and fails the next failUndo hand-backs before they reach
// Redis, as a store still unreachable while the replica stops would.
type loseAdmission struct {
	stop     func()
	mu       sync.Mutex
	lost     bool
	failUndo int
}

func evalsha(cmd redis.Cmder, hash string) bool {
	args := cmd.Args()
	return cmd.Name() == "evalsha" && len(args) > 1 && args[1] == hash
}

func (*loseAdmission) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *loseAdmission) intercept(cmd redis.Cmder, next func() error) error {
	switch {
	case evalsha(cmd, scheduler.UndoHash):
		h.mu.Lock()
		fail := h.failUndo > 0
		if fail {
			h.failUndo--
		}
		h.mu.Unlock()
		if fail {
			err := errors.New("test: store unreachable")
			cmd.SetErr(err)
			return err
		}
	case evalsha(cmd, scheduler.AdmitHash):
		err := next()
		c, ok := cmd.(*redis.Cmd)
		if err != nil || !ok || !strings.Contains(fmt.Sprint(c.Val()), "started") {
			return err
		}
		h.mu.Lock()
		first := !h.lost
		h.lost = true
		h.mu.Unlock()
		if !first {
			return nil
		}
		h.stop()
		time.Sleep(10 * time.Millisecond) // the shutdown is under way
		err = errors.New("test: connection reset after the script ran")
		cmd.SetErr(err)
		return err
	}
	return next()
}

func (h *loseAdmission) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.intercept(cmd, func() error { return next(ctx, cmd) })
	}
}

func (h *loseAdmission) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if evalsha(cmd, scheduler.UndoHash) || evalsha(cmd, scheduler.AdmitHash) {
				// The script's call decides for the whole pipeline.
				return h.intercept(cmd, func() error { return next(ctx, cmds) })
			}
		}
		return next(ctx, cmds)
	}
}

// A replica that stops while a manual run waits for a slot, the poll that
// admitted the run having lost its answer, and Redis not answering the
// first hand-back: the replica keeps handing the run back through its
// shutdown grace, and another replica runs it once. Asking only once left
// the run admitted, its lease ran out, the cluster recorded it lease_lost,
// and nobody ever ran what someone asked for (the search's seed 9623).
func TestManualRunAdmittedWhileStoppingIsHandedBack(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		rdb := c.client()
		release := make(chan struct{})
		table := []scheduler.Job{{Name: "q", Schedule: "0 30 5 * * *", Concurrency: 1, Overlap: scheduler.OverlapWait,
			MaxWait: time.Minute, Lease: 3 * time.Second, Handler: c.ledger.Job(func(ctx context.Context) error {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil
			})}}
		establish(t, rdb, table)
		s, err := scheduler.New(schedtest.RedisStore(t, rdb), table, scheduler.WithReplicaID("r1"),
			scheduler.WithLogger(quiet), scheduler.WithShutdownGrace(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		hook := &loseAdmission{stop: cancel, failUndo: 2}
		rdb.AddHook(hook)
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		bg := context.Background()
		first, err := c.ctl.Trigger(bg, "q")
		if err != nil {
			t.Fatal(err)
		}
		if e := <-c.ledger.Started(); e.RunID != first {
			t.Fatalf("started %s, want %s", e.RunID, first)
		}
		second, err := c.ctl.Trigger(bg, "q")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // the second request is claimed and queued behind the first
		close(release)              // the first ends; a poll admits the second, its answer lost
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		if !hook.lost {
			t.Fatal("no admission started the second run")
		}
		// Another replica takes the request up.
		c.replica("r2", table)
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) && c.ledger.Starts()[second] == 0 {
			time.Sleep(500 * time.Millisecond)
		}
		var got []string
		for _, e := range c.ledger.Entries() {
			got = append(got, e.RunID+"@"+e.Replica)
		}
		if n := c.ledger.Starts()[second]; n != 1 {
			t.Errorf("manual run %s ran %d times, want once (runs: %v); history %+v", second, n, got, c.history("q"))
		}
	})
}

// A replica stopping while its Redis is down stops at once: its claims
// failed before they went out (no connection could be made), so they granted
// nothing and there is nothing to settle through the shutdown grace. Asking
// again after every lost answer kept a replica 30 s (its grace) in its stop
// whenever Redis was down.
func TestStopDuringAnOutageIsPrompt(t *testing.T) {
	t.Parallel() // real time, little CPU (main_test.go)
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()}) // go-redis' defaults, as a daemon's client
	t.Cleanup(func() { _ = rdb.Close() })
	// Redis dies just before a script call goes out, never while one is on
	// the wire: a claim whose answer was lost may have granted a run, and is
	// asked about through the grace by design (claimFirst's askAgain); a
	// kill at a random moment made this test wait for that now and then.
	kill := &killBeforeScript{kill: srv.Kill}
	rdb.AddHook(kill)
	ledger := testkit.NewLedger()
	table := []scheduler.Job{{Name: "tick", Schedule: "@every 1s", Handler: ledger.Job(nil)}}
	establish(t, rdb, table)
	s, err := scheduler.New(schedtest.RedisStore(t, rdb), table, scheduler.WithLogger(quiet),
		scheduler.WithShutdownGrace(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	select {
	case <-ledger.Started():
	case <-time.After(30 * time.Second):
		t.Fatal("no run started")
	}
	kill.armed.Store(true)
	// Calls of the next instants fail while Redis is down.
	testkit.WaitFor(t, 30*time.Second, "script calls to fail", func() bool { return kill.failed.Load() >= 3 })
	cancel()
	stopping := time.Now()
	select {
	case <-done:
	case <-time.After(45 * time.Second):
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
		t.Fatalf("the replica was still stopping 45 s after it was asked to (shutdown grace 30 s); its goroutines:\n%s", buf.String())
	}
	// Nothing went out since Redis died: nothing to settle, and the stop
	// takes the run's close timeout at most (5 s), not the grace. A stop
	// as a round of misses dialled took the whole grace one run in ten
	// under load (TestStopDuringAMissRoundIsPrompt).
	took := time.Since(stopping)
	t.Logf("stopped in %s", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("stopping took %s with Redis down, though nothing was left to settle (shutdown grace 30 s)", took.Round(time.Millisecond))
	}
}

// killBeforeScript, once armed, kills Redis before the next script call is
// sent while no other script call is on the wire (a claim in flight beside
// the one that kills would lose its answer, and be asked about through the
// grace by design), and counts the script calls that failed from then on.
type killBeforeScript struct {
	kill     func()
	armed    atomic.Bool
	mu       sync.Mutex
	killed   bool
	inflight int // script calls sent and not answered, under mu
	failed   atomic.Int64
}

func (*killBeforeScript) DialHook(next redis.DialHook) redis.DialHook { return next }

// around runs call, a script call (or a pipeline holding one), killing
// Redis first when armed and nothing else is in flight.
func (h *killBeforeScript) around(call func() error) error {
	h.mu.Lock()
	if h.armed.Load() && !h.killed && h.inflight == 0 {
		h.kill()
		h.killed = true
	}
	h.inflight++
	killed := h.killed
	h.mu.Unlock()
	err := call()
	h.mu.Lock()
	h.inflight--
	h.mu.Unlock()
	if killed && err != nil {
		h.failed.Add(1)
	}
	return err
}

func (h *killBeforeScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "evalsha" {
			return next(ctx, cmd)
		}
		return h.around(func() error { return next(ctx, cmd) })
	}
}

func (h *killBeforeScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return c.Name() == "evalsha" }) {
			return next(ctx, cmds)
		}
		return h.around(func() error { return next(ctx, cmds) })
	}
}
