//go:build linux

package jobs

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A supervised program is stopped by its supervisor on its own when the
// time WithStopBy gives comes — SIGTERM the kill grace before it, SIGKILL at
// it — though nothing cancels the run's context: the process running the
// scheduler may be frozen (SIGSTOP) while its lease runs out, and no process
// of the job may outlive the lease. Before, only that process' own watchdog
// stopped the job, and a frozen replica's job ran on past its lease.
func TestSupervisorStopsTheProgramByItsDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.WithValue(t.Context(), superviseKey{}, true)
	tail := NewTail(4096)
	ctx = WithOutput(WithLogger(ctx, slog.New(slog.DiscardHandler)), tail)
	start := time.Now()
	ctx = WithStopBy(ctx, NewStopBy(start.Add(1500*time.Millisecond)))
	c := helper(t, "trap") // reports SIGTERM and keeps running
	c.KillGrace = 500 * time.Millisecond
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	err := waitRun(t, errc, 20*time.Second)
	took := time.Since(start)
	out := tail.String()
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Run: %v, want the program killed", err)
	}
	if !strings.Contains(out, "TERM") || !strings.Contains(out, "lease is about to end") {
		t.Errorf("output %q: want the program told to stop (TERM) and the supervisor saying why", out)
	}
	// SIGKILL at the deadline, SIGTERM half a second before it: never
	// earlier.
	if took < 1400*time.Millisecond {
		t.Errorf("stopped %s after the start, before its deadline (1.5 s)", took.Round(time.Millisecond))
	}
}

// A deadline that keeps moving later (a lease renewed) never stops the
// program; neither does a zero time (a lease known lost keeps its last
// deadline, which here is none).
func TestSupervisorFollowsAMovingDeadline(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"renewed", "zero"} {
		ctx := context.WithValue(t.Context(), superviseKey{}, true)
		tail := NewTail(4096)
		ctx = WithOutput(WithLogger(ctx, slog.New(slog.DiscardHandler)), tail)
		var stopBy *StopBy
		if name == "zero" {
			stopBy = NewStopBy(time.Time{})
		} else {
			stopBy = NewStopBy(time.Now().Add(time.Second))
		}
		ctx = WithStopBy(ctx, stopBy)
		ctx, cancel := context.WithCancel(ctx)
		c := helper(t, "trap")
		c.KillGrace = 300 * time.Millisecond
		errc := make(chan error, 1)
		go func() { errc <- c.Run(ctx) }()
		// Renewed every 300 ms, each time to a second later; past any
		// deadline it was ever given.
		for range 9 {
			time.Sleep(300 * time.Millisecond)
			if name == "zero" {
				stopBy.Set(time.Time{})
			} else {
				stopBy.Set(time.Now().Add(time.Second))
			}
		}
		select {
		case err := <-errc:
			t.Fatalf("%s: the program ended on its own: %v; output %q", name, err, tail.String())
		default:
		}
		cancel()
		_ = waitRun(t, errc, 20*time.Second)
		if out := tail.String(); strings.Contains(out, "lease is about to end") {
			t.Errorf("%s: the supervisor stopped the program: %q", name, out)
		}
	}
}

// A replica that loses the lease itself (alive, cut off from Redis) sends
// SIGTERM at once and SIGKILL a kill grace later; the supervisor, reaching
// its own deadline's SIGTERM meanwhile, does not send a second one (a
// program may take a second SIGTERM as "quit now" and lose its grace). It
// once did, 250 ms after the replica's.
func TestSupervisorDoesNotTermTwice(t *testing.T) {
	t.Parallel()
	ctx := context.WithValue(t.Context(), superviseKey{}, true)
	tail := NewTail(4096)
	ctx = WithOutput(WithLogger(ctx, slog.New(slog.DiscardHandler)), tail)
	stopBy := NewStopBy(time.Time{})
	ctx = WithStopBy(ctx, stopBy)
	ctx, cancel := context.WithCancel(ctx)
	c := helper(t, "trap")
	c.KillGrace = time.Second
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	waitFor(t, 30*time.Second, "the trap to be set", func() bool { return strings.Contains(tail.String(), "ready") })
	// The lease ends 1.5 s from now: the supervisor's SIGTERM would go at
	// 0.5 s, its SIGKILL at 1.5 s. The replica stops the job now: SIGTERM,
	// and SIGKILL 1 s later.
	stopBy.Set(time.Now().Add(1500 * time.Millisecond))
	cancel()
	err := waitRun(t, errc, 20*time.Second)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Signal != "killed" {
		t.Errorf("Run: %v, want the program killed", err)
	}
	if out := tail.String(); strings.Count(out, "TERM") != 1 || strings.Contains(out, "lease is about to end") {
		t.Errorf("output %q: want exactly one SIGTERM, the replica's", out)
	}
}
